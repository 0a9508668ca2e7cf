// The GEMM chain workload: its shapes' cuBLASLt matmuls back to back on the
// lease's stream, timed with CUDA events around them while a wait kernel holds the
// stream, so the figure is GPU time and not the host's launch rate
// (detail/stream_hold.hpp). Every resource comes from the device layer
// (memory, stream, events) or is adopted by it (the cuBLASLt handle and
// descriptors), so a device release destroys them and prepare() rebuilds.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "coolbench/core/clock.hpp"
#include "coolbench/device.hpp"
#include "coolbench/measure/workload.hpp"
#include "core/cublas_check.hpp"
#include "core/cuda_check.hpp"
#include "measure/detail/fill_random.hpp"
#include "measure/detail/gemm_chain.hpp"
#include "measure/detail/stream_hold.hpp"

namespace coolbench::measure {
namespace {

// cuBLAS recommends 32 MiB of workspace on Hopper; smaller GPUs use less of it.
constexpr std::size_t workspace_bytes = std::size_t{32} << 20U;
// The seed of the first shape's A; B, C and the later shapes' matrices take
// the next ones.
constexpr std::uint64_t first_seed = 1;
// The first hold: a cuBLASLt launch takes the host a few microseconds
// (detail::adaptive_hold lengthens and shortens it from there).
constexpr std::uint64_t first_hold_base_ns = 20'000;
constexpr std::uint64_t first_hold_per_gemm_ns = 15'000;
constexpr std::uint64_t max_hold_ns = 200'000'000;

std::size_t element_bytes(gemm_dtype dtype) { return dtype == gemm_dtype::fp32 ? 4 : 2; }

cudaDataType_t cuda_type(gemm_dtype dtype) {
  switch (dtype) {
    case gemm_dtype::fp16: return CUDA_R_16F;
    case gemm_dtype::bf16: return CUDA_R_16BF;
    case gemm_dtype::fp32: return CUDA_R_32F;
  }
  return CUDA_R_32F;
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000U) << 16U;
  const std::uint32_t exponent = (h >> 10U) & 0x1FU;
  std::uint32_t mantissa = h & 0x3FFU;
  std::uint32_t bits = 0;
  if (exponent == 0x1FU) {
    bits = sign | 0x7F800000U | (mantissa << 13U);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112U) << 23U) | (mantissa << 13U);
  } else if (mantissa != 0) {  // subnormal: normalize
    std::uint32_t e = 113;
    while ((mantissa & 0x400U) == 0) {
      mantissa <<= 1U;
      --e;
    }
    bits = sign | (e << 23U) | ((mantissa & 0x3FFU) << 13U);
  } else {
    bits = sign;
  }
  float f = 0;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float bf16_to_float(std::uint16_t b) {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16U;
  float f = 0;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

class gemm_chain final : public workload {
 public:
  gemm_chain(const gemm_chain_spec& spec, int device) : m_spec(spec), m_device(device) {
    validate(spec);
    double elements = 0;
    for (const gemm_shape& s : spec.shapes) {
      elements += static_cast<double>(s.m) * static_cast<double>(s.k) +
                  static_cast<double>(s.k) * static_cast<double>(s.n) +
                  static_cast<double>(s.m) * static_cast<double>(s.n);
    }
    if (elements * static_cast<double>(element_bytes(spec.dtype)) > 1e15) {
      throw invalid_argument("GEMM chain " + to_string(spec) +
                             ": its matrices would need over a petabyte");
    }
  }
  ~gemm_chain() override { release(); }
  gemm_chain(const gemm_chain&) = delete;
  gemm_chain& operator=(const gemm_chain&) = delete;
  gemm_chain(gemm_chain&&) = delete;
  gemm_chain& operator=(gemm_chain&&) = delete;

  // "gemm fp16 128x2304x768 x4 (cuBLASLt)", or with several shapes
  // "gemm fp16 128x2304x768 x1, 128x768x768 x1 @12: 24 GEMMs (cuBLASLt)".
  [[nodiscard]] std::string describe() const override {
    std::string text = "gemm " + std::string(to_string(m_spec.dtype)) + " ";
    for (std::size_t i = 0; i < m_spec.shapes.size(); ++i) {
      const gemm_shape& s = m_spec.shapes[i];
      if (i > 0) text += ", ";
      text += std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + " x" +
              std::to_string(s.count);
    }
    if (m_spec.rounds != 1) text += " @" + std::to_string(m_spec.rounds);
    if (m_spec.shapes.size() > 1 || m_spec.rounds != 1) {
      text += ": " + std::to_string(gemm_count(m_spec)) + " GEMMs";
    }
    return text + " (cuBLASLt)";
  }
  [[nodiscard]] std::optional<int> device() const override { return m_device; }
  [[nodiscard]] std::optional<double> flops() const override { return gemm_flops(m_spec); }

  void prepare() override {
    // A device release (by this thread, or after this chain's release()) leaves
    // the buffers stale: then everything is made again in the new context.
    if (m_prepared && m_prepared->workspace.valid() && m_prepared->handle.valid()) return;
    m_prepared.reset();
    m_prepared.emplace(device::device::get(m_device).acquire());
    try {
      build(*m_prepared);
    } catch (...) {
      m_prepared.reset();  // half-built: the next prepare() starts over
      throw;
    }
  }

  timing run() override {
    prepare();
    prepared& p = *m_prepared;
    timing t;
    t.start_ns = steady_now_ns();
    for (;;) {
      const std::int64_t queue_start = steady_now_ns();
      detail::hold_stream(p.stream, m_hold.ns());
      COOLBENCH_CUDA_CALL(cudaEventRecord(m_start, p.stream));
      enqueue_chain(p);
      COOLBENCH_CUDA_CALL(cudaEventRecord(m_end, p.stream));
      const auto queued = static_cast<std::uint64_t>(steady_now_ns() - queue_start);
      // Still held once everything is queued: the GPU ran the chain without
      // waiting for the host. Otherwise the figure could include launch gaps.
      const cudaError_t started = cudaEventQuery(m_start);
      if (started != cudaErrorNotReady) COOLBENCH_CUDA_CALL(started);
      COOLBENCH_CUDA_CALL(cudaEventSynchronize(m_end));
      if (started == cudaErrorNotReady || m_hold.at_max()) {
        m_hold.held(queued);
        break;
      }
      m_hold.outlasted(queued);
    }
    t.end_ns = steady_now_ns();
    float ms = 0;
    COOLBENCH_CUDA_CALL(cudaEventElapsedTime(&ms, m_start, m_end));
    t.latency_ms = ms;
    return t;
  }

  void release() override { m_prepared.reset(); }

  std::vector<double> replay_graph(int runs) {
    prepare();
    prepared& p = *m_prepared;
    if (!p.graph_owner.valid()) {
      // Once eagerly first: in a fresh context cuBLASLt loads its kernels on first use, which
      // is better done outside the capture.
      enqueue_chain(p);
      COOLBENCH_CUDA_CALL(cudaStreamSynchronize(p.stream));
      cudaGraph_t graph = nullptr;
      COOLBENCH_CUDA_CALL(cudaStreamBeginCapture(p.stream, cudaStreamCaptureModeThreadLocal));
      try {
        enqueue_chain(p);
      } catch (...) {
        (void)cudaStreamEndCapture(p.stream, &graph);
        if (graph != nullptr) (void)cudaGraphDestroy(graph);
        throw;
      }
      COOLBENCH_CUDA_CALL(cudaStreamEndCapture(p.stream, &graph));
      cudaGraphExec_t exec = nullptr;
      const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
      (void)cudaGraphDestroy(graph);
      COOLBENCH_CUDA_CALL(made);
      p.graph = exec;
      p.graph_owner = p.lease.adopt(device::resource_kind::graph, [exec] {
        COOLBENCH_CUDA_CALL_NOEXCEPT(cudaGraphExecDestroy(exec));
      });
      COOLBENCH_CUDA_CALL(cudaGraphUpload(exec, p.stream));  // not in the first timed replay
    }
    if (m_replay_generation != p.lease.generation()) {
      m_replay_events.clear();  // the old context's, destroyed with it
      m_replay_generation = p.lease.generation();
    }
    while (m_replay_events.size() < static_cast<std::size_t>(runs) + 1) {
      m_replay_events.push_back(p.lease.create_event());
    }
    // One replay ahead of the first event, so that the first interval does not start on an
    // idle stream and include the host's launch.
    COOLBENCH_CUDA_CALL(cudaGraphLaunch(p.graph, p.stream));
    COOLBENCH_CUDA_CALL(cudaEventRecord(m_replay_events[0], p.stream));
    for (int i = 1; i <= runs; ++i) {
      COOLBENCH_CUDA_CALL(cudaGraphLaunch(p.graph, p.stream));
      COOLBENCH_CUDA_CALL(cudaEventRecord(m_replay_events[static_cast<std::size_t>(i)], p.stream));
    }
    COOLBENCH_CUDA_CALL(cudaStreamSynchronize(p.stream));
    std::vector<double> ms;
    ms.reserve(static_cast<std::size_t>(runs));
    for (int i = 1; i <= runs; ++i) {
      float e = 0;
      COOLBENCH_CUDA_CALL(cudaEventElapsedTime(&e, m_replay_events[static_cast<std::size_t>(i - 1)],
                                               m_replay_events[static_cast<std::size_t>(i)]));
      ms.push_back(e);
    }
    return ms;
  }

  [[nodiscard]] detail::hold_state hold() const { return {m_hold.ns(), m_hold.short_holds()}; }
  void set_launch_gap(std::chrono::nanoseconds gap) { m_launch_gap = gap; }

  std::vector<float> read(detail::gemm_matrix which, std::size_t shape) {
    if (shape >= m_spec.shapes.size()) {
      throw invalid_argument(describe() + " has no shape " + std::to_string(shape + 1));
    }
    prepare();
    prepared& p = *m_prepared;
    const gemm_shape& s = m_spec.shapes[shape];
    const operands& o = p.shapes[shape];
    const void* source = nullptr;
    std::size_t elements = 0;
    switch (which) {
      case detail::gemm_matrix::a:
        source = o.a.get();
        elements = static_cast<std::size_t>(s.m * s.k);
        break;
      case detail::gemm_matrix::b:
        source = o.b.get();
        elements = static_cast<std::size_t>(s.k * s.n);
        break;
      case detail::gemm_matrix::c:
        source = o.c.get();
        elements = static_cast<std::size_t>(s.m * s.n);
        break;
    }
    const std::size_t size = element_bytes(m_spec.dtype);
    std::vector<std::byte> bytes(elements * size);
    COOLBENCH_CUDA_CALL(
        cudaMemcpyAsync(bytes.data(), source, bytes.size(), cudaMemcpyDeviceToHost, p.stream));
    COOLBENCH_CUDA_CALL(cudaStreamSynchronize(p.stream));
    std::vector<float> out(elements);
    for (std::size_t i = 0; i < elements; ++i) {
      if (m_spec.dtype == gemm_dtype::fp32) {
        std::memcpy(&out[i], bytes.data() + i * 4, 4);
      } else {
        std::uint16_t bits = 0;
        std::memcpy(&bits, bytes.data() + i * 2, 2);
        out[i] = m_spec.dtype == gemm_dtype::fp16 ? half_to_float(bits) : bf16_to_float(bits);
      }
    }
    return out;
  }

 private:
  // One shape's matrices, layouts and algorithm.
  struct operands {
    device::buffer a, b, c;
    cublasLtMatrixLayout_t layout_a = nullptr;
    cublasLtMatrixLayout_t layout_b = nullptr;
    cublasLtMatrixLayout_t layout_c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  // Everything of one prepare(). Members are destroyed in reverse order: the
  // adopted cuBLASLt objects first, then the memory, then the lease.
  struct prepared {
    explicit prepared(device::lease&& l) : lease(std::move(l)) {}
    device::lease lease;
    device::buffer workspace;
    std::vector<operands> shapes;
    std::vector<device::owned_resource> owned;
    device::owned_resource handle;    // the cuBLASLt handle; invalid after a release
    cudaGraphExec_t graph = nullptr;  // replay_graph's, captured at its first call
    device::owned_resource graph_owner;
    CUstream_st* stream = nullptr;
    void* workspace_ptr = nullptr;
    cublasLtHandle_t lt = nullptr;
    cublasLtMatmulDesc_t op = nullptr;
  };

  void enqueue_chain(prepared& p) {
    const float alpha = 1.0F;
    const float beta = 0.0F;
    // Row-major C = A·B is column-major C^T = B^T·A^T: cuBLASLt's "A" is our
    // B (N x K, leading dimension N) and its "B" our A (K x M, leading K).
    for (int round = 0; round < m_spec.rounds; ++round) {
      for (std::size_t i = 0; i < m_spec.shapes.size(); ++i) {
        const operands& o = p.shapes[i];
        for (int j = 0; j < m_spec.shapes[i].count; ++j) {
          if (m_launch_gap.count() > 0) std::this_thread::sleep_for(m_launch_gap);
          COOLBENCH_CUBLAS_CALL(cublasLtMatmul(p.lt, p.op, &alpha, o.b.get(), o.layout_b, o.a.get(),
                                               o.layout_a, &beta, o.c.get(), o.layout_c, o.c.get(),
                                               o.layout_c, &o.algo, p.workspace_ptr,
                                               workspace_bytes, p.stream));
        }
      }
    }
  }

  void build(prepared& p) {
    const std::size_t size = element_bytes(m_spec.dtype);
    p.stream = p.lease.stream();
    p.workspace = p.lease.allocate(workspace_bytes);
    p.workspace_ptr = p.workspace.get();
    // Seeds differ per shape and matrix, fixed, so every run and every
    // process computes the same.
    std::uint64_t seed = first_seed;
    p.shapes.resize(m_spec.shapes.size());
    for (std::size_t i = 0; i < m_spec.shapes.size(); ++i) {
      const auto m = static_cast<std::size_t>(m_spec.shapes[i].m);
      const auto n = static_cast<std::size_t>(m_spec.shapes[i].n);
      const auto k = static_cast<std::size_t>(m_spec.shapes[i].k);
      operands& o = p.shapes[i];
      o.a = p.lease.allocate(m * k * size);
      o.b = p.lease.allocate(k * n * size);
      o.c = p.lease.allocate(m * n * size);
      detail::fill_uniform(o.a.get(), m * k, m_spec.dtype, seed++, p.stream);
      detail::fill_uniform(o.b.get(), k * n, m_spec.dtype, seed++, p.stream);
      detail::fill_uniform(o.c.get(), m * n, m_spec.dtype, seed++, p.stream);
    }

    // Events outlive a release() of this chain when the context does: a
    // lease can create them but not destroy them, so they are made once per
    // context generation.
    if (m_start == nullptr || m_events_generation != p.lease.generation()) {
      m_start = p.lease.create_event();
      m_end = p.lease.create_event();
      m_events_generation = p.lease.generation();
    }

    COOLBENCH_CUBLAS_CALL(cublasLtCreate(&p.lt));
    p.handle =
        p.lease.adopt(device::resource_kind::blas_handle, [h = p.lt] { cublasLtDestroy(h); });
    // fp32 accumulation and scaling for every dtype. For fp32 inputs,
    // CUBLAS_COMPUTE_32F (not _FAST_TF32) keeps TF32 tensor cores out.
    COOLBENCH_CUBLAS_CALL(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    p.owned.push_back(p.lease.adopt(device::resource_kind::blas_handle,
                                    [d = p.op] { cublasLtMatmulDescDestroy(d); }));
    const cudaDataType_t type = cuda_type(m_spec.dtype);
    const auto make_layout = [&](cublasLtMatrixLayout_t& layout, std::uint64_t rows,
                                 std::uint64_t cols) {
      COOLBENCH_CUBLAS_CALL(
          cublasLtMatrixLayoutCreate(&layout, type, rows, cols, static_cast<std::int64_t>(rows)));
      p.owned.push_back(p.lease.adopt(device::resource_kind::blas_handle,
                                      [l = layout] { cublasLtMatrixLayoutDestroy(l); }));
    };
    for (std::size_t i = 0; i < m_spec.shapes.size(); ++i) {
      const gemm_shape& s = m_spec.shapes[i];
      operands& o = p.shapes[i];
      // Column-major views (see enqueue_chain): our B is N x K, A is K x M, C is N x M.
      make_layout(o.layout_b, static_cast<std::uint64_t>(s.n), static_cast<std::uint64_t>(s.k));
      make_layout(o.layout_a, static_cast<std::uint64_t>(s.k), static_cast<std::uint64_t>(s.m));
      make_layout(o.layout_c, static_cast<std::uint64_t>(s.n), static_cast<std::uint64_t>(s.m));
      o.algo = find_algorithm(p, o, s);
    }
  }

  cublasLtMatmulAlgo_t find_algorithm(prepared& p, const operands& o, const gemm_shape& s) const {
    cublasLtMatmulPreference_t preference = nullptr;
    COOLBENCH_CUBLAS_CALL(cublasLtMatmulPreferenceCreate(&preference));
    const std::uint64_t workspace_limit = workspace_bytes;
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    const cublasStatus_t set =
        cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &workspace_limit, sizeof workspace_limit);
    const cublasStatus_t found =
        set != CUBLAS_STATUS_SUCCESS
            ? set
            : cublasLtMatmulAlgoGetHeuristic(p.lt, p.op, o.layout_b, o.layout_a, o.layout_c,
                                             o.layout_c, preference, 1, &result, &returned);
    cublasLtMatmulPreferenceDestroy(preference);
    COOLBENCH_CUBLAS_CALL(found);
    if (returned == 0) {
      throw not_available("cuBLASLt has no algorithm for " + std::to_string(s.m) + "x" +
                          std::to_string(s.n) + "x" + std::to_string(s.k) + " " +
                          std::string(to_string(m_spec.dtype)) + " on GPU " +
                          std::to_string(m_device));
    }
    return result.algo;
  }

  gemm_chain_spec m_spec;
  int m_device;
  std::optional<prepared> m_prepared;
  CUevent_st* m_start = nullptr;
  CUevent_st* m_end = nullptr;
  std::uint64_t m_events_generation = 0;
  std::vector<CUevent_st*> m_replay_events;  // replay_graph's, made once per context generation
  std::uint64_t m_replay_generation = 0;
  detail::adaptive_hold m_hold{
      first_hold_base_ns + first_hold_per_gemm_ns * static_cast<std::uint64_t>(gemm_count(m_spec)),
      max_hold_ns};
  std::chrono::nanoseconds m_launch_gap{0};  // tests only: a slow host
};

}  // namespace

std::unique_ptr<workload> make_gemm_chain(const gemm_chain_spec& spec, int device) {
  return std::make_unique<gemm_chain>(spec, device);
}

namespace detail {

std::vector<float> read_gemm_matrix(workload& chain, gemm_matrix which, std::size_t shape) {
  auto* gemm = dynamic_cast<gemm_chain*>(&chain);
  if (gemm == nullptr) throw invalid_argument(chain.describe() + " is not a GEMM chain");
  return gemm->read(which, shape);
}

hold_state gemm_chain_hold(const workload& chain) {
  const auto* gemm = dynamic_cast<const gemm_chain*>(&chain);
  if (gemm == nullptr) throw invalid_argument(chain.describe() + " is not a GEMM chain");
  return gemm->hold();
}

std::vector<double> replay_gemm_chain_graph(workload& chain, int runs) {
  auto* gemm = dynamic_cast<gemm_chain*>(&chain);
  if (gemm == nullptr) throw invalid_argument(chain.describe() + " is not a GEMM chain");
  if (runs < 1) throw invalid_argument("replaying a GEMM chain needs at least one run");
  return gemm->replay_graph(runs);
}

void set_launch_gap(workload& chain, std::chrono::nanoseconds gap) {
  auto* gemm = dynamic_cast<gemm_chain*>(&chain);
  if (gemm == nullptr) throw invalid_argument(chain.describe() + " is not a GEMM chain");
  gemm->set_launch_gap(gap);
}

}  // namespace detail
}  // namespace coolbench::measure
