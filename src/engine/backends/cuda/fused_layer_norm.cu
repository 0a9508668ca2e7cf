// LayerNormalization of rows, optionally of a residual sum: one block per
// row, 16-byte vector loads where the row width allows, the row kept in
// shared memory as float32 (up to k_cached_width elements) so that x is read
// from global memory once, warp-shuffle reductions, two-pass statistics.
#include "engine/backends/cuda/common.cuh"
#include "engine/backends/cuda/fused_kernels.hpp"

namespace coolbench::engine::cuda {
namespace {

constexpr int k_max_threads = 512;
// 44 KiB of float32: with block_sum's 128 bytes, under the 48 KiB a block
// gets without opting in to more.
constexpr std::int64_t k_cached_width = 11 * 1024;

template <class T, int Vec>
struct alignas(sizeof(T) * Vec) pack {
  T v[Vec];
};

template <class T, int Vec>
__device__ __forceinline__ void load_row(const T* p, float (&out)[Vec]) {
  const pack<T, Vec> values = *reinterpret_cast<const pack<T, Vec>*>(p);
#pragma unroll
  for (int k = 0; k < Vec; ++k) out[k] = load(values.v, k);
}

template <class T, int Vec>
__device__ __forceinline__ void store_row(T* p, const float (&in)[Vec]) {
  pack<T, Vec> values;
#pragma unroll
  for (int k = 0; k < Vec; ++k) values.v[k] = narrow<T>(in[k]);
  *reinterpret_cast<pack<T, Vec>*>(p) = values;
}

__device__ float block_sum(float v) {
  __shared__ float partial[32];
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xFFFFFFFFU, v, offset);
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // the previous call's readers are done with partial
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < blockDim.x / 32 ? partial[lane] : 0.0F;
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xFFFFFFFFU, v, offset);
  return v;
}

template <class T>
__device__ __forceinline__ float round_to(float v) {
  const T stored = narrow<T>(v);
  return load(&stored, 0);
}

// x = a (+ b, rounded to T as the Add node stores it) for Vec elements at j.
template <class T, int Vec>
__device__ __forceinline__ void input_at(const T* a, const T* b, std::int64_t at, float (&x)[Vec]) {
  load_row<T, Vec>(a + at, x);
  if (b != nullptr) {
    float other[Vec];
    load_row<T, Vec>(b + at, other);
#pragma unroll
    for (int k = 0; k < Vec; ++k) x[k] = round_to<T>(x[k] + other[k]);
  }
}

template <class T, int Vec, bool Cached>
__global__ void __launch_bounds__(k_max_threads)
    fused_layer_norm_kernel(const T* a, const T* b, const T* scale, const T* bias, T* y, T* sum,
                            std::int64_t n, float epsilon) {
  extern __shared__ float row[];
  const std::int64_t base = blockIdx.x * n;
  const std::int64_t step = std::int64_t{blockDim.x} * Vec;
  float total = 0;
  for (std::int64_t j = threadIdx.x * std::int64_t{Vec}; j < n; j += step) {
    float x[Vec];
    input_at<T, Vec>(a, b, base + j, x);
    if (sum != nullptr) store_row<T, Vec>(sum + base + j, x);
#pragma unroll
    for (int k = 0; k < Vec; ++k) {
      total += x[k];
      if constexpr (Cached) row[j + k] = x[k];
    }
  }
  const float mean = block_sum(total) / static_cast<float>(n);
  float squares = 0;
  for (std::int64_t j = threadIdx.x * std::int64_t{Vec}; j < n; j += step) {
    float x[Vec];
    if constexpr (Cached) {
#pragma unroll
      for (int k = 0; k < Vec; ++k) x[k] = row[j + k];
    } else {
      input_at<T, Vec>(a, b, base + j, x);
    }
#pragma unroll
    for (int k = 0; k < Vec; ++k) squares += (x[k] - mean) * (x[k] - mean);
  }
  const float inv_std = rsqrtf(block_sum(squares) / static_cast<float>(n) + epsilon);
  for (std::int64_t j = threadIdx.x * std::int64_t{Vec}; j < n; j += step) {
    float x[Vec], s[Vec], o[Vec] = {};
    if constexpr (Cached) {
#pragma unroll
      for (int k = 0; k < Vec; ++k) x[k] = row[j + k];
    } else {
      input_at<T, Vec>(a, b, base + j, x);
    }
    load_row<T, Vec>(scale + j, s);
    if (bias != nullptr) load_row<T, Vec>(bias + j, o);
#pragma unroll
    for (int k = 0; k < Vec; ++k) x[k] = (x[k] - mean) * inv_std * s[k] + o[k];
    store_row<T, Vec>(y + base + j, x);
  }
}

bool aligned(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

template <class T, int Vec>
void launch_rows(const T* a, const T* b, const T* scale, const T* bias, T* y, T* sum,
                 std::int64_t rows, std::int64_t n, float epsilon, cudaStream_t stream) {
  const std::int64_t lanes = (n / Vec + 31) / 32 * 32;
  const auto threads = static_cast<unsigned>(std::min<std::int64_t>(lanes, k_max_threads));
  if (rows > 0x7FFFFFFF) throw invalid_argument("the CUDA LayerNorm takes at most 2^31-1 rows");
  const auto grid = static_cast<unsigned>(rows);
  if (n <= k_cached_width) {
    const std::size_t shared = static_cast<std::size_t>(n) * sizeof(float);
    fused_layer_norm_kernel<T, Vec, true>
        <<<grid, threads, shared, stream>>>(a, b, scale, bias, y, sum, n, epsilon);
  } else {
    fused_layer_norm_kernel<T, Vec, false>
        <<<grid, threads, 0, stream>>>(a, b, scale, bias, y, sum, n, epsilon);
  }
}

}  // namespace

void launch_fused_layer_norm(dtype type, const void* a, const void* b, const void* scale,
                             const void* bias, void* y, void* sum, std::int64_t rows,
                             std::int64_t n, float epsilon, void* stream) {
  if (rows == 0 || n == 0) return;
  dispatch(type, float_list{}, [&](auto t) {
    using T = typename decltype(t)::type;
    constexpr int vec = 16 / sizeof(T);
    bool vectorized = n % vec == 0;
    for (const void* p :
         {a, b, scale, bias, static_cast<const void*>(y), static_cast<const void*>(sum)}) {
      vectorized = vectorized && aligned(p, 16);
    }
    const auto args = [&](auto launch) {
      launch(static_cast<const T*>(a), static_cast<const T*>(b), static_cast<const T*>(scale),
             static_cast<const T*>(bias), static_cast<T*>(y), static_cast<T*>(sum), rows, n,
             epsilon, as_stream(stream));
    };
    if (vectorized) {
      args(launch_rows<T, vec>);
    } else {
      args(launch_rows<T, 1>);
    }
  });
  check_launch();
}

}  // namespace coolbench::engine::cuda
