// The HTML report of a saved run (`coolbench report`): one self-contained
// page, inline SVG and CSS only, no script and nothing fetched from the
// network, so it opens offline and can be mailed or archived as one file.
#pragma once

#include <string>
#include <string_view>

#include "coolbench/report/run_document.hpp"

namespace coolbench::report {

/// The whole page: the figure and its CI, warnings, the timeline, the
/// distribution, the per-context medians, the profile (in profile mode), the
/// environment and configuration.
[[nodiscard]] std::string run_html(const run_document& run);
/// The page of run_html without its head, title and end: for pages that hold several runs
/// (a run on several GPUs).
[[nodiscard]] std::string run_html_body(const run_document& run);

/// The page's head (title, stylesheet) and its end, for other pages made of
/// the same pieces (the compare report).
[[nodiscard]] std::string html_page_start(std::string_view title);
[[nodiscard]] std::string html_page_end();

/// `text` escaped for HTML.
[[nodiscard]] std::string html_escape(std::string_view text);

}  // namespace coolbench::report
