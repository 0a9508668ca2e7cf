/// @file
/// What `coolbench run` prints and writes: the human summary, the JSON
/// document (schema in docs/run-json.md) and the CSV of samples, made from a
/// run's records (coolbench/measure/result.hpp) alone.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>

#include "coolbench/measure/result.hpp"

namespace coolbench::report {

/// The version of the JSON document's layout; bumped on incompatible change.
inline constexpr const char* k_run_schema = "coolbench.run/1";

[[nodiscard]] nlohmann::json to_json(const measure::run_result& r);

/// One line per sample (warm-up, soak and measurement), with its telemetry.
[[nodiscard]] std::string samples_csv(const measure::run_result& r);

/// The summary a person reads: the figure, its CI, the spread, what was
/// kept and discarded and why, temperatures and clocks, time spent gating,
/// energy; the profile tables in markdown in profile mode.
[[nodiscard]] std::string format_run_summary(const measure::run_result& r);

/// The energy lines of the summary: J per run with its CI over windows, mean power, the
/// windows and the counter's period (empty without an energy figure).
[[nodiscard]] std::string format_energy(const measure::run_result& r);

/// The profile tables in markdown (empty without a profile).
[[nodiscard]] std::string profile_markdown(const measure::run_result& r);

}  // namespace coolbench::report
