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

#include "coolbench/measure/options.hpp"
#include "coolbench/measure/result.hpp"
#include "coolbench/measure/workload.hpp"
#include "coolbench/telemetry/energy_probe.hpp"
#include "coolbench/telemetry/gpu.hpp"

namespace coolbench::measure {

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
  /// One check of the hidden-state sentinel `kind` (docs/measure.md, "Hidden state"): its
  /// median in ms and the context it ran in, or empty where the environment has none.
  [[nodiscard]] virtual std::optional<sentinel_reading> check_sentinel(sentinel_kind kind) {
    (void)kind;
    return std::nullopt;
  }
  /// What the environment learned at its start of how often the GPU's energy counter moves
  /// (telemetry::energy_period_probe; docs/measure.md, "Energy"), waiting for the probe to
  /// finish (at most about a second); empty where it did not try (a CPU environment, a
  /// simulated GPU without a probe).
  [[nodiscard]] virtual std::optional<telemetry::energy_probe_result> energy_counter_probe() {
    return std::nullopt;
  }
  /// Clears hidden state the way `how` says (the workload has released its resources first
  /// when `how` is release); a line for the report, empty when nothing was done.
  virtual std::string isolate(isolation how) {
    (void)how;
    return {};
  }
};

/// What the real environment does when the protocol hands the GPU back.
/// `reset`: device::release(), a context reset (refused while memory that
/// coolbench did not allocate is live in the process). `keep`: nothing; for
/// code whose framework cannot survive a reset of its context (PyTorch,
/// CuPy): the GPU then cools with the context held (on the H200 an idle
/// context costs +43 W and keeps the SM clock at its maximum), and state
/// that no sensor shows is not cleared between bursts (docs/measure.md).
/// `process`: nothing in this process; the measured code runs in a process
/// of its own, which the workload's release() ends, so each context is a
/// fresh process (`coolbench exec`, make_command_workload).
enum class context_release : std::uint8_t { reset, keep, process };

[[nodiscard]] std::string to_string(context_release release);
/// "reset" or "keep" (`process` is the command workload's, not a user's choice); throws
/// invalid_argument naming both.
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

/// Where a run is, for a live progress line: what it does now and how far it got.
struct run_status {
  std::string phase;  ///< "gating", "warm-up", "measuring", "soak"
  std::string label;  ///< which workload of a matched A/B run ("A", "B"); else empty
  std::optional<int> temp_c;
  double target_temp_c = 0;
  int burst = 0;
  int kept = 0;
  /// The figure's CI half-width / the figure, as last looked at; empty before.
  std::optional<double> rel_ci_now;
  double elapsed_s = 0;
};

/// Called now and then (at most every 100 ms of the run's clock) with where the run is.
using status_fn = std::function<void(const run_status&)>;

/// Runs the protocol. Never throws for what happens during the run (a GPU
/// that disappears, out of memory; stop_reason "error") or for what the
/// workload refuses when prepared (stop_reason "invalid input"): the result
/// says complete = false and keeps what was measured. Throws
/// invalid_argument for bad options.
[[nodiscard]] run_result measure(workload& w, environment& env, const protocol_options& options,
                                 const progress_fn& progress = {}, const status_fn& status = {});

}  // namespace coolbench::measure
