// One sample: the workload run once, the telemetry that overlapped it joined, and whether the
// GPU was throttled while it ran.
#include <algorithm>
#include <sstream>

#include "measure/protocol/run.hpp"

namespace coolbench::measure::detail {
namespace {

bool counter_moved(const telemetry::reading<std::uint64_t>& before,
                   const telemetry::reading<std::uint64_t>& after) {
  return before.ok() && after.ok() && after.value > before.value;
}

/// The telemetry samples from one period before the run to its end, joined: the highest
/// temperature and power, the lowest clock, the reasons OR-ed.
sample_conditions join(run_state& run, const timing& t) {
  sample_conditions c;
  if (!run.r.conditions.gpu) return c;
  const std::int64_t period = run.env.telemetry_period().count();
  for (const auto& s : run.env.between(t.start_ns - period, t.end_ns)) {
    ++c.telemetry_samples;
    if (s.temp_gpu_c.ok())
      c.temp_c = std::max(c.temp_c.value_or(s.temp_gpu_c.value), s.temp_gpu_c.value);
    if (s.clock_sm_mhz.ok()) {
      c.sm_clock_mhz =
          std::min(c.sm_clock_mhz.value_or(s.clock_sm_mhz.value), s.clock_sm_mhz.value);
    }
    if (s.power_w.ok()) c.power_w = std::max(c.power_w.value_or(s.power_w.value), s.power_w.value);
    if (s.clock_reasons.ok()) c.reasons |= s.clock_reasons.value;
    if (run.sample_counters && counters_moved(*run.sample_counters, s.reason_counters)) {
      c.throttle_counter_moved = true;
    }
    keep_counters(run.sample_counters, s.reason_counters);
  }
  return c;
}

/// "SM clock 1755 < 0.97 x 1980 MHz" when the clock is below `fraction` of the maximum.
std::string clock_below(const run_state& run, const sample_conditions& c, double fraction) {
  if (!run.max_clock || !c.sm_clock_mhz ||
      static_cast<double>(*c.sm_clock_mhz) >= fraction * static_cast<double>(*run.max_clock)) {
    return {};
  }
  std::ostringstream s;
  s << "SM clock " << *c.sm_clock_mhz << " < " << fraction << " x " << *run.max_clock << " MHz";
  return s.str();
}

}  // namespace

bool hw_counters_moved(const telemetry::clock_reason_counters& before,
                       const telemetry::clock_reason_counters& after) {
  return counter_moved(before.hw_thermal_ns, after.hw_thermal_ns) ||
         counter_moved(before.hw_power_brake_ns, after.hw_power_brake_ns);
}

bool counters_moved(const telemetry::clock_reason_counters& before,
                    const telemetry::clock_reason_counters& after) {
  return counter_moved(before.sw_power_cap_ns, after.sw_power_cap_ns) ||
         counter_moved(before.sw_thermal_ns, after.sw_thermal_ns) ||
         hw_counters_moved(before, after);
}

void keep_counters(std::optional<telemetry::clock_reason_counters>& kept,
                   const telemetry::clock_reason_counters& now) {
  if (!kept) kept.emplace();
  for (auto field : {&telemetry::clock_reason_counters::sw_power_cap_ns,
                     &telemetry::clock_reason_counters::sync_boost_ns,
                     &telemetry::clock_reason_counters::sw_thermal_ns,
                     &telemetry::clock_reason_counters::hw_thermal_ns,
                     &telemetry::clock_reason_counters::hw_power_brake_ns}) {
    if ((now.*field).ok()) (*kept).*field = now.*field;
  }
}

std::string throttle_reason(const run_state& run, const sample_conditions& c,
                            double clock_fraction) {
  if (telemetry::is_throttling(c.reasons)) {
    std::string names;
    for (const auto& name :
         telemetry::clock_reason_names(c.reasons & telemetry::throttling_reason_mask())) {
      names += (names.empty() ? "" : ",") + name;
    }
    return names;
  }
  if (c.throttle_counter_moved) return "throttle time counter advanced";
  return clock_below(run, c, clock_fraction);
}

std::string clock_discard_reason(const run_state& run, const sample_conditions& c) {
  return clock_below(run, c, run.o.discard_clock_fraction);
}

std::size_t take(run_state& run, sample_phase phase, int burst) {
  if (run.env.interrupted()) throw stop_run{stop_reason::interrupted, ""};
  sample_record s;
  s.time = run.w.run();
  s.phase = phase;
  s.burst = burst;
  if (run.contexts.next_is_new) {
    ++run.contexts.current;
    run.contexts.next_is_new = false;
  }
  s.context = run.contexts.current;
  s.conditions = join(run, s.time);
  s.throttle_reason = throttle_reason(run, s.conditions, run.o.clock_fraction);
  s.throttled = !s.throttle_reason.empty();
  s.kept = phase == sample_phase::measure && (!s.throttled || run.action == throttle_action::label);
  if (phase == sample_phase::warmup) ++run.r.warmup_runs;
  const std::size_t i = run.samples.add(std::move(s));
  if (run.status != nullptr) {
    const auto& added = run.samples[i];
    run.report_status(phase == sample_phase::warmup ? "warm-up"
                      : phase == sample_phase::soak ? "soak"
                                                    : "measuring",
                      burst, added.conditions.temp_c);
  }
  return i;
}

void throttled_after_the_fact(run_state& run, std::size_t i, const std::string& reason) {
  if (run.action == throttle_action::discard) {
    run.samples.discard(i, reason);
  } else {
    run.samples.label(i, reason);
  }
}

}  // namespace coolbench::measure::detail
