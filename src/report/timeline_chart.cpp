// The timeline of every sample (run_charts.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "coolbench/stats/summary.hpp"
#include "coolbench/telemetry/clock_reasons.hpp"
#include "report/run_charts.hpp"
#include "report/svg.hpp"

namespace coolbench::report {
namespace {

constexpr double k_width = 1100;
constexpr double k_left = 100;
constexpr double k_plot_width = k_width - k_left - 30;
constexpr double k_latency_height = 260;
constexpr double k_band_height = 60;
constexpr double k_lane_height = 14;
constexpr double k_gap = 22;
constexpr std::size_t k_discard_classes = 6;

/// The latency panel's y range: every sample up to the 99.9th percentile (a
/// first warm-up run can be 100 times slower); higher ones sit on the top edge.
std::pair<double, double> latency_range(const run_samples& s) {
  std::vector<double> finite;
  finite.reserve(s.size());
  for (const double v : s.latency_ms) {
    if (std::isfinite(v)) finite.push_back(v);
  }
  if (finite.empty()) return {0, 1};
  std::sort(finite.begin(), finite.end());
  const double hi = finite.size() > 1000 ? stats::quantile_sorted(finite, 0.999) : finite.back();
  return svg::padded(finite.front(), hi);
}

/// Each sample's series: "kept", "warmup" (warm-up and soak), or the index of
/// its discard reason in `reasons` (ordered by count).
struct series_split {
  std::vector<std::string> reasons;  ///< discard reasons, most frequent first
  std::vector<std::size_t> counts;
  std::vector<int> series;  ///< per sample: -2 kept, -1 warm-up/soak, else reason index
};

series_split split_samples(const run_samples& s) {
  std::map<std::string, std::size_t> count_by_reason;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!s.kept[i] && s.phase[i] == "measure") ++count_by_reason[s.throttle_reason[i]];
  }
  series_split out;
  std::vector<std::pair<std::size_t, std::string>> order;
  for (const auto& [reason, n] : count_by_reason) order.emplace_back(n, reason);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a > b; });
  std::map<std::string, int> index;
  for (const auto& [n, reason] : order) {
    index[reason] = static_cast<int>(out.reasons.size());
    out.reasons.push_back(reason.empty() ? "(no reason given)" : reason);
    out.counts.push_back(n);
  }
  out.series.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s.phase[i] != "measure") {
      out.series.push_back(-1);
    } else {
      out.series.push_back(s.kept[i] ? -2 : index[s.throttle_reason[i]]);
    }
  }
  return out;
}

std::string discard_class(int reason) {
  return static_cast<std::size_t>(reason) < k_discard_classes
             ? fmt::format("discard discard-{}", reason)
             : std::string("discard discard-other");
}

/// Gaps between samples longer than a few runs: gates, pauses and releases.
void draw_gaps(svg::canvas& c, const run_samples& s, const svg::plot_area& a, double bottom) {
  std::vector<double> durations;
  for (std::size_t i = 0; i < s.size(); ++i) durations.push_back(s.end_s[i] - s.start_s[i]);
  const double typical = durations.empty() ? 0 : stats::median(durations);
  const double min_gap = std::max(0.005, 5 * typical);
  c.open_group("gaps");
  for (std::size_t i = 1; i < s.size(); ++i) {
    const double from = s.end_s[i - 1];
    const double to = s.start_s[i];
    const bool release = s.context[i] != s.context[i - 1];
    if (to - from < min_gap && !release) continue;
    const bool gate = s.burst[i] != s.burst[i - 1];
    const std::string title = fmt::format(
        "{}: {:.3f} s to {:.3f} s ({:.3f} s){}",
        gate ? fmt::format("gate before burst {}", s.burst[i]) : std::string("pause"), from, to,
        to - from, release ? "; the device was released: a new CUDA context" : "");
    if (to - from >= min_gap) {
      c.rect(a.x(from), a.top, std::max(1.0, a.x(to) - a.x(from)), bottom - a.top,
             gate ? "gate" : "pause", title);
    }
    if (release) {
      const double x = a.x((from + to) / 2);
      c.line(x, a.top, x, bottom, "release");
      c.text(x + 2, a.top + 10, fmt::format("ctx {}", s.context[i]), "release-label");
    }
  }
  c.close_group();
}

void draw_bursts(svg::canvas& c, const run_samples& s, const svg::plot_area& a) {
  c.open_group("bursts");
  std::size_t i = 0;
  while (i < s.size()) {
    if (s.phase[i] != "measure") {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j + 1 < s.size() && s.burst[j + 1] == s.burst[i] && s.phase[j + 1] == "measure") ++j;
    const double x0 = a.x(s.start_s[i]);
    const double x1 = std::max(x0 + 1, a.x(s.end_s[j]));
    c.rect(x0, a.top, x1 - x0, a.height, s.burst[i] % 2 == 0 ? "burst burst-even" : "burst",
           fmt::format("burst {}: samples {} to {}, {:.3f} s to {:.3f} s", s.burst[i], i, j,
                       s.start_s[i], s.end_s[j]));
    i = j + 1;
  }
  c.close_group();
}

void draw_latency(svg::canvas& c, const run_samples& s, const series_split& split,
                  const svg::plot_area& a) {
  const int n_series = static_cast<int>(split.reasons.size());
  const auto draw_series = [&](int series, const std::string& cls, const std::string& title) {
    std::vector<double> xs;
    std::vector<double> ys;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (split.series[i] != series) continue;
      xs.push_back((s.start_s[i] + s.end_s[i]) / 2);
      ys.push_back(std::min(s.latency_ms[i], a.y.d1));
    }
    c.path(svg::column_strokes(svg::min_max_columns(xs, ys, a), a), cls, title);
  };
  c.open_group("samples");
  draw_series(-1, "warmup", "warm-up and soak runs");
  draw_series(-2, "kept", "kept measurement samples");
  for (int r = 0; r < n_series; ++r) {
    draw_series(r, discard_class(r),
                fmt::format("discarded: {} ({} samples)", split.reasons[r], split.counts[r]));
  }
  c.close_group();
}

void draw_legend(svg::canvas& c, const series_split& split, double x, double y) {
  c.open_group("legend");
  const auto entry = [&](const std::string& cls, const std::string& text) {
    c.rect(x, y - 8, 10, 10, "legend-swatch " + cls);
    c.text(x + 14, y, text, "legend-label");
    x += 24 + 6.5 * static_cast<double>(text.size());
  };
  entry("kept", "kept");
  entry("warmup", "warm-up / soak");
  for (std::size_t r = 0; r < split.reasons.size(); ++r) {
    entry(discard_class(static_cast<int>(r)),
          fmt::format("discarded: {} ({})", split.reasons[r], split.counts[r]));
  }
  entry("gate", "gate / pause");
  c.close_group();
}

/// One telemetry quantity as a min/max band per pixel column.
void draw_band(svg::canvas& c, const run_samples& s, const std::vector<double>& values, double top,
               double x_hi, const char* label, const char* cls) {
  double lo = INFINITY;
  double hi = -INFINITY;
  std::vector<double> mid;
  for (std::size_t i = 0; i < s.size(); ++i) {
    mid.push_back((s.start_s[i] + s.end_s[i]) / 2);
    if (std::isfinite(values[i])) {
      lo = std::min(lo, values[i]);
      hi = std::max(hi, values[i]);
    }
  }
  const auto a = svg::make_area(
      k_left, top, k_plot_width, k_band_height, {0, x_hi},
      std::isfinite(lo) ? svg::padded(lo, hi, 0.1) : std::pair<double, double>{0, 1});
  svg::draw_axes(c, a, {}, label, false);
  if (!std::isfinite(lo)) {
    c.text(a.left + 8, a.top + a.height / 2, "no readings", "note");
    return;
  }
  c.path(svg::column_strokes(svg::min_max_columns(mid, values, a), a), std::string("band ") + cls,
         label);
}

/// One lane per clock-reason bit set in any sample: where it was set.
double draw_reason_lanes(svg::canvas& c, const run_samples& s, double top, double x_hi) {
  std::uint64_t seen = 0;
  for (const auto bits : s.clock_reasons) seen |= bits;
  const auto a = svg::make_area(k_left, top, k_plot_width, k_lane_height, {0, x_hi}, {0, 1});
  c.open_group("reasons");
  c.text(k_left, top - 4, "clock reasons (NVML bits set while the sample ran)", "axis-title");
  if (seen == 0) {
    c.text(k_left + 8, top + 11, "none set", "note");
    c.close_group();
    return top + k_lane_height;
  }
  double y = top;
  for (int bit = 0; bit < 64; ++bit) {
    const std::uint64_t mask = std::uint64_t{1} << bit;
    if ((seen & mask) == 0) continue;
    const std::string name = telemetry::clock_reason_names(mask).front();
    c.text(k_left - 6, y + 10, name, "lane-label", "end");
    int run_from = -1;
    int last = -2;
    const auto flush = [&] {
      if (run_from >= 0) {
        c.rect(k_left + run_from, y + 1, last - run_from + 1, k_lane_height - 2,
               "reason reason-" + name, name);
      }
    };
    for (std::size_t i = 0; i < s.size(); ++i) {
      if ((s.clock_reasons[i] & mask) == 0) continue;
      const int col = static_cast<int>(a.x(s.start_s[i]) - k_left);
      const int col_end = static_cast<int>(a.x(s.end_s[i]) - k_left);
      if (col > last + 1) {
        flush();
        run_from = col;
      }
      last = std::max(last, col_end);
    }
    flush();
    y += k_lane_height;
  }
  c.close_group();
  return y;
}

}  // namespace

std::string timeline_svg(const run_document& run) {
  const run_samples& s = run.samples;
  std::uint64_t seen_bits = 0;
  for (const auto bits : s.clock_reasons) seen_bits |= bits;
  const int lanes = std::max(1, std::popcount(seen_bits));
  const double bands_top = 40 + k_latency_height + k_gap;
  const double lanes_top = bands_top + 3 * (k_band_height + k_gap) + 6;
  const double height = lanes_top + lanes * k_lane_height + 50;
  svg::canvas c(static_cast<int>(k_width), static_cast<int>(height),
                fmt::format("Timeline of {} samples", s.size()));
  const double x_hi = s.size() == 0 ? 1 : std::max(1e-3, s.end_s.back());
  const auto latency =
      svg::make_area(k_left, 40, k_plot_width, k_latency_height, {0, x_hi}, latency_range(s));
  const series_split split = split_samples(s);
  draw_legend(c, split, k_left, 14);
  draw_bursts(c, s, latency);
  draw_gaps(c, s, latency, lanes_top + lanes * k_lane_height);
  svg::draw_axes(c, latency, {}, "latency [ms]", false);
  draw_latency(c, s, split, latency);
  draw_band(c, s, s.temp_c, bands_top, x_hi, "GPU temperature [°C]", "temp");
  draw_band(c, s, s.sm_clock_mhz, bands_top + k_band_height + k_gap, x_hi, "SM clock [MHz]",
            "clock");
  draw_band(c, s, s.power_w, bands_top + 2 * (k_band_height + k_gap), x_hi, "power [W]", "power");
  const double lanes_bottom = draw_reason_lanes(c, s, lanes_top, x_hi);
  const auto time_axis =
      svg::make_area(k_left, 40, k_plot_width, lanes_bottom - 40, {0, x_hi}, {0, 1});
  c.open_group("axis x-axis time-axis");
  const auto ticks = svg::nice_ticks(0, x_hi, 10);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  for (const double t : ticks) {
    c.line(time_axis.x(t), lanes_bottom, time_axis.x(t), lanes_bottom + 4, "tick");
    c.text(time_axis.x(t), lanes_bottom + 16, svg::tick_label(t, step), "tick-label", "middle");
  }
  c.line(k_left, lanes_bottom, k_left + k_plot_width, lanes_bottom, "domain");
  c.text(k_left + k_plot_width / 2, lanes_bottom + 34, "time since the first sample [s]",
         "axis-title", "middle");
  c.close_group();
  return c.str();
}

}  // namespace coolbench::report
