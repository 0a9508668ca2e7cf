// Device-side helpers shared by the CUDA backend's kernels: the element types
// of each dtype, loads that widen 16-bit floats to float32 (the arithmetic
// type) one element or a 16-byte piece at a time, the broadcast indexer, and
// the dtype dispatch.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include "coolbench/core/error.hpp"
#include "core/cuda_check.hpp"
#include "engine/backends/cuda/kernels.hpp"

namespace coolbench::engine::cuda {

// The arithmetic type of an element type: float for the 16-bit floats.
template <class T>
struct math {
  using type = T;
};
template <>
struct math<__half> {
  using type = float;
};
template <>
struct math<__nv_bfloat16> {
  using type = float;
};
template <class T>
using math_t = typename math<T>::type;

template <class T>
__device__ __forceinline__ math_t<T> load(const T* p, std::int64_t i) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(p[i]);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(p[i]);
  } else {
    return p[i];
  }
}

// Elements of T in a 16-byte piece (a uint4 load).
template <class T>
constexpr int k_piece = static_cast<int>(16 / sizeof(T));

// A 16-byte piece of T (float, __half or __nv_bfloat16) widened to floats.
template <class T>
__device__ __forceinline__ void widen(const uint4& raw, float (&out)[k_piece<T>]) {
  const unsigned words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (std::is_same_v<T, float>) {
      out[i] = __uint_as_float(words[i]);
    } else {
      float2 pair;
      if constexpr (std::is_same_v<T, __half>) {
        pair = __half22float2(*reinterpret_cast<const __half2*>(&words[i]));
      } else {
        pair = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&words[i]));
      }
      out[2 * i] = pair.x;
      out[2 * i + 1] = pair.y;
    }
  }
}

template <class T, class V>
__device__ __forceinline__ T narrow(V v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != V{};
  } else {
    return static_cast<T>(v);
  }
}

/// Element offset of operand `k` for output index `i`.
__device__ __forceinline__ std::int64_t offset_of(const index_plan& p, int k, std::int64_t i) {
  if (p.contiguous) return p.base[k] + i;
  std::int64_t offset = p.base[k];
  for (int d = p.rank - 1; d >= 0; --d) {
    const std::int64_t coordinate = i % p.shape[d];
    i /= p.shape[d];
    offset += coordinate * p.stride[k][d];
  }
  return offset;
}

inline constexpr int k_block = 256;

inline unsigned grid_for(std::int64_t count) {
  // A grid-stride loop covers the rest: enough blocks to fill an H200 many times.
  const std::int64_t blocks = (count + k_block - 1) / k_block;
  return static_cast<unsigned>(blocks < 65535 * 8 ? (blocks > 0 ? blocks : 1) : 65535 * 8);
}

inline cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

inline void check_launch() { COOLBENCH_CUDA_CALL(cudaGetLastError()); }

template <class... T>
struct type_list {};
using float_list = type_list<float, __half, __nv_bfloat16>;
using numeric_list = type_list<float, __half, __nv_bfloat16, std::int64_t, std::int32_t>;
using any_list = type_list<float, __half, __nv_bfloat16, std::int64_t, std::int32_t, bool>;

template <class T>
constexpr dtype dtype_for() {
  if constexpr (std::is_same_v<T, float>) return dtype::float32;
  if constexpr (std::is_same_v<T, __half>) return dtype::float16;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return dtype::bfloat16;
  if constexpr (std::is_same_v<T, std::int64_t>) return dtype::int64;
  if constexpr (std::is_same_v<T, std::int32_t>) return dtype::int32;
  return dtype::boolean;
}

template <class T>
struct tag {
  using type = T;
};

/// Calls f(tag<T>{}) for the element type of `type` among the list; throws
/// invalid_argument for another (the backend's refuses() keeps these out).
template <class... T, class F>
void dispatch(dtype type, type_list<T...> /*list*/, F&& f) {
  const bool matched = ((type == dtype_for<T>() && (f(tag<T>{}), true)) || ...);
  if (!matched) {
    throw invalid_argument("the CUDA kernel has no variant for dtype " +
                           std::string(to_string(type)));
  }
}

/// Element types by size, for kernels that only move bytes.
template <class F>
void dispatch_bytes(std::size_t element, F&& f) {
  switch (element) {
    case 1: f(tag<std::uint8_t>{}); return;
    case 2: f(tag<std::uint16_t>{}); return;
    case 4: f(tag<std::uint32_t>{}); return;
    case 8: f(tag<std::uint64_t>{}); return;
    default: break;
  }
  throw invalid_argument("the CUDA copy kernels move 1, 2, 4 or 8-byte elements, not " +
                         std::to_string(element));
}

}  // namespace coolbench::engine::cuda
