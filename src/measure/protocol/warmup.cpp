// Warm-up: the workload run until its latency settles at the full clock, before measuring;
// the short re-warm after each gate.
#include <cmath>
#include <span>

#include "coolbench/stats.hpp"
#include "measure/protocol/run.hpp"

namespace coolbench::measure::detail {

/// Runs until the median of the last window moves less than the tolerance against the window
/// before, and the SM clock is at its maximum. With `stop_at_throttle` (cold mode), returns
/// early once a throttle reason bit or time counter shows, after warmup_min_runs: warming on
/// would only heat the GPU in a state that is not measured. The clock alone does not count
/// here: it ramps up from idle during the first runs.
warmup_end warm_up(run_state& run, bool stop_at_throttle, std::string* why) {
  const protocol_options& o = run.o;
  const std::int64_t began = run.now();
  std::vector<double> recent;
  const auto window = static_cast<std::size_t>(std::max(1, o.warmup_window));
  for (;;) {
    stop_at_max_time(run);
    const sample_record& s = run.samples[take(run, sample_phase::warmup)];
    recent.push_back(s.time.latency_ms);
    const bool enough = static_cast<int>(recent.size()) >= o.warmup_min_runs;
    if (stop_at_throttle && enough &&
        (telemetry::is_throttling(s.conditions.reasons) || s.conditions.throttle_counter_moved)) {
      if (why != nullptr) *why = throttle_reason(run, s.conditions, o.clock_fraction);
      return warmup_end::throttled;
    }
    const bool clock_ok = throttle_reason(run, s.conditions, o.clock_fraction).empty();
    if (enough && recent.size() >= 2 * window && clock_ok) {
      const std::span<const double> all(recent);
      const double before = stats::median(all.subspan(all.size() - 2 * window, window));
      const double last = stats::median(all.subspan(all.size() - window, window));
      if (std::abs(last - before) <= o.warmup_tolerance * before) return warmup_end::settled;
    }
    if (run.now() - began > to_ns(o.warmup_max_time)) {
      run.say("warning: warm-up did not settle within " +
              std::to_string(o.warmup_max_time.count()) + " ms" +
              (clock_ok ? "" : " (the SM clock is below its maximum)") + "; measuring anyway");
      return warmup_end::time_limit;
    }
  }
}

void rewarm(run_state& run) {
  for (int i = 0; i < run.o.rewarm_runs; ++i) {
    stop_at_max_time(run);
    (void)take(run, sample_phase::warmup);
  }
}

void warm_up_after_gate(run_state& run, bool full) {
  run.warmed_in_full = full;
  if (!full) return rewarm(run);
  std::string why;
  if (warm_up(run, true, &why) != warmup_end::throttled) return;
  // The state the cold figure is about ended during the warm-up (a power-bound chain reaches
  // the cap in about 60 ms): cool again, so the first burst does not start capped.
  run.say("warm-up reached " + why + " after " + std::to_string(run.r.warmup_runs) +
          " runs; cooling before the first burst");
  gate(run);
  run.warmed_in_full = false;
  rewarm(run);
}

}  // namespace coolbench::measure::detail
