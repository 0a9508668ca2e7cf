// Sustained mode: the GPU at equilibrium. Release, heat-soak until the temperature is steady,
// then measure (throttled samples labelled by default), pausing at the ceiling; stop on a limit
// or the CI.
#include <algorithm>

#include "measure/protocol/run.hpp"

namespace coolbench::measure::detail {
namespace {

/// Runs soak samples until the temperature is steady or soak_max_time has passed.
void heat_soak(run_state& run) {
  const protocol_options& o = run.o;
  const std::int64_t began = run.now();
  run.say("heat-soak: until the temperature moves less than " + format_c(o.soak_steady_c) +
          " over " + std::to_string(o.soak_window.count() / 1000) + " s");
  while (!steady(run, began)) {
    (void)take(run, sample_phase::soak);
    if (run.now() - began > to_ns(o.soak_max_time)) {
      run.say("warning: not steady after the soak limit; measuring anyway");
      return;
    }
    if (over_ceiling(run)) pause_for_ceiling(run);
  }
}

}  // namespace

bool steady(run_state& run, std::int64_t since) {
  const protocol_options& o = run.o;
  const std::int64_t now = run.now();
  if (now - since < to_ns(o.soak_window)) return false;
  int low = 1000;
  int high = -1000;
  for (const auto& t : run.env.between(now - to_ns(o.soak_window), now)) {
    if (!t.temp_gpu_c.ok()) continue;
    low = std::min(low, t.temp_gpu_c.value);
    high = std::max(high, t.temp_gpu_c.value);
  }
  return high >= low && high - low <= o.soak_steady_c;
}

stop_reason run_sustained(run_state& run) {
  // Not gated (the soak heats anyway), but isolated: a release first, so what ran earlier in
  // this process leaves no state hidden from the sensors (a small L1 after a large
  // shared-memory kernel, docs/facts-h200.md §4).
  release_everything(run);
  check_sentinel_before_measuring(run);
  run.w.prepare();
  heat_soak(run);
  run.measure_start_ns = run.now();
  for (;;) {
    if (const auto stop = should_stop(run)) return *stop;
    (void)take(run, sample_phase::measure);
    if (over_ceiling(run)) pause_for_ceiling(run);
  }
}

}  // namespace coolbench::measure::detail
