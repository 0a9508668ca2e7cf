#include "coolbench/report/html_report.hpp"

#include <fmt/format.h>

#include "coolbench/core/version.hpp"
#include "report/run_charts.hpp"
#include "report/svg.hpp"

namespace coolbench::report {
namespace {

// Colours: discarded series in a palette that stays apart for the colour-blind
// (Okabe-Ito); telemetry bands muted so the latency stays in front.
constexpr const char* k_style = R"(
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #1d2330; background: #ffffff; max-width: 1140px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 6px; border-bottom: 1px solid #d5d9e0; }
p.sub { color: #556; margin: 0 0 12px; } .figure-box { font-size: 18px; margin: 10px 0; }
.incomplete, .warning { color: #a4161a; font-weight: 600; }
table { border-collapse: collapse; margin: 6px 0; } td, th { border: 1px solid #d5d9e0; padding: 3px 8px; text-align: left; vertical-align: top; }
td { word-break: break-word; max-width: 820px; }
th { background: #f2f4f7; font-weight: 600; } code { font-size: 13px; }
details { margin: 6px 0; } svg { display: block; margin: 8px 0; }
svg text { font: 11px system-ui, sans-serif; fill: #1d2330; }
svg .axis-title { font-weight: 600; } svg .note { fill: #667; font-style: italic; }
svg .grid { stroke: #eceff3; shape-rendering: crispEdges; }
svg .tick, svg .domain { stroke: #1d2330; stroke-width: 1; shape-rendering: crispEdges; }
svg .kept { stroke: #0b57a4; stroke-width: 2; stroke-linecap: round; fill: none; }
svg .warmup { stroke: #9aa3b2; stroke-width: 2; stroke-linecap: round; fill: none; }
svg .discard { stroke-width: 2; stroke-linecap: round; fill: none; }
svg .discard-0 { stroke: #d55e00; } svg .discard-1 { stroke: #e69f00; } svg .discard-2 { stroke: #cc79a7; }
svg .discard-3 { stroke: #009e73; } svg .discard-4 { stroke: #56b4e9; } svg .discard-5 { stroke: #000000; }
svg .discard-other { stroke: #7f7f7f; }
svg .legend-swatch.kept { fill: #0b57a4; } svg .legend-swatch.warmup { fill: #9aa3b2; }
svg .legend-swatch.discard-0 { fill: #d55e00; } svg .legend-swatch.discard-1 { fill: #e69f00; }
svg .legend-swatch.discard-2 { fill: #cc79a7; } svg .legend-swatch.discard-3 { fill: #009e73; }
svg .legend-swatch.discard-4 { fill: #56b4e9; } svg .legend-swatch.discard-5 { fill: #000000; }
svg .legend-swatch.discard-other { fill: #7f7f7f; } svg .legend-swatch.gate { fill: #dde3ea; }
svg .burst { fill: #f7f9fc; } svg .burst-even { fill: #eef3fa; }
svg .gate { fill: #dde3ea; } svg .pause { fill: #eceff3; }
svg .release { stroke: #6a3d9a; stroke-dasharray: 4 3; } svg .release-label { fill: #6a3d9a; }
svg .band { stroke-width: 1.5; stroke-linecap: square; fill: none; } svg .temp { stroke: #c0392b; } svg .clock { stroke: #2e7d32; } svg .power { stroke: #8e6c00; }
svg .reason { fill: #d55e00; opacity: 0.8; } svg .lane-label { font-size: 10px; }
svg .bar { fill: #0b57a4; opacity: 0.8; }
svg .ci { opacity: 0.25; } svg .median-ci { fill: #e69f00; } svg .contexts-ci { fill: #009e73; }
svg .median { stroke: #b35900; stroke-width: 2; } svg .median-label { fill: #b35900; }
svg .figure { stroke: #00704f; stroke-width: 2; stroke-dasharray: 6 3; } svg .figure-label { fill: #00704f; }
svg .context-median { fill: #0b57a4; }
svg .density-1 { fill: #0b57a4; opacity: 0.25; } svg .density-2 { fill: #0b57a4; opacity: 0.45; }
svg .density-3 { fill: #0b57a4; opacity: 0.7; } svg .density-4 { fill: #0b57a4; opacity: 1; }
svg .bucket-median { fill: #d55e00; } svg .bucket-line { stroke: #d55e00; fill: none; stroke-width: 1.5; }
svg .fit { stroke: #1d2330; stroke-width: 2; stroke-dasharray: 5 3; } svg .fit-label { font-weight: 600; }
)";

std::string json_cell(const nlohmann::json& v) {
  if (v.is_null()) return "<i>unknown</i>";
  if (v.is_string()) return html_escape(v.get<std::string>());
  return html_escape(v.dump());
}

/// A two-column table of an object's fields (nested values as compact JSON).
std::string field_table(const nlohmann::json& object) {
  if (!object.is_object()) return "<p><i>none</i></p>\n";
  std::string out = "<table>\n";
  for (const auto& [key, value] : object.items()) {
    out += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", html_escape(key), json_cell(value));
  }
  return out + "</table>\n";
}

std::string warnings_list(const nlohmann::json& warnings) {
  if (!warnings.is_array() || warnings.empty()) return {};
  std::string out = "<ul>\n";
  for (const auto& w : warnings)
    out += fmt::format("<li class=\"warning\">{}</li>\n", json_cell(w));
  return out + "</ul>\n";
}

std::string figure_block(const run_document& run) {
  const auto& summary = run.doc["summary"];
  const auto figure = run.figure_ms();
  const auto ci = run.figure_ci_ms();
  std::string out = "<p class=\"figure-box\">";
  if (!figure) return out + "No sample was kept: there is no figure.</p>\n";
  out += fmt::format("<b>{:.5f} ms</b>", *figure);
  if (ci) {
    out += fmt::format(" (CI {:.0f}%: {:.5f} to {:.5f} ms, ±{:.2f}%)", 100 * run.ci_level(),
                       ci->first, ci->second, 100 * (ci->second - ci->first) / 2 / *figure);
  }
  const int contexts = run.figure_contexts();
  const int pooled = run.kept_contexts();
  out += contexts > 1 ? fmt::format(", the mean of {} contexts' medians", contexts)
         : pooled > 1
             ? fmt::format(", the median of the kept samples of {} contexts, pooled", pooled)
             : std::string(", the median of one context's samples");
  out += "</p>\n";
  out += fmt::format(
      "<p>{} kept, {} discarded; stopped: {}{}; {:.1f} s in all, {:.1f} s gating; {} bursts, {} "
      "releases</p>\n",
      summary["latency"].value("count", 0), summary.value("discarded", 0),
      json_cell(summary.value("stop_reason", nlohmann::json())),
      summary.value("converged", false) ? "" : " (the CI did not reach rel_ci)",
      summary.value("seconds_total", 0.0), summary.value("seconds_gating", 0.0),
      summary.value("bursts", 0), summary.value("releases", 0));
  if (const auto& e = summary.value("energy", nlohmann::json()); e.is_object()) {
    const double j = e.value("j_per_run", 0.0);
    const auto e_ci = e.value("ci_j", nlohmann::json());
    out += fmt::format("<p id=\"energy\">Energy <b>{:.5f} J per run</b>", j);
    if (e_ci.is_array() && j > 0) {
      out += fmt::format(" (CI {:.0f}%: {:.5f} to {:.5f} J, ±{:.2f}%)", 100 * run.ci_level(),
                         e_ci[0].get<double>(), e_ci[1].get<double>(),
                         100 * (e_ci[1].get<double>() - e_ci[0].get<double>()) / 2 / j);
    }
    out += fmt::format(
        ", mean power {:.1f} W; over {} windows of at least {:.0f} ms (the energy counter moved "
        "every {}{:.0f} ms{})</p>\n",
        e.value("mean_power_w", 0.0), e.value("windows", 0), e.value("window_min_ms", 0.0),
        e.value("counter_period_resolved", false) ? "" : "at most ",
        e.value("counter_period_ms", 0.0),
        e.value("counter_period_source", std::string()) == "probe" ? ", learned at the start" : "");
  }
  return out;
}

}  // namespace

std::string html_escape(std::string_view text) { return svg::escape(text); }

std::string html_page_start(std::string_view title) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"generator\" content=\"coolbench {}\">\n<title>{}</title>\n<style>{}</style>\n"
      "</head>\n<body>\n",
      version(), html_escape(title), k_style);
}

std::string html_page_end() { return "</body>\n</html>\n"; }

std::string run_html(const run_document& run) {
  const std::string workload = run.doc.value("workload", std::string("?"));
  std::string out = html_page_start("coolbench: " + workload);
  out += fmt::format("<h1>{}</h1>\n", html_escape(workload));
  return out + run_html_body(run) + html_page_end();
}

std::string run_html_body(const run_document& run) {
  const auto& doc = run.doc;
  std::string out;
  const auto& config = doc["configuration"];
  const auto& gpu = doc["environment"].value("gpu", nlohmann::json());
  out += fmt::format("<p class=\"sub\">{}; mode {}, policy {}; from {}</p>\n",
                     gpu.is_object() ? html_escape(gpu.value("name", std::string("GPU")))
                                     : std::string("on the host (no GPU)"),
                     json_cell(config.value("mode", nlohmann::json())),
                     json_cell(config.value("policy", nlohmann::json())), html_escape(run.source));
  if (!doc.value("complete", true)) {
    out += fmt::format("<p class=\"incomplete\">INCOMPLETE: {}</p>\n",
                       json_cell(doc.value("error", nlohmann::json())));
  }
  out += figure_block(run);
  out += warnings_list(doc["summary"].value("warnings", nlohmann::json()));
  out += warnings_list(doc["environment"].value("warnings", nlohmann::json()));
  out += "<h2 id=\"timeline\">Every sample</h2>\n" + timeline_svg(run);
  out += "<h2 id=\"distribution\">Distribution</h2>\n" + distribution_svg(run);
  if (const std::string svg = contexts_svg(run); !svg.empty()) {
    out += "<h2 id=\"contexts\">Contexts</h2>\n" + svg;
  }
  if (const std::string svg = profile_svg(run); !svg.empty()) {
    out += "<h2 id=\"profile\">Profile</h2>\n" + svg;
    out += "<details open><summary>profile figures</summary>\n";
    nlohmann::json figures = doc["profile"];
    figures.erase("by_temperature");
    figures.erase("by_sm_clock");
    out += field_table(figures) + "</details>\n";
  }
  out += "<h2 id=\"environment\">Environment</h2>\n";
  nlohmann::json environment = doc["environment"];
  environment.erase("gpu");
  out += field_table(environment);
  out += "<details open><summary>GPU</summary>\n" + field_table(gpu) + "</details>\n";
  out += "<details><summary>configuration</summary>\n" + field_table(config) + "</details>\n";
  nlohmann::json summary = doc["summary"];
  out += "<details><summary>summary</summary>\n" + field_table(summary) + "</details>\n";
  return out;
}

}  // namespace coolbench::report
