// Profile mode: latency against temperature and SM clock. Gate, warm up, then run without
// pause from cool to hot, every sample kept with its telemetry; stop after profile_time, at a
// steady temperature, at the ceiling or a limit. The tables are made from the kept samples.
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>

#include "coolbench/stats.hpp"
#include "measure/protocol/run.hpp"
#include "measure/protocol/summarize.hpp"

namespace coolbench::measure::detail {
namespace {

/// Buckets of `width` over x; vs_coolest relative to the first bucket (lowest temperature) or,
/// for clocks, the last (highest clock).
std::vector<profile_bucket> buckets(const std::vector<double>& x, const std::vector<double>& y,
                                    double width, bool relative_to_last) {
  std::map<long long, std::vector<double>> groups;
  for (std::size_t i = 0; i < x.size(); ++i) {
    groups[static_cast<long long>(std::floor(x[i] / width))].push_back(y[i]);
  }
  std::vector<profile_bucket> out;
  for (auto& [index, values] : groups) {
    profile_bucket b;
    b.from = static_cast<double>(index) * width;
    b.to = b.from + width;
    b.count = static_cast<int>(values.size());
    b.median_ms = stats::median(values);
    out.push_back(b);
  }
  if (!out.empty()) {
    const double reference = relative_to_last ? out.back().median_ms : out.front().median_ms;
    for (auto& b : out) b.vs_coolest = b.median_ms / reference - 1;
  }
  return out;
}

/// The tables' reference buckets against the warm-up, which ran just before at the full clock.
/// The coolest bucket may hold a change of state that did not heat the GPU (a power cap): the
/// derate is taken against the warm-up for that reason. The fastest-clock bucket should not:
/// when it does, NVML reported the change late (on the H200 the power cap showed ~130 ms after
/// the latency stepped up, the runs between carrying 1980 MHz), and the reader is told.
void check_labels(run_state& run, profile_result& p) {
  if (!p.warmup_median_ms) return;
  const double reference = *p.warmup_median_ms;
  if (!p.by_temperature.empty()) {
    p.coolest_temp_vs_warmup = p.by_temperature.front().median_ms / reference - 1;
  }
  if (p.by_clock.empty()) return;
  const auto& fastest = p.by_clock.back();
  p.fastest_clock_vs_warmup = fastest.median_ms / reference - 1;
  if (*p.fastest_clock_vs_warmup <= run.o.step_threshold) return;
  std::ostringstream w;
  w << "profile: the " << fastest.count << " runs NVML reported at " << fastest.from << " to "
    << fastest.to << " MHz have a median of " << std::fixed << std::setprecision(4)
    << fastest.median_ms << " ms, " << std::setprecision(1) << 100 * *p.fastest_clock_vs_warmup
    << "% above the warm-up's " << std::setprecision(4) << reference
    << " ms at that clock just before: the GPU changed state before NVML reported it (its "
       "readings lag), so the clock table's fastest bucket, its reference, and the slope on "
       "the clock mix two states";
  run.warn(w.str());
}

}  // namespace

stop_reason run_profile(run_state& run) {
  const protocol_options& o = run.o;
  gate(run);
  warm_up_after_gate(run, true);
  const std::int64_t began = run.now();
  run.measure_start_ns = began;
  for (;;) {
    (void)take(run, sample_phase::measure);
    const std::int64_t now = run.now();
    if (now - began >= to_ns(o.profile_time)) return stop_reason::profile_time;
    if (now - began >= 3 * to_ns(o.soak_window) && steady(run, began)) {
      return stop_reason::steady_temperature;
    }
    if (over_ceiling(run)) return stop_reason::ceiling;
    if (now - run.start_ns >= to_ns(o.max_time)) return stop_reason::max_time;
    if (run.samples.kept() >= o.max_samples) return stop_reason::max_samples;
  }
}

profile_result profile_tables(run_state& run, const profile_points& points) {
  profile_result p;
  p.by_temperature =
      buckets(points.temps, points.latencies_at_temp, run.o.profile_temp_bucket_c, false);
  p.by_clock =
      buckets(points.clocks, points.latencies_at_clock, run.o.profile_clock_bucket_mhz, true);
  p.warmup_median_ms = points.warmup_median_ms;
  if (p.warmup_median_ms && !p.by_temperature.empty()) {
    p.derate = p.by_temperature.back().median_ms / *p.warmup_median_ms - 1;
  } else if (p.by_temperature.size() >= 2) {
    p.derate = p.by_temperature.back().median_ms / p.by_temperature.front().median_ms - 1;
  }
  try {
    if (points.temps.size() >= 3) {
      p.ms_per_c =
          stats::fit_latency_on_temperature(points.temps, points.latencies_at_temp).latency_per_c;
    }
    if (points.clocks.size() >= 3) {
      p.pct_per_100mhz =
          stats::fit_latency_on_clock(points.clocks, points.latencies_at_clock).percent_per_100mhz;
    }
  } catch (const invalid_argument&) {
    // One temperature or one clock throughout: no slope to fit.
  }
  check_labels(run, p);
  return p;
}

}  // namespace coolbench::measure::detail
