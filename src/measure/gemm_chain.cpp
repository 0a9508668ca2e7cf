// The GEMM chain workload: COUNT cuBLASLt matmuls back to back on the lease's
// stream, timed with CUDA events around them while a wait kernel holds the
// stream, so the figure is GPU time and not the host's launch rate
// (detail/stream_hold.hpp). Every resource comes from the device layer
// (memory, stream, events) or is adopted by it (the cuBLASLt handle and
// descriptors), so a device release destroys them and prepare() rebuilds.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
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
#include "device/detail/cuda_check.hpp"
#include "measure/detail/cublas_check.hpp"
#include "measure/detail/fill_random.hpp"
#include "measure/detail/gemm_chain.hpp"
#include "measure/detail/stream_hold.hpp"

namespace coolbench::measure {
namespace {

// cuBLAS recommends 32 MiB of workspace on Hopper; smaller GPUs use less of it.
constexpr std::size_t workspace_bytes = std::size_t{32} << 20U;
// Seeds of A, B and C: fixed, so every run and every process computes the same.
constexpr std::uint64_t seed_a = 1;
constexpr std::uint64_t seed_b = 2;
constexpr std::uint64_t seed_c = 3;
// The first hold: a cuBLASLt launch takes the host a few microseconds. A hold
// found too short doubles (to at most max_hold_ns) and the sample is redone.
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
    const double elements = static_cast<double>(spec.m) * static_cast<double>(spec.k) +
                            static_cast<double>(spec.k) * static_cast<double>(spec.n) +
                            static_cast<double>(spec.m) * static_cast<double>(spec.n);
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

  [[nodiscard]] std::string describe() const override {
    return "gemm " + std::string(to_string(m_spec.dtype)) + " " + std::to_string(m_spec.m) + "x" +
           std::to_string(m_spec.n) + "x" + std::to_string(m_spec.k) + " x" +
           std::to_string(m_spec.count) + " (cuBLASLt)";
  }
  [[nodiscard]] std::optional<int> device() const override { return m_device; }
  [[nodiscard]] std::optional<double> flops() const override {
    return 2.0 * static_cast<double>(m_spec.m) * static_cast<double>(m_spec.n) *
           static_cast<double>(m_spec.k) * m_spec.count;
  }

  void prepare() override {
    // A device release (by this thread, or after this chain's release()) leaves
    // the buffers stale: then everything is made again in the new context.
    if (m_prepared && m_prepared->a.valid() && m_prepared->handle.valid()) return;
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
      detail::hold_stream(p.stream, m_hold_ns);
      COOLBENCH_CUDA_CALL(cudaEventRecord(m_start, p.stream));
      enqueue_chain(p);
      COOLBENCH_CUDA_CALL(cudaEventRecord(m_end, p.stream));
      // Still held once everything is queued: the GPU ran the chain without
      // waiting for the host. Otherwise the figure could include launch gaps.
      const cudaError_t started = cudaEventQuery(m_start);
      if (started != cudaErrorNotReady) COOLBENCH_CUDA_CALL(started);
      COOLBENCH_CUDA_CALL(cudaEventSynchronize(m_end));
      if (started == cudaErrorNotReady || m_hold_ns >= max_hold_ns) break;
      m_hold_ns = std::min(m_hold_ns * 2, max_hold_ns);
      ++m_short_holds;
    }
    t.end_ns = steady_now_ns();
    float ms = 0;
    COOLBENCH_CUDA_CALL(cudaEventElapsedTime(&ms, m_start, m_end));
    t.latency_ms = ms;
    return t;
  }

  void release() override { m_prepared.reset(); }

  [[nodiscard]] detail::hold_state hold() const { return {m_hold_ns, m_short_holds}; }
  void set_launch_gap(std::chrono::nanoseconds gap) { m_launch_gap = gap; }

  std::vector<float> read(detail::gemm_matrix which) {
    prepare();
    prepared& p = *m_prepared;
    const void* source = nullptr;
    std::size_t elements = 0;
    switch (which) {
      case detail::gemm_matrix::a:
        source = p.a_ptr;
        elements = static_cast<std::size_t>(m_spec.m * m_spec.k);
        break;
      case detail::gemm_matrix::b:
        source = p.b_ptr;
        elements = static_cast<std::size_t>(m_spec.k * m_spec.n);
        break;
      case detail::gemm_matrix::c:
        source = p.c_ptr;
        elements = static_cast<std::size_t>(m_spec.m * m_spec.n);
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
  // Everything of one prepare(). Members are destroyed in reverse order: the
  // adopted cuBLASLt objects first, then the memory, then the lease.
  struct prepared {
    explicit prepared(device::lease&& l) : lease(std::move(l)) {}
    device::lease lease;
    device::buffer a, b, c, workspace;
    std::vector<device::owned_resource> owned;
    device::owned_resource handle;  // the cuBLASLt handle; invalid after a release
    CUstream_st* stream = nullptr;
    void* a_ptr = nullptr;
    void* b_ptr = nullptr;
    void* c_ptr = nullptr;
    void* workspace_ptr = nullptr;
    cublasLtHandle_t lt = nullptr;
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t layout_a = nullptr;
    cublasLtMatrixLayout_t layout_b = nullptr;
    cublasLtMatrixLayout_t layout_c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };

  void enqueue_chain(prepared& p) {
    const float alpha = 1.0F;
    const float beta = 0.0F;
    // Row-major C = A·B is column-major C^T = B^T·A^T: cuBLASLt's "A" is our
    // B (N x K, leading dimension N) and its "B" our A (K x M, leading K).
    for (int i = 0; i < m_spec.count; ++i) {
      if (m_launch_gap.count() > 0) std::this_thread::sleep_for(m_launch_gap);
      COOLBENCH_CUBLAS_CALL(cublasLtMatmul(
          p.lt, p.op, &alpha, p.b_ptr, p.layout_b, p.a_ptr, p.layout_a, &beta, p.c_ptr, p.layout_c,
          p.c_ptr, p.layout_c, &p.algo, p.workspace_ptr, workspace_bytes, p.stream));
    }
  }

  void build(prepared& p) {
    const std::size_t size = element_bytes(m_spec.dtype);
    const auto m = static_cast<std::size_t>(m_spec.m);
    const auto n = static_cast<std::size_t>(m_spec.n);
    const auto k = static_cast<std::size_t>(m_spec.k);
    p.stream = p.lease.stream();
    p.a = p.lease.allocate(m * k * size);
    p.b = p.lease.allocate(k * n * size);
    p.c = p.lease.allocate(m * n * size);
    p.workspace = p.lease.allocate(workspace_bytes);
    p.a_ptr = p.a.get();
    p.b_ptr = p.b.get();
    p.c_ptr = p.c.get();
    p.workspace_ptr = p.workspace.get();
    detail::fill_uniform(p.a_ptr, m * k, m_spec.dtype, seed_a, p.stream);
    detail::fill_uniform(p.b_ptr, k * n, m_spec.dtype, seed_b, p.stream);
    detail::fill_uniform(p.c_ptr, m * n, m_spec.dtype, seed_c, p.stream);

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
    // Column-major views (see run()): our B is N x K, our A is K x M, C is N x M.
    make_layout(p.layout_b, n, k);
    make_layout(p.layout_a, k, m);
    make_layout(p.layout_c, n, m);

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
            : cublasLtMatmulAlgoGetHeuristic(p.lt, p.op, p.layout_b, p.layout_a, p.layout_c,
                                             p.layout_c, preference, 1, &result, &returned);
    cublasLtMatmulPreferenceDestroy(preference);
    COOLBENCH_CUBLAS_CALL(found);
    if (returned == 0) {
      throw not_available("cuBLASLt has no algorithm for " + describe() + " on GPU " +
                          std::to_string(m_device));
    }
    p.algo = result.algo;
  }

  gemm_chain_spec m_spec;
  int m_device;
  std::optional<prepared> m_prepared;
  CUevent_st* m_start = nullptr;
  CUevent_st* m_end = nullptr;
  std::uint64_t m_events_generation = 0;
  std::uint64_t m_hold_ns =
      first_hold_base_ns + first_hold_per_gemm_ns * static_cast<std::uint64_t>(m_spec.count);
  std::uint64_t m_short_holds = 0;
  std::chrono::nanoseconds m_launch_gap{0};  // tests only: a slow host
};

}  // namespace

std::unique_ptr<workload> make_gemm_chain(const gemm_chain_spec& spec, int device) {
  return std::make_unique<gemm_chain>(spec, device);
}

namespace detail {

std::vector<float> read_gemm_matrix(workload& chain, gemm_matrix which) {
  auto* gemm = dynamic_cast<gemm_chain*>(&chain);
  if (gemm == nullptr) throw invalid_argument(chain.describe() + " is not a GEMM chain");
  return gemm->read(which);
}

hold_state gemm_chain_hold(const workload& chain) {
  const auto* gemm = dynamic_cast<const gemm_chain*>(&chain);
  if (gemm == nullptr) throw invalid_argument(chain.describe() + " is not a GEMM chain");
  return gemm->hold();
}

void set_launch_gap(workload& chain, std::chrono::nanoseconds gap) {
  auto* gemm = dynamic_cast<gemm_chain*>(&chain);
  if (gemm == nullptr) throw invalid_argument(chain.describe() + " is not a GEMM chain");
  gemm->set_launch_gap(gap);
}

}  // namespace detail
}  // namespace coolbench::measure
