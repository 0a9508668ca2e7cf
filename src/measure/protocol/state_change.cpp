// The state-change watch of a cold burst: the telemetry read since the burst began says the
// GPU's state changed (a reason bit, a reason time counter, the clock, the temperature); the
// samples the change may have touched are discarded (or labelled).
#include <algorithm>
#include <optional>
#include <string>

#include "coolbench/stats.hpp"
#include "measure/protocol/run.hpp"

namespace coolbench::measure::detail {
namespace {

/// The burst's first samples, or the warm-up just before it in the same context (a change can
/// come within the burst's first samples: on the H200 a hot GPU slowed 7 % from the burst's
/// third sample): their median is what a step in latency is measured against.
std::optional<double> burst_baseline(const run_state& run, std::size_t first) {
  const sample_log& samples = run.samples;
  std::vector<double> head;
  for (std::size_t i = first; i > 0 && head.size() < 8; --i) {
    const auto& before = samples[i - 1];
    if (before.phase != sample_phase::warmup || before.context != samples[first].context) break;
    head.push_back(before.time.latency_ms);
  }
  if (head.size() < 3) {
    head.clear();
    for (std::size_t i = first; i < samples.size() && head.size() < 8; ++i) {
      head.push_back(samples[i].time.latency_ms);
    }
  }
  if (head.empty()) return std::nullopt;
  return stats::median(head);
}

/// A change the telemetry reported at `reported_ns`. A HW time counter that moved since its
/// previous reading, a second before at the protocol's settings, says the change came after
/// `hw_read_ns`; other readings are at most sensor_lag late.
struct reported_change {
  std::string why;
  std::int64_t reported_ns = 0;
  std::optional<std::int64_t> hw_read_ns;
};

/// The first sample of the burst (which began at `first`) that a change may have touched.
/// NVML reports late, so the latency locates the change: the first sample within sensor_lag
/// before the report (or since the HW counters' previous reading, if that is earlier) that is
/// step_threshold slower than the burst's baseline. Without such a step, the samples within
/// one telemetry period.
std::size_t first_touched(const run_state& run, std::size_t first, const reported_change& c) {
  const sample_log& samples = run.samples;
  const std::int64_t period = run.env.telemetry_period().count();
  std::int64_t search_from = c.reported_ns - to_ns(run.o.sensor_lag);
  if (c.hw_read_ns) search_from = std::min(search_from, *c.hw_read_ns);
  std::size_t by_period = samples.size();
  for (std::size_t i = first; i < samples.size(); ++i) {
    if (samples[i].time.end_ns >= c.reported_ns - period) {
      by_period = i;
      break;
    }
  }
  if (first >= samples.size()) return by_period;
  const auto baseline = burst_baseline(run, first);
  if (!baseline) return by_period;
  for (std::size_t i = first; i < by_period; ++i) {
    const auto& s = samples[i];
    if (s.time.end_ns < search_from) continue;
    if (s.time.latency_ms > *baseline * (1 + run.o.step_threshold)) return i;
  }
  return by_period;
}

bool hw_counters_read(const telemetry::clock_reason_counters& c) {
  return c.hw_thermal_ns.ok() || c.hw_power_brake_ns.ok();
}

/// What one telemetry sample says changed (`why` empty if nothing).
reported_change change_in(run_state& run, const telemetry::gpu_sample& t) {
  reported_change change;
  change.reported_ns = t.time_ns;
  sample_conditions c;
  if (t.clock_reasons.ok()) c.reasons = t.clock_reasons.value;
  if (t.clock_sm_mhz.ok()) c.sm_clock_mhz = t.clock_sm_mhz.value;
  if (run.burst_counters && counters_moved(*run.burst_counters, t.reason_counters)) {
    c.throttle_counter_moved = true;
    if (hw_counters_moved(*run.burst_counters, t.reason_counters)) {
      change.hw_read_ns = run.burst_hw_counters_ns;
    }
  }
  change.why = throttle_reason(run, c, run.o.clock_fraction);
  if (change.why.empty() && t.temp_gpu_c.ok() &&
      t.temp_gpu_c.value > run.o.target_temp_c + run.o.burst_temp_margin_c) {
    change.why = "temperature " + std::to_string(t.temp_gpu_c.value) + " C";
  }
  keep_counters(run.burst_counters, t.reason_counters);
  if (hw_counters_read(t.reason_counters)) run.burst_hw_counters_ns = t.time_ns;
  return change;
}

}  // namespace

std::string state_change_since(run_state& run, std::int64_t burst_start, std::size_t first) {
  if (run.burst_watched_from != burst_start) {
    // The counters as they stood when this burst began: their last reading before it (the HW
    // ones are read once a second), so a move within the burst's first second is seen too,
    // and time they gained in the gate or the re-warm before it is not the burst's.
    run.burst_watched_from = burst_start;
    run.burst_counters.reset();
    run.burst_hw_counters_ns.reset();
    constexpr std::int64_t before_ns = 2'000'000'000;
    for (const auto& t : run.env.between(burst_start - before_ns, burst_start - 1)) {
      keep_counters(run.burst_counters, t.reason_counters);
      if (hw_counters_read(t.reason_counters)) run.burst_hw_counters_ns = t.time_ns;
    }
  }
  for (const auto& t : run.env.between(burst_start, run.now())) {
    reported_change change = change_in(run, t);
    if (change.why.empty()) continue;
    for (std::size_t i = first_touched(run, first, change); i < run.samples.size(); ++i) {
      throttled_after_the_fact(run, i, change.why);
    }
    run.burst_counters.reset();
    run.burst_hw_counters_ns.reset();
    return change.why;
  }
  return {};
}

/// A burst ended because the GPU's state changed (a power-bound chain reaches the cap within
/// ~60 ms): every burst then ends with a release anyway, so the samples already come from many
/// contexts, and a burst is too short to give its context a figure of its own (on the H200 such
/// burst medians spread 8.7 %, docs/perf/thermal.md). From here on the figure is the median of
/// all kept samples, as with one context, and each gate re-warms with a few runs, not a full
/// warm-up that would spend the cold state.
void bursts_end_by_state_change(run_state& run) {
  if (run.contexts.bursts_end_by_state) return;
  run.contexts.bursts_end_by_state = true;
  run.say(
      "bursts end when the GPU's state changes: each is a fresh context already; the figure "
      "is the median of all bursts' samples");
}

/// The run's first burst, ended by a change of state, when it came straight after the full
/// warm-up: a power-bound chain spends its cold state (about 60 ms on the H200) in that
/// warm-up, so the burst began part-spent. On the H200 such first bursts read 0.2-2 % slower
/// than the later ones, with no reason bit and no step against the warm-up, which had drifted
/// up itself (docs/perf/thermal.md, 2026-12-04). Later bursts follow a short re-warm; this one
/// is discarded so that every kept sample does too. No gate runs within a burst, so
/// warmed_in_full still tells of the one before this burst (which began at sample `first`).
void drop_a_first_burst_after_the_full_warmup(run_state& run, std::size_t first) {
  if (run.r.bursts != 1 || !run.warmed_in_full) return;
  int dropped = 0;
  for (std::size_t i = first; i < run.samples.size(); ++i) {
    const sample_record& s = run.samples[i];
    if (s.phase != sample_phase::measure || !s.kept) continue;
    run.samples.discard(i, "first burst, after the full warm-up");
    ++dropped;
  }
  if (dropped == 0) return;
  run.next_check.all = 0;
  run.say("burst 1 came straight after the full warm-up, which spent part of the cold state: " +
          std::string("its ") + std::to_string(dropped) +
          " kept samples are discarded; later bursts follow a short re-warm");
}

}  // namespace coolbench::measure::detail
