/// @file
/// Running a model: the interface users of graph executors know.
///
///   auto s = coolbench::engine::session::load("model.onnx");   // backend "cpu"
///   auto g = coolbench::engine::session::load("model.onnx", "cuda:0");
///   s.set_input("A", a);
///   s.run();
///   const auto& c = s.output("C");
///
/// When a session is created it infers shapes, folds the constant shape
/// subgraphs and drops dead nodes (passes.hpp), for the symbolic dimensions
/// bound in session_options; run() does it again when the inputs bind them
/// to other values. The result is the session's plan: its own graph, fused
/// for a device backend (engine/fusion). On a device backend a plan whose
/// shapes are all static runs from one arena laid out from the first run's
/// tensor lifetimes, as one CUDA graph (docs/engine.md, "Execution plan"):
///
///   s.set_input("input_ids", ids);   // copied to its arena slot once
///   s.run();                         // launch + synchronize; no allocation
///   s.output(0);                     // copied back when first asked for
///
/// A timer queues the run itself: prepare(), then events around launch() on
/// stream(), then synchronize().
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coolbench/engine/graph.hpp"
#include "coolbench/engine/passes.hpp"
#include "coolbench/engine/tensor.hpp"

namespace coolbench::engine {

class backend;
struct refusal;
struct graph_analysis;

struct session_options {
  session_options() = default;
  /// session_options{{{"batch", 1}, {"sequence", 128}}}: the dimensions, the rest as default.
  session_options(
      symbol_bindings dims)  // NOLINT(google-explicit-constructor): reads as the binding
      : dimensions(std::move(dims)) {}

  /// Values of symbolic dimensions known before any input is set
  /// ({"batch", 1}, {"sequence", 128}). The session specializes its plan for
  /// them when it is created; inputs that bind them to other values are
  /// still accepted, and make run() specialize again.
  symbol_bindings dimensions;
  /// Runs the fusion passes (engine/fusion) over each plan whose shapes are
  /// all static. Unset: on for a device backend, off for the CPU (the
  /// reference, which runs no fused ops).
  std::optional<bool> fuse;
  /// Device backend: runs a static plan as one CUDA graph, recorded on its
  /// first run and again after a device release. false: node by node.
  bool cuda_graph = true;
  /// Device backend: serves a static plan's tensors from one arena laid out
  /// from the first run's lifetimes (no allocation in later runs). false:
  /// the device layer's caching allocator per tensor, and no CUDA graph.
  bool memory_plan = true;
  /// Device backend: the first run of each new product signature (dtype,
  /// shape, layout, epilogue, alignment) times cuBLASLt's candidate
  /// algorithms on the real operands and keeps the fastest; false takes the
  /// heuristic's first. COOLBENCH_GEMM_AUTOTUNE=0 in the environment turns
  /// it off too. Never timed while a CUDA graph is being recorded.
  bool gemm_autotune = true;
};

/// How a session's runs execute.
enum class execution_mode : std::uint8_t {
  host,   ///< the CPU backend, node by node
  eager,  ///< a device backend, node by node (see execution_info::reason)
  graph,  ///< a device backend, one CUDA graph launch per run
};

[[nodiscard]] std::string_view to_string(execution_mode mode) noexcept;

/// What a session's current plan does, for reports and tests.
struct execution_info {
  execution_mode mode = execution_mode::host;
  /// Why a device backend runs node by node, or uses no arena; empty otherwise.
  std::string reason;
  /// Every value's shape is known (all symbolic dimensions bound): what the
  /// arena and the graph need. `dynamic_value` names the first that is not.
  bool static_shapes = false;
  std::string dynamic_value;
  bool arena = false;               ///< tensors come from the arena
  std::size_t arena_bytes = 0;      ///< the arena's size, once laid out
  std::size_t unplanned_bytes = 0;  ///< the recorded run's allocations summed
  std::size_t allocations = 0;      ///< per run, as recorded
  /// Whether launch() waits for the device itself (a node reads a computed
  /// value on the host), so a timer cannot hold the stream while it queues.
  bool launch_waits = false;
  /// Blocks the backend took from the device layer so far (cudaMalloc or
  /// the caching allocator's cache): constant in runs from the arena.
  std::uint64_t device_allocations = 0;
  /// Nodes whose last run took a slower path than the backend's own, each
  /// as "node 'x' (Op): why" (a fused elementwise program interpreted, not
  /// generated, because NVRTC is missing or COOLBENCH_EW_JIT=0); empty when
  /// none did. Known once a run has been made.
  std::vector<std::string> fallbacks;
};
/// One node's time in runs node by node (session::node_times).
struct node_time {
  std::string name;      ///< the node's name in the plan (a fused node's is its pass's)
  std::string op_type;   ///< "MatMul", "FusedAttention", ...
  std::string domain;    ///< "" for ONNX, "coolbench" for a fused node
  double mean_ms = 0.0;  ///< over the timed runs
  double min_ms = 0.0;
  /// What the backend chose for it (a product's cuBLASLt algorithm, how it
  /// was chosen and its time) and any slower path it took
  /// (execution_info::fallbacks), empty when nothing.
  std::string detail;
};

class session {
 public:
  /// Takes a loaded graph and a backend name ("cpu", "cuda", "cuda:N").
  /// Throws model_error "unsupported operator X (opset N) in node Y" when the
  /// backend cannot run a node (a device backend adds the dtype; it never
  /// falls back to the CPU), and invalid_argument for an unknown backend name.
  /// Also throws model_error when shapes are inconsistent (passes.hpp).
  explicit session(graph g, std::string_view backend_name = "cpu");
  session(graph g, session_options options, std::string_view backend_name = "cpu");
  /// load_onnx + the constructor.
  [[nodiscard]] static session load(const std::filesystem::path& path,
                                    std::string_view backend_name = "cpu");
  [[nodiscard]] static session load(const std::filesystem::path& path, session_options options,
                                    std::string_view backend_name = "cpu");
  ~session();
  session(session&&) noexcept;
  session& operator=(session&&) noexcept;
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  [[nodiscard]] const std::vector<value_info>& inputs() const noexcept { return m_graph.inputs; }
  [[nodiscard]] const std::vector<value_info>& outputs() const noexcept { return m_graph.outputs; }
  [[nodiscard]] std::string_view backend_name() const noexcept;
  /// The backend and what it runs on, for reports: "cpu (OpenBLAS SkylakeX, 2 threads)".
  [[nodiscard]] std::string backend_description() const;
  /// Nodes the current plan runs: the model's, less those folded into
  /// constants and those no output needs.
  [[nodiscard]] std::size_t node_count() const noexcept;

  /// Checks the name, dtype and shape against the model's declaration
  /// (binding symbolic dimensions) and says expected versus got when wrong.
  void set_input(const std::string& name, tensor value);
  /// Runs the plan and waits for it (launch() then synchronize()), first
  /// specializing it again when the inputs bind symbolic dimensions to values
  /// it was not made for. Throws invalid_argument when an input is missing or
  /// the shapes it gives are inconsistent, or a kernel found an input invalid.
  void run();
  /// Everything a launch needs short of queuing it: the plan specialized,
  /// constants and inputs on the device, and for a static plan its memory
  /// plan recorded (one run) and its CUDA graph captured (after a device
  /// release, after one more run). Holds the device until synchronize().
  void prepare();
  /// Queues a run on stream() and returns (the CPU backend runs it). The
  /// outputs are there after synchronize(); output() waits for them itself.
  void launch();
  /// Waits for the launched run, throws what its kernels found (an index out
  /// of range) and lets the device go (a device release may proceed).
  void synchronize();
  /// The stream launch() queues on (a cudaStream_t), or nullptr on the CPU.
  [[nodiscard]] void* stream();
  /// How runs execute, and why not as a graph.
  [[nodiscard]] execution_info execution() const;
  /// Each node's time: `runs` runs node by node (after one untimed run),
  /// with a mark on the backend's timeline before the first node and after
  /// each (CUDA events on the stream on a device, the host clock on the CPU).
  /// On a device each timed run is queued behind a wait kernel, so the marks
  /// bracket GPU time rather than the host's launches. The nodes are the
  /// current plan's, fusions included, in run order. Events cost a little
  /// and a graph launch has no gaps, so the sum exceeds a graph run's time:
  /// the shares say where the time goes. The inputs must be set; the
  /// outputs are those of the last timed run.
  [[nodiscard]] std::vector<node_time> node_times(std::size_t runs = 20);
  /// Rewrites the fusion passes made in the current plan, by pass name.
  [[nodiscard]] const std::map<std::string, std::size_t>& fusion_counts() const noexcept;
  /// An output of the last run; on a device backend copied to the host when
  /// first asked for after each run (waiting for the run when needed).
  [[nodiscard]] const tensor& output(std::size_t index) const;
  [[nodiscard]] const tensor& output(const std::string& name) const;
  /// Drops inputs, outputs and intermediate tensors, and on a device backend
  /// every device resource the session holds (the model and the plan's
  /// layout stay). A device release (coolbench::device) frees them too; the
  /// next run() copies the constants in again and records its graph again.
  void release();

  struct plan;

 private:
  /// Makes m_plan for these bindings: passes over m_graph, then the check
  /// that the backend runs every node left. Throws model_error.
  void specialize(const symbol_bindings& bound);
  [[nodiscard]] static std::vector<std::optional<dtype>> input_types(
      const node& n, const graph_analysis& analysis);
  [[nodiscard]] std::string unsupported_message(const node& n, const refusal& refused,
                                                const graph_analysis& analysis) const;
  /// Fusion, the checks after it, and the run order data of a new plan.
  void finish_plan(plan& p);
  /// Gives the model's initializers a plan borrowed back to m_graph.
  void return_borrowed(plan& p) noexcept;
  // The run (session_run.cpp).
  void specialize_for_inputs();
  void prepare_device(plan& p);
  void stage_inputs(plan& p);
  void record_memory(plan& p);
  void record_graph(plan& p);
  void run_eager(plan& p, bool use_arena, bool marks = false);
  /// Runs the plan's nodes; with `marks`, a mark after each node.
  [[nodiscard]] std::map<std::string, tensor> execute(plan& p, bool marks = false);
  void complete() const;  // synchronizes a launched run
  [[nodiscard]] bool arena_usable(const plan& p) const;
  [[nodiscard]] bool graph_usable(const plan& p) const;

  graph m_graph;  // as loaded; plans borrow its initializers (return_borrowed)
  session_options m_options;
  std::unique_ptr<backend> m_backend;
  std::unique_ptr<plan> m_plan;
  std::map<std::string, tensor> m_inputs;           // on the host, as set
  mutable std::map<std::string, tensor> m_outputs;  // on the host
  std::map<std::string, tensor> m_device_outputs;   // the last run's, in device memory
  symbol_bindings m_symbols;                        // bound by the inputs set so far
  std::vector<std::string> m_lost;                  // model initializers a fusion pass dropped
  mutable bool m_in_flight = false;                 // launched, not yet synchronized
};

}  // namespace coolbench::engine
