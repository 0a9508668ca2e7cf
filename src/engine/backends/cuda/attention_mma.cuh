// The tensor-core prefill kernel of coolbench.Attention for float16 and
// bfloat16 (attention.cu launches it on sm_90): the same online softmax as
// flash_kernel, with the two products on mma.sync m16n8k16 (16-bit inputs,
// float32 accumulation). A block of 4 warps takes 64 query rows of one
// (batch, head), each warp 16 rows; the scores stay in the accumulator
// fragments, are rescaled and masked there, and are repacked as the
// 16-bit A operand of the product with V (the layout of an m16n8 result
// is that of an m16k16 operand's halves).
#pragma once

#include <cstring>

#include "engine/backends/cuda/attention.hpp"
#include "engine/backends/cuda/common.cuh"

namespace coolbench::engine::cuda::mma {

constexpr int k_rows = 64;  // 16 per warp
constexpr int k_threads = 128;

// Keys per tile (bounded by the score fragments' registers), and the 16-bit
// elements per shared row (padded: conflict-free fragment loads).
template <int Dim>
inline constexpr int keys_per_tile = Dim <= 64 ? 64 : 32;
template <int Dim>
inline constexpr int stride = Dim + 8;
template <int Dim>
inline constexpr std::size_t shared_bytes = 2 * static_cast<std::size_t>(stride<Dim>) *
                                            (k_rows + 2 * keys_per_tile<Dim>);

template <class T>
__device__ __forceinline__ void mma16816(float (&c)[4], const std::uint32_t (&a)[4],
                                         std::uint32_t b0, std::uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
#else
  __trap();  // the host launches this kernel only on sm_90
#endif
}

template <class T>
__device__ __forceinline__ std::uint32_t pack(float lo, float hi) {
  std::uint32_t bits = 0;
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 h = __floats2half2_rn(lo, hi);
    memcpy(&bits, &h, 4);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    memcpy(&bits, &h, 4);
  }
  return bits;
}

template <class T>
__device__ __forceinline__ std::uint32_t pair(const T* p) {
  std::uint32_t bits = 0;
  memcpy(&bits, p, 4);
  return bits;
}

template <class T>
__device__ __forceinline__ std::uint32_t pair(const T& lo, const T& hi) {
  std::uint16_t l = 0, h = 0;
  memcpy(&l, &lo, 2);
  memcpy(&h, &hi, 2);
  return static_cast<std::uint32_t>(l) | (static_cast<std::uint32_t>(h) << 16);
}

// Rows [base, base + Rows) of a matrix of head_dim columns, rows `ld`
// elements apart, into shared rows of stride<Dim>, zero past the end and
// past head_dim. Each thread issues all
// its loads before its first store: one element per loop trip waits out the
// memory latency once per element, which made a GPT-2 attention (12 heads,
// 128 tokens) take 45 us on the H200. Rows of exactly Dim elements at
// 16-byte aligned addresses move 16 bytes per load.
template <class T, int Dim, int Rows>
__device__ __forceinline__ void load_tile(T* shared, const T* from, std::int64_t base,
                                          std::int64_t count, std::int64_t d, std::int64_t ld) {
  constexpr int vec = 16 / static_cast<int>(sizeof(T));
  constexpr int per_row = Dim / vec;
  constexpr int trips = (Rows * per_row + k_threads - 1) / k_threads;
  if (d == Dim && ld % vec == 0 && reinterpret_cast<std::uintptr_t>(from) % 16 == 0) {
    uint4 held[trips];
#pragma unroll
    for (int t = 0; t < trips; ++t) {
      const int e = threadIdx.x + t * k_threads, r = e / per_row, c = (e % per_row) * vec;
      held[t] = e < Rows * per_row && base + r < count
                    ? *reinterpret_cast<const uint4*>(from + (base + r) * ld + c)
                    : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int t = 0; t < trips; ++t) {
      const int e = threadIdx.x + t * k_threads, r = e / per_row, c = (e % per_row) * vec;
      if (e < Rows * per_row) *reinterpret_cast<uint4*>(&shared[r * stride<Dim> + c]) = held[t];
    }
    return;
  }
  constexpr int batch = 8;  // loads in flight per thread
  for (int e0 = threadIdx.x; e0 < Rows * Dim; e0 += batch * k_threads) {
    T held[batch];
#pragma unroll
    for (int i = 0; i < batch; ++i) {
      const int e = e0 + i * k_threads, r = e / Dim, c = e % Dim;
      held[i] =
          e < Rows * Dim && base + r < count && c < d ? from[(base + r) * ld + c] : narrow<T>(0.0F);
    }
#pragma unroll
    for (int i = 0; i < batch; ++i) {
      const int e = e0 + i * k_threads;
      if (e < Rows * Dim) shared[(e / Dim) * stride<Dim> + e % Dim] = held[i];
    }
  }
}

}  // namespace coolbench::engine::cuda::mma
