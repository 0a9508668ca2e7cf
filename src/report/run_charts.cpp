// The distribution, per-context and profile pictures (run_charts.hpp).
#include "report/run_charts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "coolbench/stats/linear_fit.hpp"
#include "coolbench/stats/summary.hpp"
#include "report/svg.hpp"

namespace coolbench::report {
namespace {

constexpr double k_left = 70;

std::vector<double> kept_latencies(const run_samples& s) {
  std::vector<double> out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s.kept[i] && s.phase[i] == "measure" && std::isfinite(s.latency_ms[i])) {
      out.push_back(s.latency_ms[i]);
    }
  }
  return out;
}

std::optional<std::pair<double, double>> pair_of(const nlohmann::json& j) {
  if (!j.is_array() || j.size() != 2 || !j[0].is_number() || !j[1].is_number()) return {};
  return std::pair{j[0].get<double>(), j[1].get<double>()};
}

/// A vertical marker across the area at x = v with its label above.
void marker(svg::canvas& c, const svg::plot_area& a, double v, const std::string& cls,
            const std::string& label, double label_dy) {
  c.line(a.x(v), a.top, a.x(v), a.bottom(), cls);
  c.text(a.x(v) + 3, a.top + label_dy, label, cls + "-label");
}

/// A band across the area between x = lo and x = hi.
void x_band(svg::canvas& c, const svg::plot_area& a, std::pair<double, double> ci,
            const std::string& cls, const std::string& title) {
  if (ci.second < a.x.d0 || ci.first > a.x.d1) return;  // outside the plot
  const double x0 = a.x(std::max(ci.first, a.x.d0));
  const double x1 = a.x(std::min(ci.second, a.x.d1));
  c.rect(x0, a.top, std::max(1.0, x1 - x0), a.height, cls, title);
}

}  // namespace

std::string distribution_svg(const run_document& run) {
  std::vector<double> x = kept_latencies(run.samples);
  svg::canvas c(1100, 330, fmt::format("Distribution of {} kept samples", x.size()));
  if (x.empty()) {
    c.text(k_left, 40, "no sample was kept", "note");
    return c.str();
  }
  std::sort(x.begin(), x.end());
  // Bins over the bulk (0.5th to 99.5th percentile); the tails are counted, not drawn.
  const double lo = stats::quantile_sorted(x, x.size() > 200 ? 0.005 : 0.0);
  const double hi = stats::quantile_sorted(x, x.size() > 200 ? 0.995 : 1.0);
  const int bins = std::clamp(static_cast<int>(std::sqrt(static_cast<double>(x.size()))), 5, 80);
  const double width = hi > lo ? (hi - lo) / bins : 1e-9;
  std::vector<std::size_t> counts(static_cast<std::size_t>(bins), 0);
  std::size_t outside = 0;
  for (const double v : x) {
    if (v < lo || v > hi) {
      ++outside;
      continue;
    }
    const int b = std::min(bins - 1, static_cast<int>((v - lo) / width));
    ++counts[static_cast<std::size_t>(b)];
  }
  const double peak = static_cast<double>(*std::max_element(counts.begin(), counts.end()));
  const auto a = svg::make_area(k_left, 40, 1000, 230, svg::padded(lo, lo + width * bins, 0.02),
                                {0, peak * 1.1});
  const auto& summary = run.doc["summary"];
  if (const auto ci = pair_of(summary.value("median_ci_ms", nlohmann::json()))) {
    x_band(c, a, *ci, "ci median-ci",
           fmt::format("CI of the median: {:.5f} to {:.5f} ms", ci->first, ci->second));
  }
  const auto& contexts = summary.value("contexts", nlohmann::json());
  if (contexts.is_object()) {
    if (const auto ci = pair_of(contexts.value("ci_ms", nlohmann::json()))) {
      x_band(c, a, *ci, "ci contexts-ci",
             fmt::format("CI over contexts: {:.5f} to {:.5f} ms", ci->first, ci->second));
    }
  }
  svg::draw_axes(c, a, "latency [ms]", "kept samples", true);
  c.open_group("histogram");
  for (int b = 0; b < bins; ++b) {
    const double n = static_cast<double>(counts[static_cast<std::size_t>(b)]);
    if (n == 0) continue;
    const double x0 = a.x(lo + b * width);
    c.rect(x0, a.y(n), std::max(0.5, a.x(lo + (b + 1) * width) - x0 - 0.5), a.y(0) - a.y(n), "bar",
           fmt::format("{:.5f} to {:.5f} ms: {} samples", lo + b * width, lo + (b + 1) * width, n));
  }
  c.close_group();
  marker(c, a, stats::median(x), "median", fmt::format("median {:.5f} ms", stats::median(x)), 12);
  if (contexts.is_object() && contexts.value("mean_ms", nlohmann::json()).is_number()) {
    const double mean = contexts["mean_ms"].get<double>();
    marker(c, a, mean, "figure", fmt::format("figure (mean over contexts) {:.5f} ms", mean), 26);
  }
  if (outside > 0) {
    c.text(a.right(), a.top - 6,
           fmt::format("{} samples outside {:.5f} to {:.5f} ms not drawn", outside, lo, hi), "note",
           "end");
  }
  return c.str();
}

std::string contexts_svg(const run_document& run) {
  const auto& contexts = run.doc["summary"].value("contexts", nlohmann::json());
  if (!contexts.is_object() || !contexts.contains("per_context")) return {};
  const auto& per = contexts["per_context"];
  if (per.empty()) return {};
  double lo = INFINITY;
  double hi = -INFINITY;
  for (const auto& p : per) {
    lo = std::min(lo, p.at("median_ms").get<double>());
    hi = std::max(hi, p.at("median_ms").get<double>());
  }
  const auto ci = pair_of(contexts.value("ci_ms", nlohmann::json()));
  if (ci) {
    lo = std::min(lo, ci->first);
    hi = std::max(hi, ci->second);
  }
  const double n = static_cast<double>(per.size());
  svg::canvas c(1100, 300, fmt::format("Medians of {} contexts", per.size()));
  const auto a = svg::make_area(k_left, 40, 1000, 200, {0.5, n + 0.5}, svg::padded(lo, hi, 0.1));
  if (ci) {
    c.rect(a.left, a.y(ci->second), a.width, a.y(ci->first) - a.y(ci->second), "ci contexts-ci",
           fmt::format("CI over contexts: {:.5f} to {:.5f} ms", ci->first, ci->second));
  }
  svg::draw_axes(c, a, "context (in the order measured)", "median of the context [ms]", false);
  const double mean = contexts.value("mean_ms", (lo + hi) / 2);
  c.line(a.left, a.y(mean), a.right(), a.y(mean), "figure");
  c.text(a.right(), a.y(mean) - 4, fmt::format("mean {:.5f} ms", mean), "figure-label", "end");
  c.open_group("contexts");
  for (std::size_t i = 0; i < per.size(); ++i) {
    const auto& p = per[i];
    const double x = a.x(static_cast<double>(i + 1));
    const int ctx = p.value("context", static_cast<int>(i + 1));
    c.circle(x, a.y(p.at("median_ms").get<double>()), 4, "context-median",
             fmt::format("context {}: {} samples, median {:.5f} ms", ctx, p.value("samples", 0),
                         p.at("median_ms").get<double>()));
    if (per.size() <= 40) c.text(x, a.bottom() + 16, std::to_string(ctx), "tick-label", "middle");
  }
  c.close_group();
  return c.str();
}

namespace {

/// Samples as density: the count in each 4-pixel cell, in four shades.
void draw_density(svg::canvas& c, const svg::plot_area& a, const std::vector<double>& xs,
                  const std::vector<double>& ys) {
  constexpr double cell = 4;
  std::map<std::pair<int, int>, std::size_t> grid;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double px = a.x(xs[i]);
    const double py = a.y(std::clamp(ys[i], a.y.d0, a.y.d1));
    ++grid[{static_cast<int>((px - a.left) / cell), static_cast<int>((py - a.top) / cell)}];
  }
  std::size_t most = 1;
  for (const auto& [key, n] : grid) most = std::max(most, n);
  c.open_group("density");
  for (const auto& [key, n] : grid) {
    // Shade by log(count) relative to the densest cell.
    const double level = std::log1p(static_cast<double>(n)) / std::log1p(static_cast<double>(most));
    const int shade = std::clamp(static_cast<int>(std::ceil(level * 4)), 1, 4);
    c.rect(a.left + key.first * cell, a.top + key.second * cell, cell, cell,
           fmt::format("density-{}", shade));
  }
  c.close_group();
}

/// One profile panel: latency against `values` with the bucket medians and the fit.
void profile_panel(svg::canvas& c, double left, const run_samples& s,
                   const std::vector<double>& values, const nlohmann::json& buckets,
                   const std::string& x_label, const std::string& unit, bool per_100) {
  std::vector<double> xs;
  std::vector<double> ys;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s.kept[i] && s.phase[i] == "measure" && std::isfinite(values[i]) &&
        std::isfinite(s.latency_ms[i])) {
      xs.push_back(values[i]);
      ys.push_back(s.latency_ms[i]);
    }
  }
  if (xs.empty()) {
    c.text(left, 60, "no sample with this reading", "note");
    return;
  }
  std::vector<double> sorted = ys;
  std::sort(sorted.begin(), sorted.end());
  const double y_hi = stats::quantile_sorted(sorted, sorted.size() > 1000 ? 0.999 : 1.0);
  const auto [x_lo, x_hi] = std::minmax_element(xs.begin(), xs.end());
  const auto a = svg::make_area(left, 40, 430, 260, svg::padded(*x_lo, *x_hi),
                                svg::padded(sorted.front(), y_hi));
  svg::draw_axes(c, a, x_label, "latency [ms]", true);
  draw_density(c, a, xs, ys);
  std::string medians;
  for (const auto& b : buckets) {
    const double x = (b.at("from").get<double>() + b.at("to").get<double>()) / 2;
    const double y = b.at("median_ms").get<double>();
    medians +=
        fmt::format("{}{} {}", medians.empty() ? "M" : "L", svg::num(a.x(x)), svg::num(a.y(y)));
    c.circle(
        a.x(x), a.y(y), 3, "bucket-median",
        fmt::format("{:g} to {:g} {}: {} samples, median {:.5f} ms", b.at("from").get<double>(),
                    b.at("to").get<double>(), unit, b.value("count", 0), y));
  }
  c.path(medians, "bucket-line");
  if (*x_hi > *x_lo && xs.size() >= 3) {
    const auto fit = stats::fit_line(xs, ys);
    const double mean = stats::mean(ys);
    const std::string slope =
        per_100 ? fmt::format("{:+.2f}% per 100 {}", 100 * 100 * fit.slope / mean, unit)
                : fmt::format("{:+.5f} ms per {}", fit.slope, unit);
    c.line(a.x(*x_lo), a.y(fit.intercept + fit.slope * *x_lo), a.x(*x_hi),
           a.y(fit.intercept + fit.slope * *x_hi), "fit");
    c.text(a.right(), a.top + 12, fmt::format("least squares: {}, r² {:.3f}", slope, fit.r2),
           "fit-label", "end");
  }
}

}  // namespace

std::string profile_svg(const run_document& run) {
  if (!run.doc.contains("profile") || !run.doc["profile"].is_object()) return {};
  const auto& profile = run.doc["profile"];
  svg::canvas c(1100, 350, "Latency against temperature and SM clock");
  profile_panel(c, k_left, run.samples, run.samples.temp_c,
                profile.value("by_temperature", nlohmann::json::array()), "GPU temperature [°C]",
                "°C", false);
  profile_panel(c, k_left + 530, run.samples, run.samples.sm_clock_mhz,
                profile.value("by_sm_clock", nlohmann::json::array()), "SM clock [MHz]", "MHz",
                true);
  return c.str();
}

}  // namespace coolbench::report
