// Energy per run from the GPU's energy counter, read once for the whole run: pooled over every
// steady span, and per window of several counter periods with a CI over the windows.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "coolbench/stats.hpp"

#include "measure/protocol/run.hpp"

namespace coolbench::measure::detail {
namespace {

/// The runs' worth of measurement in the span [from, to): how many runs fell inside (a run
/// that straddles an end counts by its fraction inside), and whether they filled it.
struct span_worth {
  double runs = 0;
  bool steady = true;
};

span_worth worth_between(const sample_log& samples, std::size_t& first, std::int64_t from,
                         std::int64_t to) {
  span_worth w;
  std::int64_t covered = 0;  // run time inside the span
  while (first < samples.size() && samples[first].time.end_ns <= from) ++first;
  for (std::size_t i = first; i < samples.size(); ++i) {
    const timing& run = samples[i].time;
    if (run.start_ns >= to) break;
    if (samples[i].phase != sample_phase::measure) w.steady = false;  // a warm-up between
    const std::int64_t inside = std::min(run.end_ns, to) - std::max(run.start_ns, from);
    if (run.end_ns > run.start_ns && inside > 0) {
      w.runs += static_cast<double>(inside) / static_cast<double>(run.end_ns - run.start_ns);
      covered += inside;
    }
  }
  // A release, a gate or a sleep inside the span leaves it mostly idle: its energy is not
  // the runs'.
  w.steady = w.steady && static_cast<double>(covered) >= 0.9 * static_cast<double>(to - from);
  return w;
}

/// The readings of the run that hold the counter, oldest first.
std::vector<telemetry::gpu_sample> counter_readings(run_state& run) {
  const sample_log& samples = run.samples;
  std::vector<telemetry::gpu_sample> out;
  for (auto& t : run.env.between(samples[0].time.start_ns, samples.back().time.end_ns)) {
    if (t.energy_mj.ok()) out.push_back(std::move(t));
  }
  return out;
}

/// The reading interval, and the counter's update period from its steps: the median time
/// between readings that saw a new value. When no reading saw the old value again, the counter
/// moved at least once per reading and its period is only bounded by the interval. Returns the
/// longest time the readings saw the counter stand still (first to last reading of one value).
double estimate_period(const std::vector<telemetry::gpu_sample>& readings, energy_figure& e) {
  std::vector<double> gaps;
  std::vector<double> steps;
  bool some_unchanged = false;
  std::int64_t last_change = -1;
  std::int64_t value_since = readings.front().time_ns;  // first reading of the current value
  double longest_still_ms = 0;
  for (std::size_t i = 1; i < readings.size(); ++i) {
    const auto& a = readings[i - 1];
    const auto& b = readings[i];
    gaps.push_back(static_cast<double>(b.time_ns - a.time_ns) / 1e6);
    if (b.energy_mj.value == a.energy_mj.value) {
      some_unchanged = true;
      longest_still_ms =
          std::max(longest_still_ms, static_cast<double>(b.time_ns - value_since) / 1e6);
      continue;
    }
    value_since = b.time_ns;
    if (last_change >= 0) steps.push_back(static_cast<double>(b.time_ns - last_change) / 1e6);
    last_change = b.time_ns;
  }
  e.reading_interval_ms = gaps.empty() ? 0 : stats::median(gaps);
  e.period_resolved = some_unchanged && !steps.empty();
  e.counter_period_ms = e.period_resolved ? stats::median(steps) : e.reading_interval_ms;
  e.period_source =
      e.period_resolved ? energy_period_source::readings : energy_period_source::reading_interval;
  return longest_still_ms;
}

/// Why this run contradicts the start-up probe's period, or empty: the readings saw the counter
/// stand still a telemetry tick or more beyond that period, or saw it move at every reading of a
/// shorter interval. The tick is the margin: the probe's period is good to a tick over its
/// steps, and a reading's time stamp to a few ms (its NVML call can wait behind another
/// GPU's), so a still of exactly the period is what a right probe gives at times.
std::string contradiction(double period_ms, double longest_still_ms, double tick_ms,
                          const energy_figure& e) {
  char text[240];
  if (longest_still_ms >= period_ms + tick_ms) {
    std::snprintf(text, sizeof text,
                  "the readings saw the counter stand still for %.1f ms, a telemetry period "
                  "(%.0f ms) or more beyond the start-up probe's %.1f ms",
                  longest_still_ms, tick_ms, period_ms);
    return text;
  }
  if (!e.period_resolved && period_ms > e.reading_interval_ms) {
    std::snprintf(text, sizeof text,
                  "the start-up probe's %.1f ms is longer than the readings' interval, at each "
                  "of which the counter had moved",
                  period_ms);
    return text;
  }
  return {};
}

/// The start-up probe's period when it learned one and this run does not contradict it (it
/// times the steps far more finely than readings a second apart); else the readings' own
/// estimate, with the reason the probe's was not used.
void choose_period(const std::optional<telemetry::energy_probe_result>& probe,
                   double longest_still_ms, double tick_ms, energy_figure& e) {
  if (!probe) return;
  if (!probe->period_ms) {
    e.period_note = "the start-up probe learned no period: " + probe->note;
    return;
  }
  e.period_note = contradiction(*probe->period_ms, longest_still_ms, tick_ms, e);
  if (!e.period_note.empty()) return;
  e.counter_period_ms = *probe->period_ms;
  e.period_resolved = probe->resolved;
  e.period_source = energy_period_source::probe;
}

/// One window's energy, time and runs, as it grows.
struct window {
  double joules = 0;
  double seconds = 0;
  double runs = 0;
};

}  // namespace

/// Windows of consecutive steady spans, each closed once it is window_min_ms long; the
/// J per run of each, and their mean with a Student-t CI.
std::optional<energy_figure> energy_with_uncertainty(run_state& run) {
  if (!run.r.conditions.gpu || run.samples.empty()) return std::nullopt;
  const auto readings = counter_readings(run);
  if (readings.size() < 2) return std::nullopt;
  energy_figure e;
  const double longest_still_ms = estimate_period(readings, e);
  const double tick_ms =
      std::chrono::duration<double, std::milli>(run.env.telemetry_period()).count();
  choose_period(run.r.energy_probe, longest_still_ms, tick_ms, e);
  e.window_min_ms = k_energy_window_periods * e.counter_period_ms;
  std::vector<double> per_run;
  window open;
  double joules = 0;
  std::size_t first = 0;
  for (std::size_t i = 1; i < readings.size(); ++i) {
    const auto& a = readings[i - 1];
    const auto& b = readings[i];
    const span_worth w = worth_between(run.samples, first, a.time_ns, b.time_ns);
    if (!w.steady || w.runs <= 0 || b.energy_mj.value < a.energy_mj.value) {
      open = {};  // a window holds measurement only, without a break
      continue;
    }
    open.joules += static_cast<double>(b.energy_mj.value - a.energy_mj.value) / 1000.0;
    open.seconds += seconds_between(a.time_ns, b.time_ns);
    open.runs += w.runs;
    if (open.seconds * 1000 < e.window_min_ms) continue;
    per_run.push_back(open.joules / open.runs);
    joules += open.joules;
    e.seconds += open.seconds;
    e.runs += open.runs;
    open = {};
  }
  if (per_run.empty()) return std::nullopt;
  e.windows = static_cast<int>(per_run.size());
  e.mean_power_w = joules / e.seconds;
  if (per_run.size() >= 2) {
    const stats::mean_interval ci = stats::mean_ci_student_t(per_run, run.o.ci_level);
    e.j_per_run = ci.mean;
    e.ci = std::pair{ci.lower, ci.upper};
  } else {
    e.j_per_run = per_run.front();
  }
  return e;
}

/// Over each pair of readings between which measurement runs filled at least 90 % of the
/// time, the energy divided by the runs' worth of time in that span.
std::optional<double> energy_per_run(run_state& run) {
  const sample_log& samples = run.samples;
  if (!run.r.conditions.gpu || samples.empty()) return std::nullopt;
  const auto readings = run.env.between(samples[0].time.start_ns, samples.back().time.end_ns);
  double joules = 0;
  double runs = 0;
  const telemetry::gpu_sample* previous = nullptr;
  std::size_t first = 0;  // first sample that may overlap the current span
  for (const auto& t : readings) {
    if (!t.energy_mj.ok()) continue;
    if (previous != nullptr) {
      const span_worth w = worth_between(samples, first, previous->time_ns, t.time_ns);
      if (w.steady && w.runs > 0 && t.energy_mj.value >= previous->energy_mj.value) {
        joules += static_cast<double>(t.energy_mj.value - previous->energy_mj.value) / 1000.0;
        runs += w.runs;
      }
    }
    previous = &t;
  }
  if (runs > 0) return joules / runs;
  return std::nullopt;
}

}  // namespace coolbench::measure::detail
