// LayerNormalization of rows, optionally of a residual sum, two-pass
// statistics in float32, 16-byte vector loads where the row width and every
// pointer allow. Rows of up to k_layer_norm_warp_width elements (GPT-2's, BERT's and
// ViT's 768) take one warp each, the row held in the lanes' registers: x is
// read once and the reductions are warp shuffles, with no block barrier and
// no shared memory. Wider rows take one block each, the row kept in shared
// memory as float32 (up to k_cached_width elements).
#include "engine/backends/cuda/common.cuh"
#include "engine/backends/cuda/fused_kernels.hpp"
#include "engine/backends/cuda/launch_shapes.hpp"

namespace coolbench::engine::cuda {
namespace {

constexpr int k_max_threads = k_layer_norm_block_threads;
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

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xFFFFFFFFU, v, offset);
  return v;
}

// One warp per row: lane l holds the Vec-element groups l, l + 32, … of its
// row (PerLane of them), so a warp's loads cover 32 · Vec contiguous
// elements each step. Registers past the row's end are skipped. Rows of up
// to 32 registers a lane also load scale and bias with x, so the row waits
// out the memory latency once, not again before its stores.
template <class T, int Vec, int PerLane>
__global__ void __launch_bounds__(k_layer_norm_warp_rows * 32)
    warp_layer_norm_kernel(const T* a, const T* b, const T* scale, const T* bias, T* y, T* sum,
                           std::int64_t rows, int n, float epsilon) {
  const std::int64_t row = std::int64_t{blockIdx.x} * k_layer_norm_warp_rows + threadIdx.x / 32;
  if (row >= rows) return;  // the whole warp leaves together: the shuffles stay full
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t base = row * n;
  constexpr bool early = PerLane * Vec <= 32;  // scale and bias loaded with x
  constexpr int held = early ? PerLane : 1;
  float x[PerLane][Vec];
  pack<T, Vec> scales[held], biases[held];
  float total = 0;
#pragma unroll
  for (int t = 0; t < PerLane; ++t) {
    const int j = (lane + 32 * t) * Vec;
    if (j < n) {
      if constexpr (early) {
        scales[t] = *reinterpret_cast<const pack<T, Vec>*>(scale + j);
        if (bias != nullptr) biases[t] = *reinterpret_cast<const pack<T, Vec>*>(bias + j);
      }
      input_at<T, Vec>(a, b, base + j, x[t]);
      if (sum != nullptr) store_row<T, Vec>(sum + base + j, x[t]);
#pragma unroll
      for (int k = 0; k < Vec; ++k) total += x[t][k];
    }
  }
  const float mean = warp_sum(total) / static_cast<float>(n);
  float squares = 0;
#pragma unroll
  for (int t = 0; t < PerLane; ++t) {
    if ((lane + 32 * t) * Vec < n) {
#pragma unroll
      for (int k = 0; k < Vec; ++k) squares += (x[t][k] - mean) * (x[t][k] - mean);
    }
  }
  const float inv_std = rsqrtf(warp_sum(squares) / static_cast<float>(n) + epsilon);
#pragma unroll
  for (int t = 0; t < PerLane; ++t) {
    const int j = (lane + 32 * t) * Vec;
    if (j < n) {
      float s[Vec], o[Vec] = {};
      if constexpr (early) {
#pragma unroll
        for (int k = 0; k < Vec; ++k) {
          s[k] = load(scales[t].v, k);
          if (bias != nullptr) o[k] = load(biases[t].v, k);
        }
      } else {
        load_row<T, Vec>(scale + j, s);
        if (bias != nullptr) load_row<T, Vec>(bias + j, o);
      }
#pragma unroll
      for (int k = 0; k < Vec; ++k) x[t][k] = (x[t][k] - mean) * inv_std * s[k] + o[k];
      store_row<T, Vec>(y + base + j, x[t]);
    }
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
                 std::int64_t rows, std::int64_t n, float epsilon, const layer_norm_launch& l,
                 cudaStream_t stream) {
  if (l.blocks > 0x7FFFFFFF)
    throw invalid_argument("the CUDA LayerNorm takes at most 2^31-1 blocks");
  const auto grid = static_cast<unsigned>(l.blocks);
  const auto threads = static_cast<unsigned>(l.threads);
  if (l.warp_per_row) {
    const auto launch = [&](auto elements) {
      constexpr int per_lane = decltype(elements)::value / Vec;
      warp_layer_norm_kernel<T, Vec, per_lane><<<grid, threads, 0, stream>>>(
          a, b, scale, bias, y, sum, rows, static_cast<int>(n), epsilon);
    };
    switch (l.lane_elements) {
      case 8: launch(std::integral_constant<int, 8>{}); break;
      case 16: launch(std::integral_constant<int, 16>{}); break;
      case 32: launch(std::integral_constant<int, 32>{}); break;
      default: launch(std::integral_constant<int, 64>{}); break;
    }
  } else if (n <= k_cached_width) {
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
    bool all_aligned = true;
    for (const void* p :
         {a, b, scale, bias, static_cast<const void*>(y), static_cast<const void*>(sum)}) {
      all_aligned = all_aligned && aligned(p, 16);
    }
    const layer_norm_launch l = plan_layer_norm(static_cast<int>(sizeof(T)), rows, n, all_aligned);
    const auto args = [&](auto launch) {
      launch(static_cast<const T*>(a), static_cast<const T*>(b), static_cast<const T*>(scale),
             static_cast<const T*>(bias), static_cast<T*>(y), static_cast<T*>(sum), rows, n,
             epsilon, l, as_stream(stream));
    };
    if (l.vec == vec) {
      args(launch_rows<T, vec>);
    } else {
      args(launch_rows<T, 1>);
    }
  });
  check_launch();
}

}  // namespace coolbench::engine::cuda
