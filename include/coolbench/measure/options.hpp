/// @file
/// The protocol's options (docs/measure.md): what a run is asked to do, each option that a
/// user sets written once in a table (name, kind, unit, help line, allowed range) from which
/// `coolbench run`'s options and the Python module's keywords are made, and the check of a
/// whole set. A message names an option by its table name (`rel_ci`); the command line spells
/// it as its flag (`--rel-ci`).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

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
/// What clears hidden state (docs/measure.md, "Hidden state") between workloads and, for a
/// kept context, between bursts. `none`: nothing. `release`: device::release() and re-acquire
/// (a context reset). `touch`: another process makes a CUDA context and exits; the context
/// here lives on, so it also serves a context a framework keeps. `process`: each workload in
/// a process of its own (`coolbench run` with several workloads).
enum class isolation : std::uint8_t { none, release, touch, process };

/// The hidden-state sentinel (docs/measure.md, "Hidden state"). `gemm_chain`: GPT-2 small's 48
/// fp16 GEMMs through cuBLASLt, the kind of latency-bound chain the state was seen to move.
/// `l1_walk`: dependent loads through a 64 KiB table in L1, the first candidate. `none`: no
/// sentinel (no checks, no isolation because of one; the isolation at the start still runs).
enum class sentinel_kind : std::uint8_t { gemm_chain, l1_walk, none };

[[nodiscard]] std::string to_string(run_mode mode);
[[nodiscard]] std::string to_string(sampling_policy policy);
[[nodiscard]] std::string to_string(throttle_action action);
[[nodiscard]] std::string to_string(isolation i);
[[nodiscard]] std::string to_string(sentinel_kind kind);
/// Parse the names above; throw invalid_argument listing the valid ones.
[[nodiscard]] run_mode parse_run_mode(const std::string& text);
[[nodiscard]] sampling_policy parse_sampling_policy(const std::string& text);
[[nodiscard]] throttle_action parse_throttle_action(const std::string& text);
[[nodiscard]] isolation parse_isolation(const std::string& text);
[[nodiscard]] sentinel_kind parse_sentinel_kind(const std::string& text);
/// The valid names, in the order messages list them.
[[nodiscard]] std::vector<std::string> run_mode_names();
[[nodiscard]] std::vector<std::string> sampling_policy_names();
[[nodiscard]] std::vector<std::string> throttle_action_names();
[[nodiscard]] std::vector<std::string> isolation_names();
[[nodiscard]] std::vector<std::string> sentinel_kind_names();
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
  // per-context medians and the stopping rule asks its CI to meet rel_ci
  // (more contexts are added until it does, or a limit stops the run). The
  // CI is stats::mixture_mean_ci: the medians may fall on a few levels, and
  // a level up to `level_spacing` (a fraction of the figure) away may not
  // have shown yet (docs/stats.md, "Mean over a few levels").
  int contexts = 1;
  int context_min_samples = 30;
  double level_spacing = 0.03;
  // Hidden state (docs/measure.md, "Hidden state"): what clears it at the start of a run, between
  // a kept context's bursts, and before a burst whose sentinel moved.
  measure::isolation isolation = measure::isolation::touch;
  measure::sentinel_kind sentinel = measure::sentinel_kind::gemm_chain;

  std::uint64_t seed = 1;  ///< for the bootstrap
};

/// The contexts a cold run of the coolbench policy is spread over unless told otherwise, by
/// `coolbench run` and the Python module alike. The H200's per-context levels
/// (docs/perf/thermal.md) make one context's figure one draw; at five contexts the t interval
/// is ±1.24 standard deviations of their medians, at three it would be ±2.48. More are added
/// until the CI meets rel_ci.
inline constexpr int default_cold_contexts = 5;

/// The contexts a run is spread over when the user does not say: default_cold_contexts in cold
/// mode with the coolbench policy where the context is reset between bursts, else 1.
[[nodiscard]] int default_contexts(run_mode mode, sampling_policy policy, bool resets_context);

/// How an option is written. Times are given in seconds and kept in milliseconds.
enum class option_kind : std::uint8_t { integer, number, seconds, name };

/// An option's value as a user gives it: a whole number, a number (seconds for times), a name.
using option_value = std::variant<std::int64_t, double, std::string>;

/// One option a user sets, written once: `coolbench run --NAME` (underscores as dashes) and the
/// Python keyword NAME are made from it.
struct option_spec {
  std::string_view name;  ///< "rel_ci"
  option_kind kind = option_kind::number;
  std::string_view unit;  ///< "s", "C" or empty
  std::string_view help;  ///< one line
  double low = 0;         ///< allowed values: low <= v <= high (< with an open end)
  double high = 0;
  bool low_open = false;
  bool high_open = false;
  /// Unset by default: the protocol derives the value (max_temp, on_throttle, contexts).
  bool derived_default = false;
  /// kind name: the valid names.
  std::function<std::vector<std::string>()> names;
  /// The value in `o`, in the user's unit; empty while unset.
  std::function<std::optional<option_value>(const protocol_options& o)> get;
  /// Sets the value, in the user's unit, already checked.
  std::function<void(protocol_options& o, const option_value& v)> set;
};

/// Every option a user sets, in the order `coolbench run --help` lists them.
[[nodiscard]] std::span<const option_spec> option_table();
/// The entry named `name`; throws invalid_argument for an unknown name.
[[nodiscard]] const option_spec& find_option(std::string_view name);

/// How a message spells an option: its table name (Python) or its flag (the command line).
using option_spelling = std::function<std::string(std::string_view name)>;
/// "rel_ci" → "rel_ci".
[[nodiscard]] std::string option_name(std::string_view name);
/// "rel_ci" → "--rel-ci".
[[nodiscard]] std::string option_flag(std::string_view name);

/// The options a user gave (table names and values, the others left at their defaults), the
/// default contexts rule applied, checked. Throws invalid_argument naming the option as
/// `spelling` writes it.
[[nodiscard]] protocol_options options_from(
    const std::vector<std::pair<std::string, option_value>>& given, bool resets_context,
    const option_spelling& spelling = option_name);

/// Throws invalid_argument naming the first impossible setting (a value outside its range, min
/// above max, a fraction outside (0, 1], a non-positive time), options spelled by `spelling`.
void validate(const protocol_options& options, const option_spelling& spelling = option_name);

}  // namespace coolbench::measure
