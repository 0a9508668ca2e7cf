// One run of the protocol (docs/measure.md): the state its steps share, and the steps, each in
// its own file. A mode reads as the protocol: gate → warm-up → bursts of samples → stop; the
// summary follows (protocol.cpp).
//
//   sample_log.cpp    the samples and which of them count (the one place a sample is kept)
//   sample.cpp        one sample: run it, join its telemetry, say whether it was throttled
//   gate.cpp          release the GPU, wait until it is cool and unthrottled, re-acquire
//   warmup.cpp        warm up until the latency settles; the short re-warm after a gate
//   hidden_state.cpp  the sentinel's calibration and checks, the isolation between bursts
//   state_change.cpp  the telemetry says the GPU's state changed during a burst
//   stopping.cpp      the limits and the confidence interval; the contexts' share
//   modes/*.cpp       cold, sustained, profile, and the baselines
//   summarize.cpp     the figures, in one pass over the samples; energy.cpp the energy
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "coolbench/measure/protocol.hpp"
#include "coolbench/stats/mixture_ci.hpp"
#include "coolbench/telemetry/clock_reasons.hpp"

namespace coolbench::measure::detail {

inline constexpr std::int64_t k_ns_per_ms = 1'000'000;

[[nodiscard]] inline std::int64_t to_ns(std::chrono::milliseconds d) {
  return d.count() * k_ns_per_ms;
}
[[nodiscard]] double seconds_between(std::int64_t from_ns, std::int64_t to_ns);
/// "45 C".
[[nodiscard]] std::string format_c(double c);

/// The run ends early for a reason the result reports (Ctrl-C, the gate's time-out): thrown
/// by a step, caught where the run ends.
struct stop_run {
  stop_reason reason;
  std::string error;
};

/// The samples of a run, in order, and which of them count. Whether a sample is kept is its
/// `kept` field alone; the counts follow it, changed only here.
class sample_log {
 public:
  /// Appends `s` (counted when s.kept) and returns its index.
  std::size_t add(sample_record s);
  /// Takes sample `i` out of the result after the fact, labelling it throttled with `reason`
  /// unless it was already.
  void discard(std::size_t i, const std::string& reason);
  /// Labels sample `i` throttled with `reason` (unless it was already), keeping it.
  void label(std::size_t i, const std::string& reason);

  [[nodiscard]] const sample_record& operator[](std::size_t i) const { return m_samples[i]; }
  [[nodiscard]] std::size_t size() const { return m_samples.size(); }
  [[nodiscard]] bool empty() const { return m_samples.empty(); }
  [[nodiscard]] const sample_record& back() const { return m_samples.back(); }
  [[nodiscard]] const std::vector<sample_record>& all() const { return m_samples; }
  [[nodiscard]] std::vector<sample_record> release() && { return std::move(m_samples); }

  [[nodiscard]] int kept() const { return m_kept; }
  [[nodiscard]] int kept_in(int context) const;
  /// Contexts with a kept sample, and how many each has, in order.
  [[nodiscard]] const std::map<int, int>& kept_by_context() const { return m_kept_by_context; }
  [[nodiscard]] std::vector<double> kept_latencies() const;
  [[nodiscard]] std::vector<double> kept_latencies_in(int context) const;

 private:
  void count(const sample_record& s, int delta);

  std::vector<sample_record> m_samples;
  int m_kept = 0;
  std::map<int, int> m_kept_by_context;
};

/// What the steps of one run share.
struct run_state {
  run_state(workload& w, environment& env, const protocol_options& options,
            const progress_fn& progress);

  workload& w;
  environment& env;
  const protocol_options& o;
  const progress_fn& progress;

  run_result r;  ///< conditions, counters and warnings; the samples live in `samples`
  sample_log samples;

  // Settled before the first sample (protocol.cpp).
  throttle_action action = throttle_action::discard;  ///< the policy's, with its default
  double max_temp = 80;                               ///< the ceiling
  std::optional<unsigned> max_clock;                  ///< MHz, when the GPU says

  std::int64_t start_ns = 0;
  std::int64_t measure_start_ns = 0;

  struct context_state {
    int current = 0;          ///< the context samples are taken in now
    bool next_is_new = true;  ///< a release happened: the next sample starts a context
    /// A burst ended because the GPU's state changed: see bursts_end_by_state_change().
    bool bursts_end_by_state = false;
  } contexts;

  /// The confidence intervals cost a sort: they are looked at on a growing stride.
  struct check_stride {
    int all = 0;      ///< kept samples at which the run's CI is looked at next
    int context = 0;  ///< the same for the current context's CI
  } next_check;

  bool warmed_in_full = false;  ///< the last gate was followed by a full warm-up

  /// The reason time counters last seen, for the samples' conditions and for the burst's
  /// state-change watch.
  std::optional<telemetry::clock_reason_counters> sample_counters;
  std::optional<telemetry::clock_reason_counters> burst_counters;
  /// When the watch last saw the HW thermal / power-brake counters read: the sampler reads
  /// them on its slowest tier (every second), so a move they report may lie anywhere since.
  std::optional<std::int64_t> burst_hw_counters_ns;
  /// The start of the burst the counters above were taken for.
  std::optional<std::int64_t> burst_watched_from;

  /// The live status (measure()'s status_fn), at most every 100 ms; `label` names the
  /// workload in a matched A/B run.
  const status_fn* status = nullptr;
  std::string label;
  std::int64_t last_status_ns = 0;
  /// The CI half-width / the figure, as the stopping rule last saw it (for the status).
  mutable std::optional<double> ci_now;
  /// Calls the status function, unless it was called less than 100 ms ago.
  void report_status(const char* phase, int burst, std::optional<int> temp_c = std::nullopt);

  [[nodiscard]] std::int64_t now() const { return env.now_ns(); }
  /// A progress line.
  void say(const std::string& line) const;
  /// A warning kept in the result and said.
  void warn(std::string warning);
};

// protocol.cpp
/// The conditions, the throttle action, the ceiling and the clock: settled before the first
/// sample.
void settle_conditions(run_state& run);
/// The workload's release and the device's at the end, whatever happened.
void release_at_the_end(run_state& run);

// sample.cpp
/// Whether a reason time counter read in both advanced.
[[nodiscard]] bool counters_moved(const telemetry::clock_reason_counters& before,
                                  const telemetry::clock_reason_counters& after);
/// The same for the HW thermal and power-brake counters alone (read once a second).
[[nodiscard]] bool hw_counters_moved(const telemetry::clock_reason_counters& before,
                                     const telemetry::clock_reason_counters& after);
/// Keeps in `kept` each counter `now` read: the sampler reads the HW counters on its slower
/// tiers only (every second at the protocol's settings), so the ticks between leave them unread
/// and the last read value is what the next read is compared with.
void keep_counters(std::optional<telemetry::clock_reason_counters>& kept,
                   const telemetry::clock_reason_counters& now);
/// Why these conditions count as throttled under `clock_fraction`, or empty.
[[nodiscard]] std::string throttle_reason(const run_state& run, const sample_conditions& c,
                                          double clock_fraction);
/// nvbench's rule alone: the SM clock below discard_clock_fraction of the maximum, or empty.
[[nodiscard]] std::string clock_discard_reason(const run_state& run, const sample_conditions& c);
/// Runs the workload once and logs the sample; returns its index. Throws stop_run on Ctrl-C.
std::size_t take(run_state& run, sample_phase phase, int burst = 0);
/// A sample telemetry showed throttled after the fact: discarded or labelled, by the policy.
void throttled_after_the_fact(run_state& run, std::size_t i, const std::string& reason);

// gate.cpp
[[nodiscard]] std::optional<int> temperature(run_state& run);
/// The workload's resources, then the device (a context reset); nothing when the context is
/// kept.
void release_everything(run_state& run);
/// Sleeps until sensor_lag has passed since the last sample ended.
void wait_out_sensor_lag(run_state& run);
/// Releases the device (unless `already_released`), waits until the GPU is at or below the
/// target and reports no throttling, and re-acquires the workload.
void gate(run_state& run, bool already_released = false);
/// Whether the GPU is above the ceiling.
[[nodiscard]] bool over_ceiling(run_state& run);
/// Ceiling crossed: release, cool to the target, re-acquire, re-warm.
void pause_for_ceiling(run_state& run);

// hidden_state.cpp
/// A GPU run of the coolbench policy: a sentinel check as found, the isolation, the
/// calibration (5 checks) and the as-found check judged against it.
void calibrate_sentinel_at_start(run_state& run);
/// In the gate, before the workload is acquired again: a kept context isolated, a check, and
/// the isolation and a second check when it moved.
void check_sentinel_at_gate(run_state& run);
/// The same where a mode measures without a gate (sustained: after its release), so the
/// context it measures in has the sentinel's level before the workload runs.
void check_sentinel_before_measuring(run_state& run);
/// After the last sample: does the workload leave hidden state behind?
void check_sentinel_after_run(run_state& run);

// warmup.cpp
enum class warmup_end : std::uint8_t { settled, time_limit, throttled };
/// Runs until the median of the last window settles and the SM clock is at its maximum;
/// with `stop_at_throttle`, until a throttle reason shows (`why` says which).
warmup_end warm_up(run_state& run, bool stop_at_throttle = false, std::string* why = nullptr);
/// rewarm_runs runs, after a gate.
void rewarm(run_state& run);
/// After a gate: a full warm-up (stopped at the cap, which gates again and re-warms: a
/// power-bound chain spends its cold state warming), or the short re-warm.
void warm_up_after_gate(run_state& run, bool full);

// state_change.cpp
/// Looks at the telemetry read since the burst (which began at sample `first`) started; on a
/// change, marks the samples it may have touched and returns what changed, else empty.
[[nodiscard]] std::string state_change_since(run_state& run, std::int64_t burst_start,
                                             std::size_t first);
/// From here on every burst ends with a release anyway: see the definition.
void bursts_end_by_state_change(run_state& run);
/// Discards the first burst when it came straight after the full warm-up.
void drop_a_first_burst_after_the_full_warmup(run_state& run, std::size_t first);

// stopping.cpp
/// Whether the run is spread over contexts (protocol_options::contexts).
[[nodiscard]] bool spread_over_contexts(const run_state& run);
/// Whether it was, until its bursts began to end by a state change: each burst is a context
/// still, too short for context_min_samples; the figure is the pooled median.
[[nodiscard]] bool bursts_are_contexts(const run_state& run);
/// A burst's context counts towards the CI across bursts from this many kept samples (or
/// context_min_samples, if lower): a power-bound chain's bursts end at the cap, a few dozen
/// samples on the H200 and fewer for a longer chain.
inline constexpr int k_burst_min_samples = 5;
/// The CI of the mean of these contexts' medians (stats::mixture_mean_ci at ci_level and
/// level_spacing); empty with fewer than two.
[[nodiscard]] std::optional<stats::mixture_interval> contexts_interval(
    const run_state& run, const std::vector<context_figure>& figures);
/// The contexts with at least k_burst_min_samples kept samples, in order.
[[nodiscard]] std::vector<context_figure> burst_figures(const run_state& run);
/// Why the run should stop now, if it should: a limit, or the CI met. Spread over contexts,
/// the CI is looked at only at the end of a context (`at_context_end`).
[[nodiscard]] std::optional<stop_reason> should_stop(run_state& run, bool at_context_end = false);
/// --max-time bounds the whole run: called where the run waits or warms up (a gate, a
/// warm-up), it ends the run there, by stop_run{max_time}, once the time is spent. The run
/// then keeps what it measured, as at any other max-time stop.
void stop_at_max_time(const run_state& run);
/// Whether the current context has its share (context_min_samples kept, its CI met).
[[nodiscard]] bool context_done(run_state& run);
/// The contexts with at least context_min_samples kept samples, in order.
[[nodiscard]] std::vector<context_figure> context_figures(const run_state& run);
[[nodiscard]] std::vector<double> medians_of(const std::vector<context_figure>& figures);

// modes/*.cpp: each returns why it stopped.
[[nodiscard]] stop_reason run_cold(run_state& run);
[[nodiscard]] stop_reason run_sustained(run_state& run);
[[nodiscard]] stop_reason run_profile(run_state& run);
[[nodiscard]] stop_reason run_baseline(run_state& run);
/// A host workload: no GPU state to gate on.
[[nodiscard]] stop_reason run_host(run_state& run);
/// Whether the temperature moved at most soak_steady_c over the last soak_window.
[[nodiscard]] bool steady(run_state& run, std::int64_t since);

// summarize.cpp, energy.cpp, modes/profile.cpp
/// The run's figures from its samples, in one pass; then energy and the profile tables.
void summarize(run_state& run);
[[nodiscard]] std::optional<double> energy_per_run(run_state& run);
[[nodiscard]] std::optional<energy_figure> energy_with_uncertainty(run_state& run);
[[nodiscard]] latency_summary summarize_latencies(const std::vector<double>& values);

}  // namespace coolbench::measure::detail
