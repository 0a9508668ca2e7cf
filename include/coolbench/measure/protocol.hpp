/// @file
/// The measurement protocol (docs/measure.md): a latency figure that does not
/// depend on the GPU's temperature when the run started, and the evidence.
///
///   auto w = coolbench::measure::make_workload("gemm:fp16:128:2304:768:4", 0);
///   auto env = coolbench::measure::make_gpu_environment(0);
///   auto result = coolbench::measure::measure(*w, *env, {});   // cold mode, coolbench policy
///   // result.summary.median_ms, result.median_ci, result.samples (each with its telemetry)
///
/// Everything the protocol learns about the GPU comes through an
/// `environment`: the real one reads the telemetry sampler and releases the
/// device through the device layer; tests give it a simulated GPU.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coolbench/measure/workload.hpp"
#include "coolbench/telemetry/gpu.hpp"

namespace coolbench::measure {

/// `cold`: the GPU in its best state (gated, in bursts that end when the
/// state changes). `sustained`: heat-soak until the temperature is steady,
/// then measure at equilibrium. `profile`: from cold to hot, latency against
/// temperature and SM clock.
enum class run_mode : std::uint8_t { cold, sustained, profile };

/// How samples are taken. `naive`: a plain loop. `fixed_sleep`: TVM's
/// time_evaluator rule (sleep after every few repeats, never looking at the
/// temperature). `clock_discard`: nvbench's rule (drop a sample whose SM clock
/// is below a fraction of the maximum, then sleep). `coolbench`: the protocol.
enum class sampling_policy : std::uint8_t { naive, fixed_sleep, clock_discard, coolbench };

/// What to do with a sample taken while the GPU was throttled.
enum class throttle_action : std::uint8_t { discard, label };

[[nodiscard]] std::string to_string(run_mode mode);
[[nodiscard]] std::string to_string(sampling_policy policy);
[[nodiscard]] std::string to_string(throttle_action action);
/// Parse the names above; throw invalid_argument listing the valid ones.
[[nodiscard]] run_mode parse_run_mode(const std::string& text);
[[nodiscard]] sampling_policy parse_sampling_policy(const std::string& text);
[[nodiscard]] throttle_action parse_throttle_action(const std::string& text);

struct protocol_options {
  run_mode mode = run_mode::cold;
  sampling_policy policy = sampling_policy::coolbench;
  /// Default: discard in cold mode, label in sustained and profile modes
  /// (throttling is their subject).
  std::optional<throttle_action> on_throttle;

  // Gate and ceiling.
  double target_temp_c = 45;  ///< cool to this before measuring (and when paused)
  /// Pause (release, cool to target, re-acquire, re-warm) above this. Empty:
  /// the GPU's slowdown threshold less 10 °C, or 80 °C when unknown.
  std::optional<double> max_temp_c;
  std::chrono::milliseconds gate_timeout{std::chrono::minutes(5)};
  /// A sample is throttled below this fraction of the maximum SM clock, even
  /// without a reason bit.
  double clock_fraction = 0.97;

  // Warm-up: until the median of the last `warmup_window` runs moves less
  // than `warmup_tolerance`, at least `warmup_min_runs`, at most
  // `warmup_max_time` (then it goes on, saying so).
  int warmup_min_runs = 5;
  int warmup_window = 10;
  double warmup_tolerance = 0.01;
  std::chrono::milliseconds warmup_max_time{std::chrono::seconds(5)};
  int rewarm_runs = 3;  ///< after each re-acquire in cold mode

  // Stopping.
  double rel_ci = 0.005;  ///< CI half-width of the median, relative to it
  double ci_level = 0.95;
  int min_samples = 30;
  int max_samples = 1000000;
  std::chrono::milliseconds min_time{std::chrono::seconds(1)};
  std::chrono::milliseconds max_time{std::chrono::seconds(120)};

  // Cold mode: a burst ends when the state changes, when the temperature is
  // `burst_temp_margin_c` above the target, or after `max_burst`.
  double burst_temp_margin_c = 3;
  std::chrono::milliseconds max_burst{std::chrono::seconds(10)};
  /// How late NVML can report a change: on the H200 the power cap showed in
  /// the clock and reason bits 8 to 60 ms after the latency rose, and with a
  /// 100 ms window some capped samples were still kept (docs/perf/measure.md). When telemetry
  /// reports a change at time T, the burst's samples from the first one within this lag before T
  /// whose latency is `step_threshold` above the burst's first samples are discarded too (or,
  /// without such a step, those within one telemetry period of T).
  std::chrono::milliseconds sensor_lag{200};
  double step_threshold = 0.01;

  // Sustained mode: heat-soak until the temperature moved less than
  // `soak_steady_c` over `soak_window`, at most `soak_max_time`.
  double soak_steady_c = 1;
  std::chrono::milliseconds soak_window{std::chrono::seconds(10)};
  std::chrono::milliseconds soak_max_time{std::chrono::minutes(5)};

  // Profile mode: measure from cold for this long (or until steady, as soak).
  std::chrono::milliseconds profile_time{std::chrono::seconds(60)};
  double profile_temp_bucket_c = 2;
  double profile_clock_bucket_mhz = 30;

  // Baselines.
  std::chrono::milliseconds cooldown_interval{100};  ///< fixed_sleep: TVM's cooldown_interval_ms
  int repeats_to_cooldown = 10;                      ///< fixed_sleep
  double discard_clock_fraction = 0.75;              ///< clock_discard: nvbench's 75 %
  std::chrono::milliseconds discard_sleep{50};       ///< clock_discard: nvbench's 50 ms

  // Contexts: on the H200 a GEMM chain's latency differs by up to 3%
  // between CUDA contexts with every sensor reading the same, and stays put
  // within one (docs/perf/thermal.md): a figure from one context is one draw.
  // With `contexts` of 2 or more (coolbench policy, cold mode), the
  // measurement is spread over at least that many contexts (a device release
  // and a full warm-up between them; a context ends once its own median's CI
  // meets rel_ci, after `context_min_samples`), the figure is the mean of the
  // per-context medians and the stopping rule asks its Student-t CI to meet
  // rel_ci (more contexts are added until it does, or a limit stops the run).
  int contexts = 1;
  int context_min_samples = 30;

  std::uint64_t seed = 1;  ///< for the bootstrap
};

/// The contexts `coolbench run` and the Python module ask for in cold mode
/// with the coolbench policy. The H200's per-context levels
/// (docs/perf/thermal.md) make one context's figure one draw; at five
/// contexts the t interval is ±1.24 standard deviations of their medians, at
/// three it would be ±2.48. More are added until the CI meets rel_ci.
inline constexpr int default_cold_contexts = 5;

/// Throws invalid_argument naming the first impossible setting (min above
/// max, a fraction outside (0, 1], a non-positive time).
void validate(const protocol_options& options);

/// The telemetry that overlapped one sample.
struct sample_conditions {
  std::optional<int> temp_c;             ///< highest GPU temperature seen
  std::optional<unsigned> sm_clock_mhz;  ///< lowest SM clock seen
  std::optional<double> power_w;         ///< highest power seen
  std::uint64_t reasons = 0;             ///< clock-event reason bits, OR-ed
  bool throttle_counter_moved = false;   ///< a throttle time counter advanced
  int telemetry_samples = 0;             ///< how many were joined
};

enum class sample_phase : std::uint8_t { warmup, measure, soak };

struct sample_record {
  timing time;
  sample_phase phase = sample_phase::measure;
  int burst = 0;    ///< cold mode: which burst; 0 otherwise
  int context = 0;  ///< which CUDA context it ran in: 1, then +1 after each device release
  sample_conditions conditions;
  bool throttled = false;
  std::string throttle_reason;  ///< "sw_power_cap", "clock 1755 < 0.97 × 1980 MHz", …
  bool kept = true;             ///< counted in the result
};

/// Why a run ended. Set once, where the run ends: the mode returns it, or the
/// step that cut the run short says it.
enum class stop_reason : std::uint8_t {
  converged,  ///< the CI (over contexts, when spread) met rel_ci
  max_time,   ///< the limits
  max_samples,
  profile_time,  ///< profile mode: its time, a steady temperature, the ceiling
  steady_temperature,
  ceiling,
  interrupted,    ///< Ctrl-C (incomplete)
  gate_timeout,   ///< the GPU did not cool in time (incomplete)
  invalid_input,  ///< the workload refused what it was given: an unbound model dimension
  error,          ///< a failure part-way (incomplete)
  stopped,        ///< no run yet
};

/// "converged", "max time", "max samples", "profile time", "steady temperature", "ceiling",
/// "interrupted", "gate time-out", "invalid input", "error", "stopped": the JSON's and the
/// Python module's spelling.
[[nodiscard]] std::string to_string(stop_reason reason);

/// What the GPU is, and what else runs on it, recorded before measuring.
struct run_conditions {
  std::optional<telemetry::gpu_identity> gpu;
  std::vector<telemetry::gpu_process> other_processes;
  std::vector<std::string> warnings;  ///< e.g. "another process uses the GPU"
  std::optional<double> start_temp_c;
};

struct latency_summary {
  int count = 0;
  double median_ms = 0;
  double mean_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  double p90_ms = 0;
  double p99_ms = 0;
  double cv = 0;  ///< stddev / mean
};

/// One row of a profile table.
struct profile_bucket {
  double from = 0;  ///< °C or MHz, inclusive
  double to = 0;    ///< exclusive
  int count = 0;
  double median_ms = 0;
  double vs_coolest = 0;  ///< median / the coolest (or fastest-clock) bucket's median − 1
};

struct profile_result {
  std::vector<profile_bucket> by_temperature;
  std::vector<profile_bucket> by_clock;
  /// Hottest bucket's median / the warm-up's − 1 (without a warm-up: / the
  /// coolest bucket's). The warm-up ran cold right after the gate; the
  /// coolest bucket can hold runs NVML had not yet seen change state.
  double derate = 0;
  std::optional<double> ms_per_c;        ///< least-squares slope of latency on temperature
  std::optional<double> pct_per_100mhz;  ///< slope on SM clock, % of the mean per 100 MHz
  /// The median of the warm-up's last window, in the context measuring began in.
  std::optional<double> warmup_median_ms;
  /// The fastest-clock and the coolest bucket's medians against the warm-up's
  /// − 1. Well above 0 when the GPU changed state before NVML reported it:
  /// the H200's power cap showed ~130 ms late, so capped runs were labelled
  /// with the full clock and the cold temperature (a warning then says so).
  std::optional<double> fastest_clock_vs_warmup;
  std::optional<double> coolest_temp_vs_warmup;
};

/// One context's part of a run spread over several (protocol_options::contexts).
struct context_figure {
  int context = 0;  ///< as sample_record::context
  int samples = 0;  ///< kept measurement samples
  double median_ms = 0;
};

/// The figure of a run spread over several contexts.
struct context_summary {
  /// Contexts with at least context_min_samples kept samples, in order.
  std::vector<context_figure> per_context;
  double mean_ms = 0;  ///< mean of their medians: the run's figure
  /// Student-t interval of that mean at ci_level; empty with one context.
  std::optional<std::pair<double, double>> ci;
  double spread = 0;  ///< slowest context's median / fastest's − 1
  double cv = 0;      ///< stddev / mean of the medians
};

struct run_result {
  std::string workload;
  protocol_options options;
  run_conditions conditions;
  std::vector<sample_record> samples;

  latency_summary summary;                             ///< of the kept measurement samples
  std::optional<std::pair<double, double>> median_ci;  ///< lower, upper (ms)
  /// With protocol_options::contexts >= 2: the per-context figures, their
  /// mean (the run's figure) and its CI. `summary` and `median_ci` stay those
  /// of all kept samples pooled.
  std::optional<context_summary> contexts;
  /// The smallest difference between two kept latencies (ms): at most the
  /// timer's tick. Empty with fewer than two distinct values.
  std::optional<double> timer_step_ms;
  /// What the measurement found that a reader of its figure should know,
  /// e.g. that the timer's step is no finer than --rel-ci.
  std::vector<std::string> warnings;
  bool converged = false;  ///< the CI (over contexts, with contexts >= 2) met rel_ci
  measure::stop_reason stop_reason = measure::stop_reason::stopped;
  bool complete = true;  ///< false when interrupted or a fatal error cut it short
  std::string error;     ///< what cut it short

  int discarded = 0;
  std::vector<std::pair<std::string, int>> discarded_by_reason;
  std::optional<latency_summary> throttled_summary;  ///< label policy: the throttled ones
  std::optional<std::pair<int, int>> temp_range_c;   ///< of the kept samples
  std::optional<std::pair<unsigned, unsigned>> clock_range_mhz;
  double seconds_total = 0;
  double seconds_gating = 0;  ///< waiting for the GPU to cool
  int warmup_runs = 0;
  int bursts = 0;
  int pauses = 0;    ///< ceiling crossings
  int releases = 0;  ///< device releases done
  /// What the release at the end of the run did ("release: freed 1030 MiB,
  /// context reset, 79 ms, process no longer listed on the GPU"), or why it
  /// failed; empty for a CPU workload.
  std::string final_release;
  std::optional<double> energy_per_run_j;
  std::optional<profile_result> profile;
};

/// The protocol's view of the machine.
class environment {
 public:
  virtual ~environment() = default;
  [[nodiscard]] virtual std::int64_t now_ns() = 0;
  virtual void sleep_for(std::chrono::nanoseconds duration) = 0;
  /// Identity, other processes; empty gpu for a CPU-only environment.
  [[nodiscard]] virtual run_conditions conditions() = 0;
  /// The newest telemetry sample, if any.
  [[nodiscard]] virtual std::optional<telemetry::gpu_sample> latest() = 0;
  /// Telemetry samples with from_ns <= time <= to_ns, oldest first.
  [[nodiscard]] virtual std::vector<telemetry::gpu_sample> between(std::int64_t from_ns,
                                                                   std::int64_t to_ns) = 0;
  /// The telemetry period (how far back a sample's conditions look).
  [[nodiscard]] virtual std::chrono::nanoseconds telemetry_period() const = 0;
  /// Hands the GPU back (the workload has released its resources first).
  /// Returns a line for the report.
  virtual std::string release_device() = 0;
  /// Whether release_device() resets the CUDA context. False when the
  /// measured code's framework holds the context (context_release::keep):
  /// then the protocol neither releases the workload between bursts nor
  /// spreads the run over contexts.
  [[nodiscard]] virtual bool resets_context() const { return true; }
  /// True once the user asked to stop (Ctrl-C).
  [[nodiscard]] virtual bool interrupted() = 0;
};

/// What the real environment does when the protocol hands the GPU back.
/// `reset`: device::release(), a context reset (refused while memory that
/// coolbench did not allocate is live in the process). `keep`: nothing; for
/// code whose framework cannot survive a reset of its context (PyTorch,
/// CuPy): the GPU then cools with the context held (on the H200 an idle
/// context costs +43 W and keeps the SM clock at its maximum), and state
/// that no sensor shows is not cleared between bursts (docs/measure.md).
enum class context_release : std::uint8_t { reset, keep };

[[nodiscard]] std::string to_string(context_release release);
/// "reset" or "keep"; throws invalid_argument naming both.
[[nodiscard]] context_release parse_context_release(const std::string& text);

/// The real environment: a telemetry sampler on GPU `ordinal` (started here,
/// stopped on destruction) and, with context_release::reset,
/// device::release(). `interrupted` is polled between samples.
[[nodiscard]] std::unique_ptr<environment> make_gpu_environment(
    int ordinal, std::chrono::milliseconds telemetry_period = std::chrono::milliseconds(20),
    std::function<bool()> interrupted = {}, context_release release = context_release::reset);

/// For CPU workloads: host clock, no telemetry, nothing to release.
[[nodiscard]] std::unique_ptr<environment> make_cpu_environment(
    std::function<bool()> interrupted = {});

/// Progress lines ("gating: 52 °C → 45 °C", "burst 3: 212 samples"), for the CLI.
using progress_fn = std::function<void(const std::string&)>;

/// Runs the protocol. Never throws for what happens during the run (a GPU
/// that disappears, out of memory; stop_reason "error") or for what the
/// workload refuses when prepared (stop_reason "invalid input"): the result
/// says complete = false and keeps what was measured. Throws
/// invalid_argument for bad options.
[[nodiscard]] run_result measure(workload& w, environment& env, const protocol_options& options,
                                 const progress_fn& progress = {});

}  // namespace coolbench::measure
