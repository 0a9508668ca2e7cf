/// @file
/// The records of a run of the protocol (docs/run-json.md): its samples with their telemetry,
/// the contexts' figures, the summary, why it stopped. The report renders them; they hold no
/// more than data and names, so that the report reads them without the protocol.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "coolbench/measure/hidden_state.hpp"
#include "coolbench/measure/options.hpp"
#include "coolbench/measure/timing.hpp"
#include "coolbench/telemetry/energy_probe.hpp"
#include "coolbench/telemetry/gpu.hpp"

namespace coolbench::measure {

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

/// "warmup", "measure", "soak".
[[nodiscard]] std::string to_string(sample_phase phase);

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

/// Where energy_figure::counter_period_ms comes from (docs/measure.md, "Energy").
enum class energy_period_source : std::uint8_t {
  readings,          ///< the run's own readings resolved it: some saw the old value again
  probe,             ///< the start-up probe learned it (run_result::energy_probe); the run agrees
  reading_interval,  ///< neither: every reading saw a new value, so the interval bounds it
};

/// "readings", "probe", "reading interval" (the JSON's spelling).
[[nodiscard]] std::string to_string(energy_period_source source);

/// Energy per inference from the GPU's total-energy counter (docs/measure.md, "Energy"): over
/// windows of measurement at least k_energy_window_periods of the counter's update period long.
struct energy_figure {
  double j_per_run = 0;                         ///< mean over the windows
  std::optional<std::pair<double, double>> ci;  ///< Student-t over the windows; 2 or more
  double mean_power_w = 0;                      ///< the windows' energy / their time
  int windows = 0;
  double seconds = 0;  ///< the windows' time in all
  double runs = 0;     ///< the runs in them (one straddling an end counts by its fraction)
  /// How often the counter moved: what the start-up probe learned, unless the run's readings
  /// contradict it; else the median time between the counter's steps in the readings, or, when
  /// every reading saw a new value, their interval, a bound. `period_resolved` is false for a
  /// bound ("at most"), the probe's included.
  double counter_period_ms = 0;
  bool period_resolved = false;
  energy_period_source period_source = energy_period_source::reading_interval;
  /// Why a probe that ran gave no period here; empty when it did, or none ran.
  std::string period_note;
  double reading_interval_ms = 0;  ///< median time between the counter's readings
  double window_min_ms = 0;        ///< the shortest window used
};

/// Windows span at least this many of the counter's update periods: the counter covers the
/// time up to its last update, so each end of a window is off by up to one period.
inline constexpr int k_energy_window_periods = 10;

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
  std::optional<double> energy_per_run_j;  ///< every steady span pooled (as energy's runs)
  std::optional<energy_figure> energy;     ///< with its uncertainty
  /// What the environment's start-up probe learned of the energy counter's period; empty
  /// where none ran (a CPU workload, a simulated GPU without one).
  std::optional<telemetry::energy_probe_result> energy_probe;
  std::optional<profile_result> profile;
  /// The hidden-state sentinel's calibration and checks; empty where the environment has no
  /// sentinel (a CPU workload, a baseline policy, a simulated GPU without one).
  std::optional<hidden_state_record> hidden_state;
};

}  // namespace coolbench::measure
