// bench/order_effect's victim and disturbers (docs/perf/hidden-state.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "coolbench/device.hpp"

struct CUstream_st;
struct CUevent_st;
struct CUgraphExec_st;
struct cublasContext;

namespace order_effect {

namespace dev = coolbench::device;

/// How the victim's GEMMs compute: `fp16` accumulates in fp16 (cublasHgemm's
/// CUBLAS_COMPUTE_16F, as the reference program), `fp32` in fp32
/// (CUBLAS_COMPUTE_32F, as bench/release's victim).
enum class gemm_compute { fp16, fp32 };
/// Which of the victim's kernels are told to prefer the largest L1
/// (cudaFuncAttributePreferredSharedMemoryCarveout = 0) before capture.
enum class carveout_hint { none, own_kernels, all_kernels };

/// cuBLAS's workspace: `lease` 32 MiB from the lease (bench/release's victim),
/// `none` (no split-K), `library` cuBLAS's own (the reference program's: it
/// sets none, so cuBLAS allocates it, outside the lease).
enum class blas_workspace { lease, none, library };

/// The victim's stream: the lease's (non-blocking, as bench/release's victim) or
/// one made with cudaStreamCreate, which synchronises with the legacy default
/// stream (the reference program's).
enum class victim_stream { lease, blocking };

/// Where the victim's own form differs from the reference program's, which slows by 9 %
/// when this one does not (docs/perf/hidden-state.md, "Bisecting the victim"). Each knob
/// moves one difference to the reference's side; all four set is the reference's form.
struct victim_form {
  /// The graph starts with a device-to-device copy of its input, so every replay computes
  /// the same data (the reference has no copy: its activations carry over between replays).
  bool input_copy = true;
  /// Weights and inputs uniform in [-0.5, 0.5) unscaled, as the reference's (off: weights
  /// scaled by sqrt(3/k), so each product keeps unit variance).
  bool wide_data = false;
  /// The reference's data flow: the row norms in place, the output projection reading qkv
  /// as one contiguous [128, 768] (off: into a separate buffer, and every third column).
  bool in_place = false;
  /// Graph replays between two events: the reference times 10, this victim 1.
  int launches_per_event = 1;
  /// The host waits for each timed interval before queuing the next, so the GPU idles between
  /// them (the reference's loop: record, 10 launches, record, synchronise); off: every interval
  /// queued back to back.
  bool sync_each = false;
  /// Each buffer from cudaMalloc and freed with cudaFree, as the reference (off: from the
  /// lease's caching allocator).
  bool raw_memory = false;
};

struct victim_config {
  gemm_compute compute = gemm_compute::fp16;
  carveout_hint carveout = carveout_hint::none;
  blas_workspace workspace = blas_workspace::lease;
  victim_stream stream = victim_stream::lease;
  victim_form form;
};
[[nodiscard]] std::string describe(const victim_config& c);
/// "fp16:none:blocking[:FORM]" -> GEMMs, workspace (lease, none or library), stream (lease
/// or blocking), and the form: `reference`, or knobs joined by '+' (`nocopy`, `wide`,
/// `inplace`, `batch10`, `sync`, `rawmem`); throws on anything else.
[[nodiscard]] victim_config parse_victim(const std::string& spec);
[[nodiscard]] std::string to_spec(const victim_config& c);

/// One kernel node of the victim's graph.
struct kernel_info {
  std::string name;
  int static_shared_bytes = 0;
  unsigned dynamic_shared_bytes = 0;
  int carveout = -1;  ///< the function's preferred carveout (-1: none)
  int count = 0;      ///< nodes launching it
};

/// Which operations victim::enqueue() queues: all, or those labelled `*only`; with `labels`,
/// none, and each label is added to it once instead.
struct op_filter {
  const std::string* only = nullptr;
  std::vector<std::string>* labels = nullptr;
};

/// GPT-2-small-shaped (sequence 128, hidden 768, 12 layers) fp16 cuBLAS GEMMs
/// with a row-normalising and a GELU kernel between them, as one CUDA graph;
/// every byte through the lease, handle and graph adopted so that a device
/// release destroys them.
class victim {
 public:
  victim(dev::lease& lease, const victim_config& config);
  victim(const victim&) = delete;
  victim& operator=(const victim&) = delete;
  ~victim();

  /// Median ms of one graph replay over `replays` back-to-back replays after `warmups`;
  /// the form's `launches_per_event` replays share each pair of events.
  [[nodiscard]] double median_ms(int warmups, int replays) const;
  /// Per-operation times of `passes` eager passes (events between every
  /// operation): each label's summed median, in ms.
  [[nodiscard]] std::vector<std::pair<std::string, double>> per_kernel_ms(int passes);
  /// Per-operation times without launch gaps: for each operation, its instances alone (12 or
  /// 24) captured as one CUDA graph, the median of `replays` replays after `warmups`, in ms.
  [[nodiscard]] std::vector<std::pair<std::string, double>> per_op_graph_ms(int warmups,
                                                                            int replays);
  [[nodiscard]] const std::vector<kernel_info>& kernels() const { return m_kernels; }

 private:
  void build_graph();
  void enqueue(const std::function<void(const std::string&)>& mark, const op_filter& filter = {});
  void gemm(const void* a, int lda, const void* b, int ldb, void* c, int ldc, int m, int n, int k);

  dev::lease& m_lease;
  victim_config m_config;
  CUstream_st* m_stream = nullptr;
  std::vector<dev::buffer> m_buffers;
  std::vector<void*> m_raw;  ///< the form's raw_memory: cudaMalloc'd, freed by the destructor
  std::vector<void*> m_ptr;  ///< each buffer's address, from either
  struct activation {
    void* data;
    std::size_t count;
    std::uint32_t seed;
    float scale;
  };
  std::vector<activation> m_activations;  ///< how each activation was filled, to fill it again
  std::vector<dev::owned_resource> m_owned;
  cublasContext* m_handle = nullptr;
  CUgraphExec_st* m_exec = nullptr;
  std::vector<CUevent_st*> m_events;
  std::vector<kernel_info> m_kernels;
};

/// Where a disturbance runs: the lease's stream, or the legacy default stream
/// (stream 0, the reference program's).
/// `raw`: the legacy stream with memory from cudaMalloc, freed with cudaFree
/// afterwards, and a cuBLAS handle with its own workspace (as the reference
/// program does it), outside the lease.
enum class disturb_stream { lease, legacy, raw };

/// Three bf16 8192^3 cublasGemmEx on random data; memory and handle dropped afterwards.
void disturb_with_gemms(dev::lease& lease, disturb_stream where);
/// One kernel with `kib` KiB of dynamic shared memory on every SM.
void disturb_with_shared_memory(dev::lease& lease, int kib, disturb_stream where);
/// One tiny kernel that asks for the largest L1 (carveout 0).
void run_max_l1_kernel(dev::lease& lease);

}  // namespace order_effect
