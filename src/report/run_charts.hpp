// The pictures of a saved run, each an inline SVG element (svg.hpp) whose
// colours come from the report page's stylesheet (html_report.cpp). Every
// statistic drawn is computed from all samples; only the drawing is decimated
// (per pixel column, or per cell of a grid), so a million-sample run stays a
// few hundred kilobytes.
#pragma once

#include <string>

#include "coolbench/report/run_document.hpp"

namespace coolbench::report {

/// Every sample against time: latency (kept, warm-up, and discarded samples
/// coloured by why), with bursts, gates and pauses, and releases (a new CUDA
/// context) marked; below it temperature, SM clock and power as min/max bands
/// and one lane per clock-reason bit that was set.
[[nodiscard]] std::string timeline_svg(const run_document& run);

/// A histogram of the kept measurement samples with the median and its CI
/// (and the figure over contexts with its CI, where the run has one).
[[nodiscard]] std::string distribution_svg(const run_document& run);

/// The per-context medians with their mean and the CI over contexts; empty
/// when the run was not spread over contexts.
[[nodiscard]] std::string contexts_svg(const run_document& run);

/// Profile mode: latency against temperature and against SM clock (sample
/// density, the bucket medians, the least-squares fit); empty otherwise.
[[nodiscard]] std::string profile_svg(const run_document& run);

}  // namespace coolbench::report
