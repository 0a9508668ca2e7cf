/// @file
/// What the measurement protocol times: a workload runs once per sample and
/// says how long it took. GPU workloads take their device through the device
/// layer (a lease), so the protocol can release the GPU between bursts and
/// while it waits for it to cool; prepare() after a release re-acquires.
///
///   auto w = coolbench::measure::make_workload("gemm:fp16:128:2304:768:4", 0);
///   w->prepare();
///   const auto t = w->run();        // t.latency_ms: CUDA-event time
///   w->release();                   // then device::release() can reset the context
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coolbench/core/error.hpp"
#include "coolbench/device/kernel_trace.hpp"
#include "coolbench/measure/timing.hpp"

namespace coolbench::engine {
class session;
class tensor;
struct node_time;
}  // namespace coolbench::engine

namespace coolbench::measure {

class workload {
 public:
  virtual ~workload() = default;
  /// What runs, for reports: "gemm fp16 128x2304x768 x4 (cuBLASLt)".
  [[nodiscard]] virtual std::string describe() const = 0;
  /// The CUDA ordinal it runs on; empty for a CPU workload.
  [[nodiscard]] virtual std::optional<int> device() const = 0;
  /// Makes everything a run needs (device memory filled with seeded random
  /// data, never zeros; handles; the lease). Idempotent; called again after
  /// release().
  virtual void prepare() = 0;
  /// Runs once, synchronously (returns when the work is complete). Calls
  /// prepare() first when needed.
  virtual timing run() = 0;
  /// Drops what prepare() made, the lease included, so that the device can be
  /// released. The next run() prepares again.
  virtual void release() = 0;
  /// Floating-point operations of one run, when known (for TFLOP/s).
  [[nodiscard]] virtual std::optional<double> flops() const { return std::nullopt; }
  /// What the runs so far did that makes the figure not what the user asked
  /// to measure (a model's nodes ran on a slower path than the engine's
  /// own), one sentence each; the protocol reads it before the final
  /// release() and adds each to the result's warnings.
  [[nodiscard]] virtual std::vector<std::string> warnings() const { return {}; }
};

/// GEMM element types: A, B and C all of this type. fp16 and bf16 accumulate
/// in fp32; fp32 is computed in full fp32 (TF32 off).
enum class gemm_dtype : std::uint8_t { fp16, bf16, fp32 };

/// "fp16", "bf16", "fp32".
[[nodiscard]] std::string_view to_string(gemm_dtype dtype) noexcept;

/// One shape of a GEMM chain: COUNT GEMMs C[MxN] = A[MxK]·B[KxN] back to back.
struct gemm_shape {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  int count = 1;
};

/// `gemm:DTYPE:M:N:K[:COUNT][,M:N:K[:COUNT]...][@ROUNDS]`: the shapes in
/// order, each COUNT times, the whole list ROUNDS times, on one stream
/// through cuBLASLt with fp32 accumulation. Each shape has its own A, B and C
/// (a GEMM does not read another's output: the chain times the GEMMs, not a
/// model's data flow). `gemm:DTYPE:gpt2-small` names GPT-2 small's
/// per-layer GEMMs at sequence 128 (QKV 128x2304x768, projection
/// 128x768x768, MLP 128x3072x768 and 128x768x3072), 12 rounds: its 48 dense
/// GEMMs, not attention's per-head products.
struct gemm_chain_spec {
  gemm_dtype dtype = gemm_dtype::fp16;
  std::vector<gemm_shape> shapes;
  int rounds = 1;
};

/// The largest M, N or K parse_gemm_chain accepts (cuBLASLt's int32 leading dimensions).
inline constexpr std::int64_t gemm_max_dimension = 2147483647;
/// The largest COUNT, and the largest ROUNDS, parse_gemm_chain accepts.
inline constexpr int gemm_max_count = 1000;
/// The most shapes in one chain.
inline constexpr std::size_t gemm_max_shapes = 64;
/// The most GEMMs in one run of a chain (COUNTs summed, times ROUNDS).
inline constexpr std::int64_t gemm_max_total = 100000;

/// Parses "gemm:fp16:128:2304:768:4", "gemm:fp16:128:768:768,128:3072:768@12"
/// or "gemm:bf16:gpt2-small" (COUNT and ROUNDS may be left out: 1). Throws
/// invalid_argument saying which part is wrong and what the form is:
/// dimensions 1..gemm_max_dimension, COUNT and ROUNDS 1..gemm_max_count, at
/// most gemm_max_shapes shapes and gemm_max_total GEMMs, DTYPE fp16, bf16 or
/// fp32.
[[nodiscard]] gemm_chain_spec parse_gemm_chain(std::string_view text);
/// The canonical form, COUNT always written, "@ROUNDS" when not 1, a preset
/// spelled out: "gemm:fp16:128:2304:768:4".
[[nodiscard]] std::string to_string(const gemm_chain_spec& spec);
/// Throws invalid_argument when a field is out of the ranges parse_gemm_chain accepts.
void validate(const gemm_chain_spec& spec);
/// GEMMs in one run: the COUNTs summed, times ROUNDS.
[[nodiscard]] std::int64_t gemm_count(const gemm_chain_spec& spec) noexcept;
/// Floating-point operations of one run (2·M·N·K per GEMM).
[[nodiscard]] double gemm_flops(const gemm_chain_spec& spec) noexcept;
/// A chain of one shape: `{dtype, {{m, n, k, count}}}`.
[[nodiscard]] inline gemm_chain_spec single_gemm_chain(gemm_dtype dtype, std::int64_t m,
                                                       std::int64_t n, std::int64_t k,
                                                       int count = 1) {
  return {.dtype = dtype, .shapes = {{.m = m, .n = n, .k = k, .count = count}}, .rounds = 1};
}

/// A GEMM chain on GPU `device` (docs/measure.md, "Workloads"). Checks the
/// spec (invalid_argument) and throws not_available in a build without CUDA;
/// the GPU itself is first touched by prepare(). Its lease belongs to the
/// thread that called prepare(): run and release it in that thread.
[[nodiscard]] std::unique_ptr<workload> make_gemm_chain(const gemm_chain_spec& spec, int device);

/// An ONNX model on the engine (`backend` "cpu" today). `dimensions` binds
/// symbolic input dimensions (GPT-2's batch, sequence); an input dimension
/// that is symbolic and not bound, or unknown, is an invalid_argument from
/// prepare(). Inputs get seeded random data: floats roughly N(0, 1); integer
/// inputs in [0, V), where V is the row count of the initializer a Gather
/// indexes with that input (GPT-2's token embedding), else 100. Throws
/// not_available when the engine is not built (COOLBENCH_ENGINE=OFF) and
/// invalid_argument when the file does not exist; the model is loaded by
/// prepare(). On the CPU run() is timed with the host clock; on a GPU
/// ("cuda:N") with CUDA events around the session's launch on its stream,
/// held while it is queued (the inputs stay on the device between runs and
/// the outputs are not copied back: the GPU's time for the model).
/// `cuda_graph` false runs a static model kernel by kernel on a GPU (the
/// session's option of that name).
[[nodiscard]] std::unique_ptr<workload> make_model_workload(
    const std::filesystem::path& model, std::string_view backend = "cpu",
    const std::map<std::string, std::int64_t>& dimensions = {}, bool cuda_graph = true);

/// A command that measures itself and prints each latency on its standard output as a line
/// `latency_ms VALUE` (milliseconds; other lines are ignored), until it is stopped
/// (docs/cli/exec.md). prepare() starts it (argv[0] looked up in PATH, COOLBENCH_DEVICE set to
/// `device`), run() returns its next latency, release() ends it (SIGTERM, SIGKILL 2 s later):
/// under the protocol each context is a fresh process. Throws coolbench::error when the
/// command ends or prints no line for `line_timeout`, invalid_argument for a latency line that
/// holds no positive number.
[[nodiscard]] std::unique_ptr<workload> make_command_workload(
    std::vector<std::string> argv, int device,
    std::chrono::seconds line_timeout = std::chrono::seconds(60));

/// Where a model's time goes (coolbench nodes): the model as
/// make_model_workload runs it, on the same seeded random inputs.
struct model_node_profile {
  std::string description;  ///< the workload's describe()
  std::string execution;    ///< how ordinary runs execute: "graph", "eager (why)", "host"
  std::size_t runs = 0;     ///< ordinary runs timed, and node-by-node runs timed
  double least_run_ms = 0;  ///< the least ordinary run, timed as the workload times it
  double median_run_ms = 0;
  std::vector<engine::node_time> nodes;  ///< the plan's nodes in run order
  /// With trace_kernels on a GPU: `runs` ordinary runs as CUPTI recorded
  /// their kernels (device/kernel_trace.hpp), each run begun by the stream
  /// hold, which is left out; kernels_dropped counts records CUPTI had no room for.
  std::optional<device::kernel_runs> kernels;
  std::size_t kernels_dropped = 0;
};

/// Times `runs` ordinary runs after `runs` warm-up runs, then (with
/// `trace_kernels`) traces `runs` more with CUPTI, then the nodes
/// (engine::session::node_times, `runs` runs). No protocol: no gating, one
/// context. Only in a build with the engine; throws as make_model_workload,
/// and trace_kernels throws invalid_argument on the CPU backend and
/// not_available where CUPTI cannot trace.
[[nodiscard]] model_node_profile profile_model_nodes(
    const std::filesystem::path& model, std::string_view backend = "cpu",
    const std::map<std::string, std::int64_t>& dimensions = {}, bool cuda_graph = true,
    std::size_t runs = 20, bool trace_kernels = false);

/// A session the caller made (engine/session.hpp), run with `inputs` (set
/// again after each release()): what coolbench.measure(session, feeds)
/// measures in Python. Timed like a model workload; on the CUDA backend it
/// is a GPU workload of the session's ordinal. Only in a build with the engine.
[[nodiscard]] std::unique_ptr<workload> make_session_workload(
    std::shared_ptr<engine::session> session, std::map<std::string, engine::tensor> inputs,
    std::string name);

/// A workload that calls user code: what the Python module measures
/// (docs/python.md), or any C++ caller's function.
struct callable_spec {
  /// For reports: "callable forward (torch)".
  std::string name = "callable";
  /// One inference. Required. On a GPU it enqueues its work on `stream` (or
  /// synchronises itself); it may block.
  std::function<void()> run;
  /// Makes what run() needs; called before the first run and again after
  /// each release(). Optional.
  std::function<void()> setup;
  /// Drops what setup() made (so that a device release frees it); called by
  /// release(). Optional.
  std::function<void()> teardown;
  /// The CUDA ordinal the work runs on: timed with CUDA events recorded on
  /// `stream` before and after run() (see `hold`). Empty: timed with the
  /// host clock.
  std::optional<int> device;
  /// The cudaStream_t the callable's work goes to, as an integer; 0 is the
  /// legacy default stream, which also waits for every blocking stream.
  std::uintptr_t stream = 0;
  /// On a GPU: hold `stream` with a wait kernel while run() queues its work,
  /// so that the events bracket GPU time, not the host's launch time. A
  /// sample the callable outlasts the hold in is run again with a longer one;
  /// a callable that waits for the GPU itself (a synchronize) cannot be held,
  /// and run() throws invalid_argument saying so: turn the hold off for it
  /// (the figure then includes the host's launch time).
  bool hold = true;
  /// Floating-point operations of one run, when the caller knows them.
  std::optional<double> flops;
};

/// A callable workload. Throws invalid_argument without `run`, and
/// not_available for a `device` in a build without CUDA; the GPU is first
/// touched by prepare() (a lease, two events). Use it from one thread.
[[nodiscard]] std::unique_ptr<workload> make_callable_workload(callable_spec spec);

/// A workload named on the command line: "gemm:..." (on GPU `device`) or a
/// path ending in .onnx (the engine's cpu backend; `device` unused). Throws
/// invalid_argument for anything else, or a bad GEMM spec, or a missing file,
/// and not_available for an .onnx path when the engine is not built.
[[nodiscard]] std::unique_ptr<workload> make_workload(std::string_view name, int device);

}  // namespace coolbench::measure
