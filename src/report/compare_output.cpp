// The renderings of a comparison (compare_report.hpp): text, JSON, HTML.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "coolbench/report/compare_report.hpp"
#include "coolbench/report/html_report.hpp"
#include "report/svg.hpp"

namespace coolbench::report {
namespace {

std::string ms(const std::optional<double>& v) {
  return v ? fmt::format("{:.5f}", *v) : std::string("-");
}

std::string interval(const std::optional<stats::ratio_interval>& r) {
  return r ? fmt::format("{:.4f} to {:.4f}", r->lower, r->upper) : std::string("-");
}

std::string percent(const std::optional<stats::ratio_interval>& r) {
  return r ? fmt::format("{:+.2f}%", 100 * (r->ratio - 1)) : std::string("-");
}

nlohmann::json ratio_json(const std::optional<stats::ratio_interval>& r) {
  if (!r) return nullptr;
  return {{"ratio", r->ratio}, {"ci", {r->lower, r->upper}}};
}

template <class T>
nlohmann::json optional_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

constexpr const char* k_one_context_note =
    "a CI over samples, not contexts: on a GPU a new CUDA context can draw a level 1-3% apart "
    "with every sensor the same (docs/measure.md, \"Contexts\"), and a CI from one context's "
    "samples (or several contexts' samples pooled) does not hold that; a cold run's CI over "
    "contexts (summary.contexts, --contexts) does";

}  // namespace

std::string compare_text(const std::vector<run_comparison>& comparisons, double same_within) {
  if (comparisons.empty()) return {};
  const auto& first = comparisons.front();
  std::string out = fmt::format("A (baseline): {}  {}\n  {} ms\n", first.baseline,
                                first.baseline_workload, ms(first.baseline_ms));
  out += fmt::format("{:<8} {:<12} {:>9} {:>20} {:>20}  {}\n", "verdict", "B/A", "change",
                     fmt::format("CI {:.0f}% (time)", 100 * first.level), "CI (clock cycles)",
                     "B [ms]  file");
  bool any_one_context = false;
  for (const auto& c : comparisons) {
    any_one_context = any_one_context || c.one_context_draw;
    out += fmt::format("{:<8} {:<12} {:>9} {:>20} {:>20}  {}  {}{}\n", c.verdict,
                       c.time ? fmt::format("{:.4f}", c.time->ratio) : "-", percent(c.time),
                       interval(c.time), interval(c.cycles), ms(c.candidate_ms), c.candidate,
                       c.one_context_draw ? " (*)" : "");
    out += fmt::format("         {}; uncertainty: {}\n", c.reason, c.uncertainty);
    if (c.energy) {
      out += fmt::format("         energy per run B/A {:.4f} ({}), CI {}\n", c.energy->ratio,
                         percent(c.energy), interval(c.energy));
    }
    for (const auto& issue : c.issues) {
      out +=
          fmt::format("         {}: {}\n", issue.refuse ? "NOT COMPARABLE" : "WARNING", issue.what);
    }
  }
  out += fmt::format(
      "FASTER/SLOWER: the CI of B/A lies below/above 1 in time and in clock cycles; SAME: it "
      "contains 1 within ±{:g}%; else UNSURE.\n",
      100 * same_within);
  if (any_one_context) out += fmt::format("(*) {}\n", k_one_context_note);
  return out;
}

nlohmann::json compare_json(const std::vector<run_comparison>& comparisons, double same_within) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& c : comparisons) {
    nlohmann::json issues = nlohmann::json::array();
    for (const auto& i : c.issues) issues.push_back({{"what", i.what}, {"refuse", i.refuse}});
    list.push_back({{"baseline", c.baseline},
                    {"candidate", c.candidate},
                    {"baseline_workload", c.baseline_workload},
                    {"candidate_workload", c.candidate_workload},
                    {"baseline_ms", optional_json(c.baseline_ms)},
                    {"candidate_ms", optional_json(c.candidate_ms)},
                    {"baseline_contexts", c.baseline_contexts},
                    {"candidate_contexts", c.candidate_contexts},
                    {"ci_level", c.level},
                    {"time", ratio_json(c.time)},
                    {"cycles", ratio_json(c.cycles)},
                    {"baseline_sm_clock_mhz", optional_json(c.baseline_clock_mhz)},
                    {"candidate_sm_clock_mhz", optional_json(c.candidate_clock_mhz)},
                    {"verdict", c.verdict},
                    {"reason", c.reason},
                    {"uncertainty", c.uncertainty},
                    {"one_context_draw", c.one_context_draw},
                    {"energy", ratio_json(c.energy)},
                    {"matched_couples", c.matched_couples},
                    {"issues", issues}});
  }
  return {{"schema", "coolbench.compare/1"},
          {"method", "MOVER on the log scale from each run's CI (docs/stats.md)"},
          {"same_within", same_within},
          {"comparisons", list}};
}

namespace {

/// Each ratio as a point with its CI (time solid, cycles hollow), 1 and the
/// SAME band marked.
std::string ratios_svg(const std::vector<run_comparison>& comparisons, double same_within) {
  double lo = 1 - same_within;
  double hi = 1 + same_within;
  for (const auto& c : comparisons) {
    for (const auto& r : {c.time, c.cycles}) {
      if (r) {
        lo = std::min(lo, r->lower);
        hi = std::max(hi, r->upper);
      }
    }
  }
  const double row = 34;
  const double height = 70 + row * static_cast<double>(comparisons.size());
  svg::canvas c(1100, static_cast<int>(height), "Ratios B/A with their CIs");
  const auto a = svg::make_area(300, 20, 760, height - 60, svg::padded(lo, hi, 0.08),
                                {0, static_cast<double>(comparisons.size())});
  c.rect(a.x(1 - same_within), a.top, a.x(1 + same_within) - a.x(1 - same_within), a.height,
         "ci same-band", fmt::format("SAME: within ±{:g}%", 100 * same_within));
  svg::draw_axes(c, a, "B / A (below 1: B is faster)", {}, true, false);
  c.line(a.x(1), a.top, a.x(1), a.bottom(), "figure");
  for (std::size_t i = 0; i < comparisons.size(); ++i) {
    const auto& cmp = comparisons[i];
    const double y = a.top + row * (static_cast<double>(i) + 0.5);
    c.text(a.left - 10, y + 4, fmt::format("{} {}", cmp.verdict, cmp.candidate), "lane-label",
           "end");
    if (cmp.cycles) {
      c.line(a.x(cmp.cycles->lower), y + 8, a.x(cmp.cycles->upper), y + 8, "ratio-ci cycles");
      c.circle(a.x(cmp.cycles->ratio), y + 8, 3, "ratio cycles",
               fmt::format("clock cycles: {:.4f} ({})", cmp.cycles->ratio, interval(cmp.cycles)));
    }
    if (cmp.time) {
      c.line(a.x(cmp.time->lower), y, a.x(cmp.time->upper), y, "ratio-ci time");
      c.circle(a.x(cmp.time->ratio), y, 4, "ratio time verdict-" + cmp.verdict,
               fmt::format("time: {:.4f} ({})", cmp.time->ratio, interval(cmp.time)));
    }
  }
  return c.str();
}

}  // namespace

std::string compare_html(const std::vector<run_comparison>& comparisons, double same_within) {
  std::string out = html_page_start("coolbench compare");
  out +=
      "<style>svg .ratio-ci { stroke: #0b57a4; stroke-width: 3; } svg .cycles { stroke: "
      "#009e73; fill: #ffffff; stroke-width: 2; } svg .ratio.time { fill: #0b57a4; } "
      "svg .same-band { fill: #009e73; } pre { white-space: pre-wrap; }</style>\n";
  out += "<h1>coolbench compare</h1>\n";
  if (!comparisons.empty()) {
    out += fmt::format("<p class=\"sub\">A (baseline): {} — {} — {} ms</p>\n",
                       html_escape(comparisons.front().baseline),
                       html_escape(comparisons.front().baseline_workload),
                       ms(comparisons.front().baseline_ms));
  }
  out += ratios_svg(comparisons, same_within);
  out += "<pre>" + html_escape(compare_text(comparisons, same_within)) + "</pre>\n";
  return out + html_page_end();
}

}  // namespace coolbench::report
