// Hopper's warpgroup matrix products (wgmma.mma_async, sm_90a only) as
// attention_wgmma.cu uses them, apart so that tests/engine/wgmma_test.cpp
// checks each piece against the host: the shared-memory tile layout (rows of
// 64 16-bit elements, 128 bytes, in 128-byte swizzled blocks of 8 rows), its
// fill by cp.async, the matrix descriptors, the two products of a tile of
// keys (scores = Q Kᵀ with both operands in shared memory; output += P V with
// P in registers and V read transposed) and the ordering around them.
//
// Layouts (PTX ISA 9.0, "Asynchronous Warpgroup Level Matrix" sections):
// - A tile of R rows by Dim columns is Dim / 64 column blocks one after the
//   other, each R rows of 128 bytes; 16-byte chunk c of row r sits at chunk
//   c ^ (r % 8) of its row (the 128-byte swizzle), which the hardware undoes
//   from the absolute shared address: every tile starts 1024-byte aligned.
// - Accumulators (m64nN, float32): warp w of the warpgroup holds rows
//   16w .. 16w + 15; d[j][e] is row 16w + lane / 4 + 8 * (e / 2), column
//   8j + 2 * (lane % 4) + e % 2: for each 8 columns, mma.sync m16n8's C
//   fragment, so attention_mma.cuh's row_state, softmax_step and the score
//   adjustment take these registers as they are. [Uncertain: the ISA shows
//   this layout as a figure only; the formula is CUTLASS's CLayout_64xN.]
// - A from registers (m64k16, 16-bit): mma.sync m16n8k16's A fragment, which
//   a pair of 8-column accumulator groups packs into without moving data.
//
// Every device pass that includes this header must be sm_90a's (the file's
// own object, CUDA_ARCHITECTURES 90a-real: src/engine/CMakeLists.txt).
#pragma once

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "wgmma.cuh: wgmma needs sm_90a code; compile this file for 90a-real only"
#endif

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "engine/backends/cuda/common.cuh"

namespace coolbench::engine::cuda::wgmma {

constexpr int k_row_bytes = 128;  // a tile row of one column block: 64 16-bit elements
constexpr int k_block_columns = 64;
constexpr int k_warpgroup_threads = 128;

// The shared-window address of a generic pointer into shared memory.
__device__ __forceinline__ std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes from global to shared memory (cp.async, the generic proxy); `valid` false writes 16
// zero bytes and reads nothing.
__device__ __forceinline__ void copy_16(std::uint32_t to, const void* from, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(from),
               "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void commit_copies() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
// This thread's copies landed; then the proxy fence, so that wgmma (the async proxy) reads
// them once a barrier has shown them to the warpgroups (PTX: "an async proxy fence must be
// used ... between prior writes to shared memory matrices and ... reads ... in a wgmma").
__device__ __forceinline__ void wait_copies_for_wgmma() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Rows [base, base + Rows) of a matrix of d columns (at most Dim, a multiple of 8), rows `ld`
// elements apart, into the swizzled tile at shared address `tile`, by `Threads` threads
// (`thread` this one's index), zero past `count` rows and past d columns, left in flight
// (commit_copies, wait_copies_for_wgmma). `from` and `ld` must be whole 16-byte pieces. A
// thread keeps one 16-byte chunk of the row and steps down the rows by a multiple of 8, so its
// swizzle (chunk ^ row % 8) and its addresses are one offset plus a constant step.
template <class T, int Dim, int Rows, int Threads>
__device__ __forceinline__ void copy_swizzled(std::uint32_t tile, const T* from, std::int64_t base,
                                              std::int64_t count, std::int64_t d, std::int64_t ld,
                                              int thread) {
  static_assert(sizeof(T) == 2 && Dim % k_block_columns == 0);
  constexpr int chunks = Dim / 8;  // 16-byte chunks a row
  static_assert(Threads % chunks == 0);
  constexpr int rows_a_trip = Threads / chunks, trips = Rows / rows_a_trip;
  static_assert(rows_a_trip % 8 == 0 && Rows % rows_a_trip == 0);
  const int j = thread % chunks, r0 = thread / chunks;
  const int block = j / 8, chunk = j % 8;
  const std::uint32_t to =
      tile + static_cast<std::uint32_t>(block * Rows * k_row_bytes + r0 * k_row_bytes +
                                        ((chunk ^ (r0 % 8)) << 4));
  const std::int64_t left = count - base - r0;  // rows of the matrix from this thread's first
  const int rows_left = left <= 0 ? 0 : left >= Rows ? Rows : static_cast<int>(left);
  const bool column = 8 * j < d;
  const T* at = from + (base + r0) * ld + 8 * j;
#pragma unroll
  for (int t = 0; t < trips; ++t) {
    const bool valid = column && t * rows_a_trip < rows_left;
    copy_16(to + static_cast<std::uint32_t>(t * rows_a_trip * k_row_bytes), valid ? at : from,
            valid);
    at += rows_a_trip * ld;
  }
}

// Matrix descriptors of a swizzled tile (PTX "Matrix Descriptor Format"): bits 0-13 the start
// address / 16, 16-29 the leading byte offset / 16, 32-45 the stride byte offset / 16, 62-63
// the swizzle (1: 128 bytes); base offset 0 (every tile 1024-byte aligned).
// K-major (rows along M or N, K along the row): the stride offset steps 8 rows (1024 bytes);
// the leading offset is unused with the swizzle and stored as 1.
__device__ __forceinline__ std::uint64_t k_major(std::uint32_t address) {
  return (std::uint64_t{1} << 62) | (std::uint64_t{1024 >> 4} << 32) | (std::uint64_t{1} << 16) |
         ((address & 0x3FFFF) >> 4);
}
// MN-major (rows along K, N along the row: V's keys by head columns, read with trans-b): the
// stride offset steps 8 rows of K (1024 bytes), the leading offset one 64-column block of N to
// the next (`block_bytes`, the tile's rows x 128). [Uncertain: from the ISA's table and
// CUTLASS's make_gmma_desc, not yet run; tests/engine/wgmma_test.cpp's head dim 128 checks it.]
__device__ __forceinline__ std::uint64_t mn_major(std::uint32_t address,
                                                  std::uint32_t block_bytes) {
  return (std::uint64_t{1} << 62) | (std::uint64_t{1024 >> 4} << 32) |
         (std::uint64_t{block_bytes >> 4} << 16) | ((address & 0x3FFFF) >> 4);
}

// The register side of the ordering: wgmma.fence before a batch (after ordinary code wrote its
// accumulators or A registers), commit the batch, wait for it.
__device__ __forceinline__ void fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int Pending>
__device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}
// Keeps the compiler from moving reads or writes of these registers across the asynchronous
// products (CUTLASS's warpgroup_fence_operand).
template <int N>
__device__ __forceinline__ void fence_registers(float (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(r[i][e])::"memory");
  }
}
template <int N>
__device__ __forceinline__ void fence_registers(std::uint32_t (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(r[i][e])::"memory");
  }
}

#define COOLBENCH_WG_ACC4(d, j) "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
#define COOLBENCH_WG_ACC32(d)                                                    \
  COOLBENCH_WG_ACC4(d, 0), COOLBENCH_WG_ACC4(d, 1), COOLBENCH_WG_ACC4(d, 2),     \
      COOLBENCH_WG_ACC4(d, 3), COOLBENCH_WG_ACC4(d, 4), COOLBENCH_WG_ACC4(d, 5), \
      COOLBENCH_WG_ACC4(d, 6), COOLBENCH_WG_ACC4(d, 7)
#define COOLBENCH_WG_ACC64(d)                                                       \
  COOLBENCH_WG_ACC32(d), COOLBENCH_WG_ACC4(d, 8), COOLBENCH_WG_ACC4(d, 9),          \
      COOLBENCH_WG_ACC4(d, 10), COOLBENCH_WG_ACC4(d, 11), COOLBENCH_WG_ACC4(d, 12), \
      COOLBENCH_WG_ACC4(d, 13), COOLBENCH_WG_ACC4(d, 14), COOLBENCH_WG_ACC4(d, 15)
#define COOLBENCH_WG_D32                                                                        \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define COOLBENCH_WG_D64                                                                        \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "  \
  "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "  \
  "%56, %57, %58, %59, %60, %61, %62, %63}"
// Both operands from shared memory, neither transposed (K-major A and B).
#define COOLBENCH_WG_SS(shape, type, d, a, b, accumulate)                                    \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " accumulate ", 0;\nwgmma.mma_async.sync.aligned." shape \
  ".f32." type "." type " " d ", " a ", " b ", p, 1, 1, 0, 0;\n}\n"
// A from registers, B from shared memory transposed (MN-major).
#define COOLBENCH_WG_RS(shape, type, d, a, b, accumulate)                                    \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " accumulate ", 0;\nwgmma.mma_async.sync.aligned." shape \
  ".f32." type "." type " " d ", " a ", " b ", p, 1, 1, 1;\n}\n"

// d (+)= A B for m64nNk16, A and B by descriptor; `accumulate` 0 overwrites d.
template <class T, int N>
__device__ __forceinline__ void product_ss(float (&d)[N / 8][4], std::uint64_t a, std::uint64_t b,
                                           int accumulate) {
  static_assert(N == 64 || N == 128);
  if constexpr (N == 64 && std::is_same_v<T, __half>) {
    asm volatile(COOLBENCH_WG_SS("m64n64k16", "f16", COOLBENCH_WG_D32, "%32", "%33", "%34")
                 : COOLBENCH_WG_ACC32(d)
                 : "l"(a), "l"(b), "r"(accumulate));
  } else if constexpr (N == 64) {
    asm volatile(COOLBENCH_WG_SS("m64n64k16", "bf16", COOLBENCH_WG_D32, "%32", "%33", "%34")
                 : COOLBENCH_WG_ACC32(d)
                 : "l"(a), "l"(b), "r"(accumulate));
  } else if constexpr (std::is_same_v<T, __half>) {
    asm volatile(COOLBENCH_WG_SS("m64n128k16", "f16", COOLBENCH_WG_D64, "%64", "%65", "%66")
                 : COOLBENCH_WG_ACC64(d)
                 : "l"(a), "l"(b), "r"(accumulate));
  } else {
    asm volatile(COOLBENCH_WG_SS("m64n128k16", "bf16", COOLBENCH_WG_D64, "%64", "%65", "%66")
                 : COOLBENCH_WG_ACC64(d)
                 : "l"(a), "l"(b), "r"(accumulate));
  }
}

// d (+)= A B for m64nNk16, A from registers (a[0..3]), B by descriptor, transposed.
template <class T, int N>
__device__ __forceinline__ void product_rs(float (&d)[N / 8][4], const std::uint32_t (&a)[4],
                                           std::uint64_t b, int accumulate) {
  static_assert(N == 64 || N == 128);
  if constexpr (N == 64 && std::is_same_v<T, __half>) {
    asm volatile(
        COOLBENCH_WG_RS("m64n64k16", "f16", COOLBENCH_WG_D32, "{%32, %33, %34, %35}", "%36", "%37")
        : COOLBENCH_WG_ACC32(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
  } else if constexpr (N == 64) {
    asm volatile(
        COOLBENCH_WG_RS("m64n64k16", "bf16", COOLBENCH_WG_D32, "{%32, %33, %34, %35}", "%36", "%37")
        : COOLBENCH_WG_ACC32(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
  } else if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        COOLBENCH_WG_RS("m64n128k16", "f16", COOLBENCH_WG_D64, "{%64, %65, %66, %67}", "%68", "%69")
        : COOLBENCH_WG_ACC64(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
  } else {
    asm volatile(COOLBENCH_WG_RS("m64n128k16", "bf16", COOLBENCH_WG_D64, "{%64, %65, %66, %67}",
                                 "%68", "%69")
                 : COOLBENCH_WG_ACC64(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
  }
}

#undef COOLBENCH_WG_ACC4
#undef COOLBENCH_WG_ACC32
#undef COOLBENCH_WG_ACC64
#undef COOLBENCH_WG_D32
#undef COOLBENCH_WG_D64
#undef COOLBENCH_WG_SS
#undef COOLBENCH_WG_RS

// The warpgroup's 64 x Keys scores s = Q Kᵀ over Dim columns, issued and not waited for (the
// caller fences, commits, waits, and leaves s alone until its group is done; the first k-step
// overwrites s): its 64 query rows from row `first_row` (a multiple of 8) of the swizzled Q tile
// of QRows rows at `q_tile`, the keys the Keys rows of the K tile at `k_tile`. A k-step of 16
// columns is 32 bytes along the rows inside a 64-column block (the start address + 32 bytes: the
// hardware swizzles the final address), the next block 4 steps on. [Once uncertain: the +32-byte
// step inside a swizzled row is CUTLASS's practice, not the ISA's text; tests/engine/wgmma_test.cpp
// checked it on an H100.]
template <class T, int Dim, int Keys, int QRows>
__device__ __forceinline__ void issue_scores(float (&s)[Keys / 8][4], std::uint32_t q_tile,
                                             int first_row, std::uint32_t k_tile) {
#pragma unroll
  for (int kk = 0; kk < Dim / 16; ++kk) {
    const auto step = static_cast<std::uint32_t>((kk % 4) * 32);
    const std::uint32_t a =
        q_tile +
        static_cast<std::uint32_t>((kk / 4) * QRows * k_row_bytes + first_row * k_row_bytes) + step;
    const std::uint32_t b =
        k_tile + static_cast<std::uint32_t>((kk / 4) * Keys * k_row_bytes) + step;
    product_ss<T, Keys>(s, k_major(a), k_major(b), kk > 0 ? 1 : 0);
  }
}

// issue_scores waited for (attention_wgmma.cu).
template <class T, int Dim, int Keys, int QRows>
__device__ __forceinline__ void scores(float (&s)[Keys / 8][4], std::uint32_t q_tile, int first_row,
                                       std::uint32_t k_tile) {
#pragma unroll
  for (int i = 0; i < Keys / 8; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0;
  fence();
  issue_scores<T, Dim, Keys, QRows>(s, q_tile, first_row, k_tile);
  commit();
  wait<0>();
  fence_registers(s);
}

template <class T>
__device__ __forceinline__ std::uint32_t pack_pair(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 h = __floats2half2_rn(lo, hi);
    std::uint32_t bits = 0;
    memcpy(&bits, &h, 4);
    return bits;
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    std::uint32_t bits = 0;
    memcpy(&bits, &h, 4);
    return bits;
  }
}

// The A registers of the product with V for the probabilities `s` (accumulator layout):
// key step kk's are s's 8-column groups 2kk and 2kk + 1, rows g and g + 8.
template <class T, int Keys>
__device__ __forceinline__ void pack_probabilities(const float (&s)[Keys / 8][4],
                                                   std::uint32_t (&p)[Keys / 16][4]) {
#pragma unroll
  for (int kk = 0; kk < Keys / 16; ++kk) {
    p[kk][0] = pack_pair<T>(s[2 * kk][0], s[2 * kk][1]);
    p[kk][1] = pack_pair<T>(s[2 * kk][2], s[2 * kk][3]);
    p[kk][2] = pack_pair<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]);
    p[kk][3] = pack_pair<T>(s[2 * kk + 1][2], s[2 * kk + 1][3]);
  }
}

// o += P V, issued and not waited for (the caller fences, commits, waits, and leaves o and p
// alone until its group is done): P the warpgroup's 64 x Keys probabilities
// (pack_probabilities), V the swizzled Keys x Dim tile at `v_tile`, read transposed (MN-major):
// key step kk is 16 rows on, 2048 bytes (still 1024-byte aligned); the head dim's second
// 64-column block is Keys x 128 bytes on (the leading byte offset).
template <class T, int Dim, int Keys>
__device__ __forceinline__ void issue_accumulate(float (&o)[Dim / 8][4],
                                                 const std::uint32_t (&p)[Keys / 16][4],
                                                 std::uint32_t v_tile) {
#pragma unroll
  for (int kk = 0; kk < Keys / 16; ++kk) {
    const std::uint32_t b = v_tile + static_cast<std::uint32_t>(kk * 16 * k_row_bytes);
    product_rs<T, Dim>(o, p[kk], mn_major(b, Keys * k_row_bytes), 1);
  }
}

// issue_accumulate waited for (attention_wgmma.cu).
template <class T, int Dim, int Keys>
__device__ __forceinline__ void accumulate(float (&o)[Dim / 8][4], std::uint32_t (&p)[Keys / 16][4],
                                           std::uint32_t v_tile) {
  fence_registers(o);
  fence_registers(p);
  fence();
  issue_accumulate<T, Dim, Keys>(o, p, v_tile);
  commit();
  wait<0>();
  fence_registers(o);
}

}  // namespace coolbench::engine::cuda::wgmma
