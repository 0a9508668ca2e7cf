// The HTML page of a matched A/B run (`coolbench report AB.json`, `coolbench run --against
// --html`): the verdict, each pair's B/A with the CI over the pairs, and each run's pictures.
#include <fmt/format.h>

#include <algorithm>

#include "coolbench/report/ab_report.hpp"
#include "coolbench/report/html_report.hpp"
#include "report/run_charts.hpp"
#include "report/svg.hpp"

namespace coolbench::report {
namespace {

/// Each counted pair's B/A (AB pairs filled, BA pairs hollow), the ratio over the pairs with
/// its CI, 1 and the SAME band.
std::string pairs_svg(const ab_document& ab, const run_comparison& c, double same_within) {
  const auto& pairs = ab.doc.at("pairs");
  const auto ratio_of = [](const nlohmann::json& p) {
    return p.is_object() ? p.value("ratio", nlohmann::json()) : nlohmann::json();
  };
  double lo = 1 - same_within;
  double hi = 1 + same_within;
  for (const auto& p : pairs) {
    const auto r = ratio_of(p);
    if (!r.is_number()) continue;
    lo = std::min(lo, r.get<double>());
    hi = std::max(hi, r.get<double>());
  }
  if (c.time) {
    lo = std::min(lo, c.time->lower);
    hi = std::max(hi, c.time->upper);
  }
  const auto n = static_cast<double>(std::max<std::size_t>(pairs.size(), 1));
  svg::canvas canvas(1100, 320, "B/A per pair");
  const auto a = svg::make_area(70, 20, 1000, 250, {0.5, n + 0.5}, svg::padded(lo, hi, 0.08));
  canvas.rect(a.left, a.y(1 + same_within), a.width, a.y(1 - same_within) - a.y(1 + same_within),
              "ci same-band", fmt::format("SAME: within ±{:g}%", 100 * same_within));
  if (c.time) {
    canvas.rect(a.left, a.y(c.time->upper), a.width, a.y(c.time->lower) - a.y(c.time->upper),
                "ci contexts-ci",
                fmt::format("B/A {:.4f}, CI {:.4f} to {:.4f}", c.time->ratio, c.time->lower,
                            c.time->upper));
    canvas.line(a.left, a.y(c.time->ratio), a.right(), a.y(c.time->ratio), "figure");
  }
  svg::draw_axes(canvas, a, "pair", "B / A (below 1: B is faster)");
  canvas.line(a.left, a.y(1), a.right(), a.y(1), "median");
  for (const auto& p : pairs) {
    const auto r = ratio_of(p);
    if (!r.is_number()) continue;
    const bool ab_order = p.value("order", std::string("AB")) == "AB";
    canvas.circle(a.x(p.value("pair", 0)), a.y(r.get<double>()), 4,
                  ab_order ? "context-median pair-ab" : "ratio cycles pair-ba",
                  fmt::format("pair {} ({}): B/A {:.4f}", p.value("pair", 0),
                              p.value("order", std::string()), r.get<double>()));
  }
  return canvas.str();
}

std::string run_section(const char* name, const run_document& run) {
  std::string out = fmt::format("<h2 id=\"run-{}\">{}: {}</h2>\n", name, name,
                                html_escape(run.doc.value("workload", std::string())));
  out += timeline_svg(run);
  out += distribution_svg(run);
  if (const std::string svg = contexts_svg(run); !svg.empty()) out += svg;
  return out;
}

}  // namespace

std::string ab_html(const ab_document& ab, double same_within) {
  const run_comparison c = compare_ab(ab, same_within);
  std::string out =
      html_page_start("coolbench A/B: " + c.baseline_workload + " against " + c.candidate_workload);
  out +=
      "<style>svg .cycles { stroke: #0b57a4; fill: #ffffff; stroke-width: 2; } svg .same-band "
      "{ fill: #009e73; } pre { white-space: pre-wrap; }</style>\n";
  out += fmt::format("<h1>A/B: {} against {}</h1>\n", html_escape(c.candidate_workload),
                     html_escape(c.baseline_workload));
  out += fmt::format("<p class=\"sub\">matched pairs in ABBA order; from {}</p>\n",
                     html_escape(ab.source));
  if (!ab.doc.value("complete", true)) {
    out += fmt::format("<p class=\"incomplete\">INCOMPLETE: {}</p>\n",
                       html_escape(ab.doc.value("error", std::string())));
  }
  out += fmt::format("<p class=\"figure-box\" id=\"verdict\"><b>{}</b>", c.verdict);
  if (c.time) {
    out += fmt::format(": B/A {:.4f} ({:+.2f}%), CI {:.0f}%: {:.4f} to {:.4f}", c.time->ratio,
                       100 * (c.time->ratio - 1), 100 * c.level, c.time->lower, c.time->upper);
  }
  out += fmt::format("</p>\n<p>{}; uncertainty {}</p>\n", html_escape(c.reason),
                     html_escape(c.uncertainty));
  out += "<h2 id=\"pairs\">B/A per pair</h2>\n" + pairs_svg(ab, c, same_within);
  out += "<pre>" + html_escape(compare_text({c}, same_within)) + "</pre>\n";
  out += run_section("A", ab.a) + run_section("B", ab.b);
  return out + html_page_end();
}

}  // namespace coolbench::report
