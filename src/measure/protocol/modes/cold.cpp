// Cold mode: the GPU in its best state. Gate, warm up, then bursts of samples, each ending as
// soon as the telemetry says the state changed (or the context has its share, or the burst is
// at its longest); a gate and a re-warm between bursts; stop on a limit or the CI.
#include "measure/protocol/run.hpp"

namespace coolbench::measure::detail {
namespace {

/// How a burst ended: what ended it, or why the run stops; whether the device was released.
struct burst_end {
  std::string ended_by;
  std::optional<stop_reason> stop;
  bool released = false;
};

bool burst_too_long(const run_state& run, std::int64_t burst_start) {
  return run.now() - burst_start > to_ns(run.o.max_burst);
}

/// A state change cut the burst: a first burst straight after the full warm-up goes too.
burst_end state_changed(run_state& run, std::size_t first, std::string why, bool released) {
  drop_a_first_burst_after_the_full_warmup(run, first);
  return {std::move(why), std::nullopt, released};
}

/// A burst that is one context of a run spread over several. It also ends once the context
/// has its share; the CI over contexts is looked at when one ends. NVML reports late (on the
/// H200 a hot GPU reached the cap 30 ms into a context with the power and clock still reading
/// idle): the context's samples are trusted only once the lag is out, and when a next context
/// comes, its release counts towards the lag.
burst_end context_burst(run_state& run, int burst, std::int64_t burst_start, std::size_t first) {
  for (;;) {
    (void)take(run, sample_phase::measure, burst);
    if (const auto limit = should_stop(run)) return {"", limit};
    if (std::string why = state_change_since(run, burst_start, first); !why.empty()) {
      bursts_end_by_state_change(run);
      return state_changed(run, first, std::move(why), false);
    }
    std::string ended;
    if (context_done(run)) {
      ended = "the context's share";
    } else if (burst_too_long(run, burst_start)) {
      ended = "longest burst";
    } else {
      continue;
    }
    const auto stop = should_stop(run, true);
    if (stop && *stop != stop_reason::converged) return {"", stop};
    if (!stop) release_everything(run);
    wait_out_sensor_lag(run);
    std::string late = state_change_since(run, burst_start, first);
    if (late.empty()) return {std::move(ended), stop, !stop};
    bursts_end_by_state_change(run);  // converged too early: measure on
    return state_changed(run, first, std::move(late), !stop);
  }
}

/// A burst of one context among many (or of the only one): it ends when the state changes or
/// at its longest. Before trusting the last samples of a run that stops, the lag is waited out
/// and the telemetry looked at once more.
burst_end plain_burst(run_state& run, int burst, std::int64_t burst_start, std::size_t first) {
  for (;;) {
    (void)take(run, sample_phase::measure, burst);
    if (const auto stop = should_stop(run)) {
      run.env.sleep_for(run.o.sensor_lag);
      std::string late = state_change_since(run, burst_start, first);
      if (late.empty() || *stop != stop_reason::converged) return {"", stop};
      run.next_check.all = 0;  // converged too early: measure on
      return state_changed(run, first, std::move(late), false);
    }
    if (std::string why = state_change_since(run, burst_start, first); !why.empty()) {
      return state_changed(run, first, std::move(why), false);
    }
    if (burst_too_long(run, burst_start)) return {"longest burst", std::nullopt};
  }
}

}  // namespace

stop_reason run_cold(run_state& run) {
  gate(run);
  warm_up_after_gate(run, true);
  run.measure_start_ns = run.now();
  for (;;) {
    const int burst = ++run.r.bursts;
    const std::int64_t burst_start = run.now();
    const std::size_t first = run.samples.size();
    const burst_end end = spread_over_contexts(run) ? context_burst(run, burst, burst_start, first)
                                                    : plain_burst(run, burst, burst_start, first);
    if (end.stop) return *end.stop;
    run.say("burst " + std::to_string(burst) + ": " + std::to_string(run.samples.size() - first) +
            " samples, ended by " + end.ended_by);
    // A new context is warmed up in full: its first runs load its kernels.
    const bool full = spread_over_contexts(run);
    gate(run, end.released);
    warm_up_after_gate(run, full);
  }
}

}  // namespace coolbench::measure::detail
