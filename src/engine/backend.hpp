// What a session asks of a backend. The CPU backend is the reference and
// computes on host tensors; a device backend (CUDA) holds its tensors in device
// memory from the device layer, and the session copies inputs in and outputs
// out through it. The engine core never includes a backend's own headers.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coolbench/engine/graph.hpp"
#include "coolbench/engine/tensor.hpp"

namespace coolbench::engine {

/// Why a backend refuses a node when a session is created.
struct refusal {
  enum class reason : std::uint8_t { op, dtype, form };
  reason why = reason::op;
  dtype type = dtype::float32;  ///< for reason::dtype: the dtype it does not run
  std::string detail;           ///< for reason::form: what of the node is not run, and why
};

/// What no backend runs of a node whose op it has: a training form or an
/// optional output (MaxPool's Indices, BatchNormalization's training mode and
/// statistics outputs); nullopt when the node asks for none of it.
[[nodiscard]] std::optional<std::string> unsupported_form(const node& n);

/// Where a device backend's allocate() takes memory while a session's plan
/// runs (the session's arena, engine/memory_plan.hpp).
class allocation_source {
 public:
  virtual ~allocation_source() = default;
  /// Storage of at least `bytes`.
  [[nodiscard]] virtual std::shared_ptr<device_storage> take(std::size_t bytes) = 0;
};

/// Work a device backend recorded once and replays (a CUDA graph). Its
/// device resources are the device layer's: a device release destroys them.
class recorded_work {
 public:
  virtual ~recorded_work() = default;
  /// Queues the work on the backend's stream; throws once a release freed it.
  virtual void launch() = 0;
  /// False once a device release destroyed it.
  [[nodiscard]] virtual bool valid() const noexcept = 0;
};

class backend {
 public:
  virtual ~backend() = default;
  /// "cpu", "cuda:0".
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  /// The name and what it runs on, for reports: "cpu (OpenBLAS Haswell, 2 threads)".
  [[nodiscard]] virtual std::string describe() const = 0;
  /// Whether run() accepts this node's op type, domain and attributes.
  [[nodiscard]] virtual bool supports(const node& n) const = 0;
  /// Whether run() accepts this node with inputs of these dtypes (nullopt:
  /// not known before run time, or an omitted input); says why not. The
  /// default checks the op alone (the CPU backend refuses dtypes at run time).
  [[nodiscard]] virtual std::optional<refusal> refuses(
      const node& n, std::span<const std::optional<dtype>> input_types) const {
    static_cast<void>(input_types);
    if (!supports(n)) return refusal{};
    if (auto detail = unsupported_form(n)) return refusal{refusal::reason::form, {}, *detail};
    return std::nullopt;
  }
  /// Computes one node; sizes and fills `outputs` in the backend's memory.
  virtual void run(const node& n, std::span<const tensor* const> inputs,
                   std::span<tensor> outputs) = 0;

  // Memory. A host backend's tensors are host tensors and these are trivial.

  /// Whether this backend's tensors live in device memory (copy in and out).
  [[nodiscard]] virtual bool on_device() const noexcept { return false; }
  /// Uninitialised storage for a tensor of this dtype and shape.
  [[nodiscard]] virtual tensor allocate(dtype type, shape_t shape) {
    return {type, std::move(shape)};
  }
  /// A copy of a host tensor in the backend's memory.
  [[nodiscard]] virtual tensor copy_in(const tensor& host) { return host; }
  /// A host copy of one of the backend's tensors (waits for it).
  [[nodiscard]] virtual tensor copy_out(const tensor& value) { return value; }
  /// Waits for the work queued so far.
  virtual void synchronize() {}
  /// The stream work is queued on (a cudaStream_t), or nullptr on the host.
  [[nodiscard]] virtual void* stream() { return nullptr; }
  /// Ends a run: drops what the backend holds only while running (a device
  /// lease), so that a device release from another thread can proceed.
  virtual void end_run() noexcept {}
  /// Drops every device resource the backend holds (handles, workspace); the
  /// next call re-acquires them.
  virtual void release() noexcept {}

  // What a session's execution plan needs of a device backend. The host
  // backend has none of it: its sessions run node by node.

  /// Sends allocate()'s requests to `source` until called again with nullptr.
  virtual void set_allocation_source(allocation_source* source) noexcept {
    static_cast<void>(source);
  }
  /// One block of device memory from the device layer (an arena), freed by a
  /// device release; throws not_available on the host.
  [[nodiscard]] virtual std::shared_ptr<device_storage> allocate_block(std::size_t bytes);
  /// Copies a host tensor into `target`, a device tensor of its dtype and size
  /// (an input's arena slot), and waits for the copy.
  virtual void copy_into(const tensor& host, const tensor& target);
  /// Blocks allocate() took from the device layer so far (not from a source).
  [[nodiscard]] virtual std::uint64_t device_allocations() const noexcept { return 0; }
  /// The device context's generation (it changes at each device release).
  [[nodiscard]] virtual std::uint64_t context_generation() { return 0; }
  /// Returns cached device memory to the driver.
  virtual void trim() noexcept {}
  /// The first wait for the device inside run() since the last call (a copy
  /// between host and device that a node needed), as "node 'x' (Op): what";
  /// empty when there was none. Such a run cannot be recorded.
  [[nodiscard]] virtual std::string take_blocking_note() { return {}; }

  // Node timing (session::node_times): marks on the backend's timeline.

  /// Forgets earlier marks and makes the first one (before the first node).
  virtual void begin_marks();
  /// A mark after the work queued so far.
  virtual void mark();
  /// The time between consecutive marks since begin_marks(), in ms; waits
  /// for the work marked.
  [[nodiscard]] virtual std::vector<double> mark_intervals_ms();

  /// Whether a device backend times its library's algorithms for each new
  /// product signature and keeps the fastest (on by default), or takes its
  /// heuristic's first; the session passes its option gemm_autotune.
  virtual void set_product_tuning(bool on) noexcept { static_cast<void>(on); }
  /// What the backend chose for a node it ran (a product's cuBLASLt
  /// algorithm and how it was chosen); empty when nothing.
  [[nodiscard]] virtual std::string node_detail(const node& n) const {
    static_cast<void>(n);
    return {};
  }

  /// Why the node's last run took a slower path than the backend's own
  /// ("elementwise program interpreted, not generated: NVRTC: ..."); empty
  /// when it did not. Reports say so: the figure is not the engine's.
  [[nodiscard]] virtual std::string fallback(const node& n) const {
    static_cast<void>(n);
    return {};
  }

  /// Whether begin_recording() works here (CUDA graphs).
  [[nodiscard]] virtual bool can_record() const noexcept { return false; }
  /// Makes what recorded work uses besides its tensors (library handles,
  /// workspace, the error flag), so that nothing is created while recording.
  virtual void prepare_recording() {}
  /// From here to end_recording(), work queued on the stream is recorded, not run.
  virtual void begin_recording();
  /// The work recorded since begin_recording(), ready to launch.
  [[nodiscard]] virtual std::unique_ptr<recorded_work> end_recording();
  /// Ends a recording an exception cut short; the stream runs work again.
  virtual void abandon_recording() noexcept {}

 private:
  std::vector<std::chrono::steady_clock::time_point> m_host_marks;  // the host's marks
};

/// "cpu", "cuda" (GPU 0) or "cuda:N"; throws invalid_argument naming the
/// backends there are, and not_available for CUDA in a build without it.
[[nodiscard]] std::unique_ptr<backend> make_backend(std::string_view name);

}  // namespace coolbench::engine
