// The baselines the protocol is compared with (docs/measure.md): a plain loop (naive), TVM's
// time_evaluator rule (fixed-sleep) and nvbench's (clock-discard); and a host workload, which
// has no GPU state to gate on.
#include "measure/protocol/run.hpp"

namespace coolbench::measure::detail {

stop_reason run_baseline(run_state& run) {
  const protocol_options& o = run.o;
  run.w.prepare();
  // The peers warm up with a run or a few; one window here.
  for (int i = 0; i < o.warmup_min_runs; ++i) (void)take(run, sample_phase::warmup);
  run.measure_start_ns = run.now();
  int since_cooldown = 0;
  for (;;) {
    if (const auto stop = should_stop(run)) return *stop;
    // Baselines keep every sample (their throttle labels are evidence only), except what
    // nvbench's clock rule drops.
    const std::size_t i = take(run, sample_phase::measure);
    if (o.policy == sampling_policy::fixed_sleep && ++since_cooldown >= o.repeats_to_cooldown) {
      since_cooldown = 0;
      run.env.sleep_for(o.cooldown_interval);
    } else if (o.policy == sampling_policy::clock_discard) {
      const std::string reason = clock_discard_reason(run, run.samples[i].conditions);
      if (!reason.empty()) {
        run.samples.discard(i, reason);
        run.env.sleep_for(o.discard_sleep);
      }
    }
  }
}

stop_reason run_host(run_state& run) {
  run.w.prepare();
  (void)warm_up(run);
  run.measure_start_ns = run.now();
  for (;;) {
    if (const auto stop = should_stop(run)) return *stop;
    (void)take(run, sample_phase::measure);
  }
}

}  // namespace coolbench::measure::detail
