// The CUDA backend: device tensors from the device layer's caching allocator,
// work on the device's coolbench stream, cuBLASLt for MatMul and Gemm. It
// takes a lease for the length of a run (session::run ends it), so a device
// release from another thread is not blocked between runs; a release frees
// every tensor and handle it made, and the next call re-acquires them.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coolbench/device.hpp"
#include "engine/backend.hpp"

namespace coolbench::engine::cuda {

class cuda_backend;

/// What an op implementation gets: the node, its inputs (device tensors,
/// nullptr for omitted ones), the outputs to fill, and the backend.
struct op_call {
  cuda_backend& backend;
  const node& n;
  std::span<const tensor* const> inputs;
  std::span<tensor> outputs;
  void* stream;

  /// Input i; throws invalid_argument naming the node when absent.
  [[nodiscard]] const tensor& in(std::size_t i) const;
  [[nodiscard]] const tensor* optional_in(std::size_t i) const {
    return i < inputs.size() ? inputs[i] : nullptr;
  }
  [[nodiscard]] tensor allocate(dtype type, shape_t shape) const;
  /// An integer input's values on the host: shapes, axes. A constant's are
  /// read from the host copy copy_in kept; any other value is copied back
  /// (a synchronous copy, which keeps the plan from being recorded).
  [[nodiscard]] std::vector<std::int64_t> host_ints(const tensor& t) const;
  /// A scalar input of any numeric dtype on the host, as double (as host_ints).
  [[nodiscard]] double host_scalar(const tensor& t) const;
  [[noreturn]] void fail(const std::string& what) const;
  /// The backend's error flag and a code for `what` (prefixed with the node
  /// and backend, as fail() does) for a kernel that checks on the device.
  [[nodiscard]] std::pair<int*, int> device_check(const std::string& what) const;
};

using op_fn = void (*)(const op_call& call);

/// Which dtypes an op runs in; checked at session creation (refuses()).
enum class type_rule : std::uint8_t { floats, numeric, any, booleans, shape_only };

struct op_entry {
  std::string_view op_type;
  op_fn run;
  type_rule types;
  /// "" for ONNX's default domain; fused ops made by the fusion passes live
  /// in k_fused_domain (engine/fusion/fusion.hpp).
  std::string_view domain = {};
};

/// The op table: elementwise ops (ops_elementwise.cpp), data movement
/// (ops_data.cpp), values the host decides: Shape, Size, Constant,
/// ConstantOfShape, Range (ops_constant.cpp), reductions and normalizations (ops_reduce.cpp),
/// MatMul and Gemm (matmul.cpp), Conv, pools, BatchNormalization and
/// GatherElements (ops_nn.cpp).
std::span<const op_entry> elementwise_ops();
std::span<const op_entry> data_ops();
std::span<const op_entry> constant_ops();
std::span<const op_entry> reduce_ops();
std::span<const op_entry> matmul_ops();
std::span<const op_entry> nn_ops();
/// The fusion passes' ops, in k_fused_domain (fused_ops.cpp).
std::span<const op_entry> fused_ops();

/// The products' chosen algorithms and descriptors (gemm_tuning.hpp).
struct gemm_cache;
struct gemm_cache_deleter {
  void operator()(gemm_cache* cache) const noexcept;
};

/// cuBLASLt state of one context generation (matmul.cpp): the handle (a
/// cublasLtHandle_t) adopted by the device layer, the workspace, and the
/// algorithm chosen per product signature, which a release drops with them.
/// The skinny kernel (skinny_gemm.hpp) puts its split-K partial sums in the
/// workspace where it runs in cuBLASLt's place, and keeps its per-tile
/// counters in `skinny_counters` (zeroed when made; each launch leaves them 0).
struct blas_state {
  void* handle = nullptr;
  device::owned_resource owner;
  device::buffer workspace;
  device::buffer skinny_counters;
  std::unique_ptr<gemm_cache, gemm_cache_deleter> gemms;
  [[nodiscard]] bool valid() const noexcept {
    return owner.valid() && workspace.valid() && skinny_counters.valid();
  }
};

class cuda_backend final : public backend {
 public:
  explicit cuda_backend(int ordinal);
  ~cuda_backend() override;
  cuda_backend(const cuda_backend&) = delete;
  cuda_backend& operator=(const cuda_backend&) = delete;
  cuda_backend(cuda_backend&&) = delete;
  cuda_backend& operator=(cuda_backend&&) = delete;

  std::string_view name() const noexcept override { return m_name; }
  std::string describe() const override;
  bool supports(const node& n) const override;
  std::optional<refusal> refuses(const node& n,
                                 std::span<const std::optional<dtype>> input_types) const override;
  void run(const node& n, std::span<const tensor* const> inputs,
           std::span<tensor> outputs) override;

  bool on_device() const noexcept override { return true; }
  tensor allocate(dtype type, shape_t shape) override;
  tensor copy_in(const tensor& host) override;
  tensor copy_out(const tensor& value) override;
  void synchronize() override;
  void* stream() override;
  void end_run() noexcept override;
  void release() noexcept override;

  void set_allocation_source(allocation_source* source) noexcept override { m_source = source; }
  std::shared_ptr<device_storage> allocate_block(std::size_t bytes) override;
  void copy_into(const tensor& host, const tensor& target) override;
  std::uint64_t device_allocations() const noexcept override { return m_device_allocations; }
  std::uint64_t context_generation() override;
  void trim() noexcept override;
  std::string take_blocking_note() override;
  bool can_record() const noexcept override { return true; }
  void set_product_tuning(bool on) noexcept override { m_product_tuning = on; }
  std::string node_detail(const node& n) const override;
  std::string fallback(const node& n) const override;
  void prepare_recording() override;
  void begin_recording() override;
  std::unique_ptr<recorded_work> end_recording() override;
  void abandon_recording() noexcept override;
  void begin_marks() override;
  void mark() override;
  std::vector<double> mark_intervals_ms() override;

  /// The host copy of a device tensor's data that copy_in kept (constants
  /// and other small tensors), or nullopt.
  [[nodiscard]] static std::optional<tensor> host_mirror(const tensor& value);
  /// Notes that the node running now waits for the device (`what`).
  void note_blocking(const std::string& what);
  /// The messages of the error codes a recorded run's kernels carry, set
  /// again when it is launched (graph.cpp).
  std::vector<std::string>& error_messages() noexcept { return m_error_messages; }

  /// Fills every tensor it allocates with 0xFF bytes (NaN, -1, an invalid
  /// bool) before a kernel writes it, so a test sees elements left unwritten.
  void poison_allocations(bool on) noexcept { m_poison = on; }

  /// The lease of this run (taken when first needed).
  device::lease& lease();
  /// cuBLASLt handle and workspace, made again after a device release.
  blas_state& blas();
  /// Whether a new product signature's cuBLASLt algorithm is chosen by
  /// timing the heuristic's candidates (session option gemm_autotune, and
  /// COOLBENCH_GEMM_AUTOTUNE=0 turns it off), not as the heuristic's first.
  [[nodiscard]] bool product_tuning() const noexcept;
  /// Keeps what the node running now chose (its product's algorithm) for
  /// node_detail().
  void note_detail(const std::string& detail);
  /// Keeps why the node running now took a slower path than its own (an
  /// elementwise program interpreted: `why` from launch_fused_elementwise),
  /// for fallback(); "" clears it (the fast path ran).
  void note_fallback(const std::string& why);

  /// A device int a kernel sets (atomicCAS from 0) when an input was invalid
  /// in a way only the device sees (an index out of range), and the code it
  /// writes for `message` (the node and the valid range). synchronize()
  /// reads the flag and throws invalid_argument with the message of the
  /// code set; the output holds 0 at those elements until then.
  [[nodiscard]] int* error_flag();
  [[nodiscard]] int error_code(std::string message);

 private:
  const op_entry* find(std::string_view domain, std::string_view op_type) const;
  /// A block from the device layer, with the out-of-memory message.
  device::buffer device_block(std::size_t bytes, const std::string& what);

  int m_ordinal;
  std::string m_name;
  std::vector<op_entry> m_ops;
  std::optional<device::lease> m_lease;
  std::unique_ptr<blas_state> m_blas;
  device::buffer m_error_flag;
  std::vector<std::string> m_error_messages;  // code k is m_error_messages[k - 1]
  bool m_poison = false;
  allocation_source* m_source = nullptr;  // the session's arena while a plan runs
  std::uint64_t m_device_allocations = 0;
  // Node timing's events: kept for reuse until a device release destroys them.
  std::vector<CUevent_st*> m_mark_events;
  std::uint64_t m_mark_generation = 0;
  std::size_t m_marks = 0;                 // recorded since begin_marks()
  unsigned long long m_mark_queue_ns = 0;  // the longest queuing of a marked run so far
  std::chrono::steady_clock::time_point m_marks_begun;
  const node* m_running = nullptr;  // the node run() is in
  bool m_product_tuning = true;
  std::map<std::string, std::string> m_node_details;  // by node name
  std::map<std::string, std::string> m_fallbacks;     // by node name
  std::string m_blocking_note;
  bool m_recording = false;
  std::size_t m_messages_before_recording = 0;
};

}  // namespace coolbench::engine::cuda
