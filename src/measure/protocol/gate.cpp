// The gate: the GPU handed back, cooled to the target with nothing running, and free of the
// power controller's cap before the workload is acquired again.
#include "measure/protocol/run.hpp"

namespace coolbench::measure::detail {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

/// stop_at_max_time for the gate's waits: the time waited so far counts as gating.
void stop_gating_at_max_time(run_state& run, std::int64_t began) {
  try {
    stop_at_max_time(run);
  } catch (const stop_run&) {
    run.r.seconds_gating += seconds_between(began, run.now());
    throw;
  }
}

/// Waits until the GPU is at or below the target temperature.
void cool_to_target(run_state& run, std::int64_t began) {
  const protocol_options& o = run.o;
  auto t = temperature(run);
  if (!t) {
    run.say("warning: no GPU temperature reading; not gating on temperature");
  } else if (*t > o.target_temp_c) {
    run.say("gating: " + std::to_string(*t) + " C, waiting for " + format_c(o.target_temp_c) +
            (run.env.resets_context() ? " with the GPU released" : " with the context kept"));
  }
  while (t && *t > o.target_temp_c) {
    if (run.env.interrupted()) throw stop_run{stop_reason::interrupted, ""};
    stop_gating_at_max_time(run, began);
    if (run.now() - began > to_ns(o.gate_timeout)) {
      run.r.seconds_gating += seconds_between(began, run.now());
      throw stop_run{stop_reason::gate_timeout,
                     "the GPU stayed above " + format_c(o.target_temp_c) + " for " +
                         std::to_string(o.gate_timeout.count() / 1000) + " s (now at " +
                         std::to_string(*t) +
                         " C): raise --target-temp or --gate-timeout, or let the GPU cool"};
    }
    run.report_status("gating", run.r.bursts, t);
    run.env.sleep_for(milliseconds(200));
    t = temperature(run);
  }
}

/// The power controller keeps its average (and the cap bit) for a while after heavy work: a
/// burst started before it clears is capped at once. Waits for a fresh reading without it.
void wait_until_unthrottled(run_state& run, std::int64_t began) {
  const std::int64_t released = run.now();
  for (;;) {
    const auto s = run.env.latest();
    const bool fresh = s && s->time_ns >= released;
    if (!s ||
        (fresh && !(s->clock_reasons.ok() && telemetry::is_throttling(s->clock_reasons.value)))) {
      return;
    }
    if (run.env.interrupted()) throw stop_run{stop_reason::interrupted, ""};
    stop_gating_at_max_time(run, began);
    if (run.now() - began > to_ns(run.o.gate_timeout)) {
      run.r.seconds_gating += seconds_between(began, run.now());
      throw stop_run{stop_reason::gate_timeout,
                     "the GPU still reports throttling (" +
                         telemetry::clock_reasons_short(s->clock_reasons.value) +
                         ") with nothing running: raise --gate-timeout, or check `coolbench "
                         "who` for another process"};
    }
    run.env.sleep_for(run.env.telemetry_period().count() > 0 ? run.env.telemetry_period()
                                                             : nanoseconds(milliseconds(20)));
  }
}

}  // namespace

std::optional<int> temperature(run_state& run) {
  const auto s = run.env.latest();
  if (s && s->temp_gpu_c.ok()) return s->temp_gpu_c.value;
  return std::nullopt;
}

void release_everything(run_state& run) {
  if (!run.env.resets_context()) return;
  run.w.release();
  run.say(run.env.release_device());
  ++run.r.releases;
  run.contexts.next_is_new = true;
  run.next_check.context = 0;
}

void wait_out_sensor_lag(run_state& run) {
  if (run.samples.empty()) return;
  const std::int64_t until = run.samples.back().time.end_ns + to_ns(run.o.sensor_lag);
  const std::int64_t now = run.now();
  if (until > now) run.env.sleep_for(nanoseconds(until - now));
}

void gate(run_state& run, bool already_released) {
  if (!already_released) release_everything(run);
  const std::int64_t began = run.now();
  cool_to_target(run, began);
  wait_until_unthrottled(run, began);
  run.r.seconds_gating += seconds_between(began, run.now());
  check_sentinel_at_gate(run);
  run.w.prepare();
}

bool over_ceiling(run_state& run) {
  const auto t = temperature(run);
  return t && *t > run.max_temp;
}

void pause_for_ceiling(run_state& run) {
  ++run.r.pauses;
  run.say("pause: above the ceiling of " + format_c(run.max_temp));
  gate(run);
  warm_up_after_gate(run, false);
}

}  // namespace coolbench::measure::detail
