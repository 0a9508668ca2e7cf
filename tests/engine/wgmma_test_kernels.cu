// The kernels of wgmma_test_kernels.hpp: 256 threads (two warpgroups, as
// attention_wgmma.cu and attention_wgmma_overlap.cu), one block, the tiles 1024-byte aligned in
// dynamic shared memory. Built for sm_90a alone (tests/engine/CMakeLists.txt).
#include "engine/wgmma_test_kernels.hpp"

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "engine/backends/cuda/wgmma.cuh"

namespace coolbench::engine::wgmma_test {
namespace {

namespace wg = cuda::wgmma;

constexpr int k_threads = 2 * wg::k_warpgroup_threads;

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string("wgmma test: ") + what + ": " +
                             cudaGetErrorString(status));
  }
}

__device__ __forceinline__ std::uint32_t aligned_base(unsigned char* shared) {
  return (wg::shared_address(shared) + 1023U) & ~1023U;
}

// Row and column of accumulator register d[j][e] of this thread (wgmma.cuh's layout), in the
// block's 128 rows.
__device__ __forceinline__ int row_of(int e) {
  const int thread = static_cast<int>(threadIdx.x), lane = thread % 32;
  return thread / wg::k_warpgroup_threads * 64 + (thread % wg::k_warpgroup_threads) / 32 * 16 +
         lane / 4 + 8 * (e / 2);
}
__device__ __forceinline__ int column_of(int j, int e) {
  return 8 * j + 2 * (static_cast<int>(threadIdx.x) % 4) + e % 2;
}

template <class T, int Dim>
__global__ void __launch_bounds__(k_threads, 1)
    tile_kernel(const T* from, int rows, int columns, std::uint16_t* to) {
  extern __shared__ unsigned char shared[];
  const std::uint32_t tile = aligned_base(shared);
  wg::copy_swizzled<T, Dim, k_rows, k_threads>(tile, from, 0, rows, columns, Dim,
                                               static_cast<int>(threadIdx.x));
  wg::commit_copies();
  wg::wait_copies_for_wgmma();
  __syncthreads();
  const unsigned char* base = shared + (tile - wg::shared_address(shared));
  const auto* words = reinterpret_cast<const std::uint16_t*>(base);
  for (int i = static_cast<int>(threadIdx.x); i < k_rows * Dim; i += k_threads) to[i] = words[i];
}

template <class T, int Dim>
__global__ void __launch_bounds__(k_threads, 1)
    scores_kernel(const T* q, const T* k, float* s_out) {
  extern __shared__ unsigned char shared[];
  const std::uint32_t q_tile = aligned_base(shared);
  const std::uint32_t k_tile = q_tile + k_rows * Dim * 2;
  const int thread = static_cast<int>(threadIdx.x);
  wg::copy_swizzled<T, Dim, k_rows, k_threads>(q_tile, q, 0, k_rows, Dim, Dim, thread);
  wg::copy_swizzled<T, Dim, k_keys, k_threads>(k_tile, k, 0, k_keys, Dim, Dim, thread);
  wg::commit_copies();
  wg::wait_copies_for_wgmma();
  __syncthreads();
  float s[k_keys / 8][4];
  wg::scores<T, Dim, k_keys, k_rows>(s, q_tile, thread / wg::k_warpgroup_threads * 64, k_tile);
#pragma unroll
  for (int j = 0; j < k_keys / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) s_out[row_of(e) * k_keys + column_of(j, e)] = s[j][e];
  }
}

template <class T, int Dim>
__global__ void __launch_bounds__(k_threads, 1)
    product_kernel(const float* p, const T* v, float start, float* o_out) {
  extern __shared__ unsigned char shared[];
  const std::uint32_t v_tile = aligned_base(shared);
  wg::copy_swizzled<T, Dim, k_keys, k_threads>(v_tile, v, 0, k_keys, Dim, Dim,
                                               static_cast<int>(threadIdx.x));
  wg::commit_copies();
  wg::wait_copies_for_wgmma();
  __syncthreads();
  float s[k_keys / 8][4];
#pragma unroll
  for (int j = 0; j < k_keys / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) s[j][e] = p[row_of(e) * k_keys + column_of(j, e)];
  }
  std::uint32_t packed[k_keys / 16][4];
  wg::pack_probabilities<T, k_keys>(s, packed);
  float o[Dim / 8][4];
#pragma unroll
  for (int j = 0; j < Dim / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = start;
  wg::accumulate<T, Dim, k_keys>(o, packed, v_tile);
#pragma unroll
  for (int j = 0; j < Dim / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) o_out[row_of(e) * Dim + column_of(j, e)] = o[j][e];
  }
}

// The two products in flight at once, as attention_wgmma_overlap.cu issues them: s = Q Kᵀ (a
// group), then o = start + P V (a second group); wait_group 1 (the scores' group done, the
// product with V maybe not), the scores stored and doubled in place by ordinary code while the
// second group may run, then wait_group 0 and the output stored.
template <class T, int Dim>
__global__ void __launch_bounds__(k_threads, 1)
    overlapped_kernel(const T* q, const T* k, const float* p, const T* v, float start, float* s_out,
                      float* doubled_out, float* o_out) {
  extern __shared__ unsigned char shared[];
  const std::uint32_t q_tile = aligned_base(shared);
  const std::uint32_t k_tile = q_tile + k_rows * Dim * 2;
  const std::uint32_t v_tile = k_tile + k_keys * Dim * 2;
  const int thread = static_cast<int>(threadIdx.x);
  wg::copy_swizzled<T, Dim, k_rows, k_threads>(q_tile, q, 0, k_rows, Dim, Dim, thread);
  wg::copy_swizzled<T, Dim, k_keys, k_threads>(k_tile, k, 0, k_keys, Dim, Dim, thread);
  wg::copy_swizzled<T, Dim, k_keys, k_threads>(v_tile, v, 0, k_keys, Dim, Dim, thread);
  wg::commit_copies();
  wg::wait_copies_for_wgmma();
  __syncthreads();
  float s[k_keys / 8][4];
#pragma unroll
  for (int j = 0; j < k_keys / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) s[j][e] = p[row_of(e) * k_keys + column_of(j, e)];
  }
  std::uint32_t packed[k_keys / 16][4];
  wg::pack_probabilities<T, k_keys>(s, packed);
  float o[Dim / 8][4];
#pragma unroll
  for (int j = 0; j < Dim / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = start;
  wg::fence_registers(s);
  wg::fence_registers(o);
  wg::fence_registers(packed);
  wg::fence();
  wg::issue_scores<T, Dim, k_keys, k_rows>(s, q_tile, thread / wg::k_warpgroup_threads * 64,
                                           k_tile);
  wg::commit();
  wg::fence();
  wg::issue_accumulate<T, Dim, k_keys>(o, packed, v_tile);
  wg::commit();
  wg::wait<1>();
  wg::fence_registers(s);
#pragma unroll
  for (int j = 0; j < k_keys / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      s_out[row_of(e) * k_keys + column_of(j, e)] = s[j][e];
      s[j][e] *= 2;
    }
  }
  wg::fence_registers(s);
  wg::wait<0>();
  wg::fence_registers(o);
#pragma unroll
  for (int j = 0; j < k_keys / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) doubled_out[row_of(e) * k_keys + column_of(j, e)] = s[j][e];
  }
#pragma unroll
  for (int j = 0; j < Dim / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) o_out[row_of(e) * Dim + column_of(j, e)] = o[j][e];
  }
}

// A device copy of a host vector, freed at scope exit.
template <class V>
struct device_vector {
  V* data = nullptr;
  std::size_t size = 0;
  explicit device_vector(std::size_t n) : size(n) {
    check(cudaMalloc(&data, n * sizeof(V)), "cudaMalloc");
  }
  explicit device_vector(const std::vector<V>& from) : device_vector(from.size()) {
    check(cudaMemcpy(data, from.data(), size * sizeof(V), cudaMemcpyHostToDevice), "to the GPU");
  }
  device_vector(const device_vector&) = delete;
  device_vector& operator=(const device_vector&) = delete;
  ~device_vector() { cudaFree(data); }
  std::vector<V> read() const {
    std::vector<V> out(size);
    check(cudaMemcpy(out.data(), data, size * sizeof(V), cudaMemcpyDeviceToHost), "from the GPU");
    return out;
  }
};

// Launches `kernel` on one block of k_threads with `bytes` of dynamic shared memory (plus the
// alignment's 1024) and waits for it.
template <class... Params, class... Args>
void run(void (*kernel)(Params...), std::size_t bytes, Args... args) {
  const std::size_t total = bytes + 1024;
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(total)),
        "cudaFuncSetAttribute");
  kernel<<<1, k_threads, total>>>(args...);
  check(cudaGetLastError(), "the launch");
  check(cudaDeviceSynchronize(), "the kernel");
}

template <class T, int Dim>
std::vector<float> scores_of(const std::vector<std::uint16_t>& q,
                             const std::vector<std::uint16_t>& k) {
  const device_vector<std::uint16_t> dq(q), dk(k);
  device_vector<float> s(static_cast<std::size_t>(k_rows) * k_keys);
  run(scores_kernel<T, Dim>, static_cast<std::size_t>(k_rows + k_keys) * Dim * 2,
      reinterpret_cast<const T*>(dq.data), reinterpret_cast<const T*>(dk.data), s.data);
  return s.read();
}

template <class T, int Dim>
std::vector<float> product_of(const std::vector<float>& p, const std::vector<std::uint16_t>& v,
                              float start) {
  const device_vector<float> dp(p);
  const device_vector<std::uint16_t> dv(v);
  device_vector<float> o(static_cast<std::size_t>(k_rows) * Dim);
  run(product_kernel<T, Dim>, static_cast<std::size_t>(k_keys) * Dim * 2, dp.data,
      reinterpret_cast<const T*>(dv.data), start, o.data);
  return o.read();
}

template <class T, int Dim>
overlapped_result overlapped_of(const std::vector<std::uint16_t>& q,
                                const std::vector<std::uint16_t>& k, const std::vector<float>& p,
                                const std::vector<std::uint16_t>& v, float start) {
  const device_vector<std::uint16_t> dq(q), dk(k), dv(v);
  const device_vector<float> dp(p);
  device_vector<float> s(static_cast<std::size_t>(k_rows) * k_keys);
  device_vector<float> doubled(static_cast<std::size_t>(k_rows) * k_keys);
  device_vector<float> o(static_cast<std::size_t>(k_rows) * Dim);
  run(overlapped_kernel<T, Dim>, static_cast<std::size_t>(k_rows + 2 * k_keys) * Dim * 2,
      reinterpret_cast<const T*>(dq.data), reinterpret_cast<const T*>(dk.data), dp.data,
      reinterpret_cast<const T*>(dv.data), start, s.data, doubled.data, o.data);
  return {s.read(), doubled.read(), o.read()};
}

template <int Dim>
std::vector<std::uint16_t> tile_of(int rows, int columns, const std::vector<std::uint16_t>& from) {
  const device_vector<std::uint16_t> d(from);
  device_vector<std::uint16_t> out(static_cast<std::size_t>(k_rows) * Dim);
  run(tile_kernel<__half, Dim>, static_cast<std::size_t>(k_rows) * Dim * 2,
      reinterpret_cast<const __half*>(d.data), rows, columns, out.data);
  return out.read();
}

void expect_dim(int dim) {
  if (dim != 64 && dim != 128) {
    throw std::invalid_argument("wgmma test: dim " + std::to_string(dim) + ", not 64 or 128");
  }
}

}  // namespace

int compute_capability() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return -1;
  int major = 0, minor = 0;
  check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), "the device");
  check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0), "the device");
  return 10 * major + minor;
}

std::vector<std::uint16_t> swizzled_tile(int dim, int rows, int columns,
                                         const std::vector<std::uint16_t>& from) {
  expect_dim(dim);
  return dim == 64 ? tile_of<64>(rows, columns, from) : tile_of<128>(rows, columns, from);
}

std::vector<float> scores(bool bf16, int dim, const std::vector<std::uint16_t>& q,
                          const std::vector<std::uint16_t>& k) {
  expect_dim(dim);
  if (bf16)
    return dim == 64 ? scores_of<__nv_bfloat16, 64>(q, k) : scores_of<__nv_bfloat16, 128>(q, k);
  return dim == 64 ? scores_of<__half, 64>(q, k) : scores_of<__half, 128>(q, k);
}

std::vector<float> product(bool bf16, int dim, const std::vector<float>& p,
                           const std::vector<std::uint16_t>& v, float start) {
  expect_dim(dim);
  if (bf16) {
    return dim == 64 ? product_of<__nv_bfloat16, 64>(p, v, start)
                     : product_of<__nv_bfloat16, 128>(p, v, start);
  }
  return dim == 64 ? product_of<__half, 64>(p, v, start) : product_of<__half, 128>(p, v, start);
}

overlapped_result overlapped(bool bf16, int dim, const std::vector<std::uint16_t>& q,
                             const std::vector<std::uint16_t>& k, const std::vector<float>& p,
                             const std::vector<std::uint16_t>& v, float start) {
  expect_dim(dim);
  if (bf16) {
    return dim == 64 ? overlapped_of<__nv_bfloat16, 64>(q, k, p, v, start)
                     : overlapped_of<__nv_bfloat16, 128>(q, k, p, v, start);
  }
  return dim == 64 ? overlapped_of<__half, 64>(q, k, p, v, start)
                   : overlapped_of<__half, 128>(q, k, p, v, start);
}

}  // namespace coolbench::engine::wgmma_test
