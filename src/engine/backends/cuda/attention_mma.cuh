// The tensor-core prefill kernels of coolbench.Attention for float16 and
// bfloat16 (attention.cu launches them on sm_90): the same online softmax as
// flash_kernel, with the two products on mma.sync m16n8k16 (16-bit inputs,
// float32 accumulation). A warp takes 16 query rows of one (batch, head)
// (attention_mma.cu: how blocks group warps); the scores stay in the accumulator
// fragments, are rescaled and masked there, and are repacked as the
// 16-bit A operand of the product with V (the layout of an m16n8 result
// is that of an m16k16 operand's halves). This header has the pieces the
// kernels of attention_mma.cu share: the instruction, the tile copies and
// the fragments.
#pragma once

#include <cstring>
#include <type_traits>

#include "engine/backends/cuda/attention.hpp"
#include "engine/backends/cuda/attention_common.cuh"
#include "engine/backends/cuda/common.cuh"
#include "engine/backends/cuda/launch_shapes.hpp"

namespace coolbench::engine::cuda {

/// The tensor-core kernel `l` names (mma_rows64 or mma_split_keys) over
/// float16 or bfloat16 q, k, v (attention_mma.cu); sm_90 only.
void launch_mma_attention(dtype type, const void* q, const void* k, const void* v, const void* bias,
                          const bool* mask, void* out, const attention_plan& p,
                          const attention_launch& l, void* stream);

/// The Hopper kernel (attention_kernel::wgmma_rows128) over float16 or bfloat16 q, k, v
/// (attention_wgmma.cu): built only where sm_90 is among the CUDA architectures
/// (COOLBENCH_ATTENTION_WGMMA defined), run only where attention_wgmma_fits.
void launch_wgmma_attention(dtype type, const void* q, const void* k, const void* v,
                            const void* bias, const bool* mask, void* out, const attention_plan& p,
                            const attention_launch& l, void* stream);

/// attention.hpp's wgmma_attention_blocks_per_sm where the kernel is built.
int wgmma_blocks_per_sm(dtype type, std::int64_t head_dim, bool keys64);

/// The same with the softmax of each tile overlapping the previous tile's product with V
/// (attention_kernel::wgmma_overlap_rows128, attention_wgmma_overlap.cu): built and run as
/// launch_wgmma_attention's kernel is.
void launch_wgmma_overlap_attention(dtype type, const void* q, const void* k, const void* v,
                                    const void* bias, const bool* mask, void* out,
                                    const attention_plan& p, const attention_launch& l,
                                    void* stream);

/// The float32 tensor-core kernel (tf32x3_rows64) over float32 q, k, v
/// (attention_tf32.cu): each product as three TF32 products; sm_90 only.
void launch_tf32_attention(const float* q, const float* k, const float* v, const float* bias,
                           const bool* mask, float* out, const attention_plan& p,
                           const attention_launch& l, void* stream);

}  // namespace coolbench::engine::cuda

namespace coolbench::engine::cuda::mma {

constexpr int k_rows = 64;  // 16 per warp
constexpr int k_threads = 128;
constexpr int k_warps = k_threads / 32;
constexpr int k_split_rows = 16;  // query rows of a split-keys block (its warps share them)

// Keys per tile (bounded by the score fragments' registers), and the 16-bit
// elements per shared row (padded: conflict-free fragment loads).
template <int Dim>
inline constexpr int keys_per_tile = Dim <= 64 ? 64 : 32;
template <int Dim>
inline constexpr int stride = Dim + 8;
// rows64: the 64 query rows, then two K and V tiles (the next tile copied while the warps
// work on this one).
template <int Dim>
inline constexpr std::size_t shared_bytes = 2 * static_cast<std::size_t>(stride<Dim>) *
                                            (k_rows + 4 * keys_per_tile<Dim>);
// Split keys: 16 query rows, then a K and a V tile for each warp. The
// partial rows merged at the end (float32 [warps][16][Dim], and each row's
// maximum and sum) reuse the tiles' room.
template <int Dim>
inline constexpr std::size_t split_q_bytes = 2 *
                                             static_cast<std::size_t>(stride<Dim>) * k_split_rows;
template <int Dim>
inline constexpr std::size_t split_shared_bytes = split_q_bytes<Dim> +
                                                  2 * static_cast<std::size_t>(stride<Dim>) *
                                                      2 * keys_per_tile<Dim>* k_warps;
// The partial rows of warps 1 to 3, in fragment order (each lane's output
// fragments, then its rows' maxima and sums, lane-minor: conflict-free).
template <int Dim>
inline constexpr int split_part_floats = (Dim / 8) * 4 + 4;
static_assert(4 * (k_warps - 1) * split_part_floats<64> * 32 <=
              split_shared_bytes<64> - split_q_bytes<64>);
static_assert(4 * (k_warps - 1) * split_part_floats<128> * 32 <=
              split_shared_bytes<128> - split_q_bytes<128>);
// Halves: the 64 query rows, then for each of two groups of 4 warps two K and V tiles (its
// next tile copied while it works on this one). Group 1's partial rows (split_part_floats a
// lane of each of its warps) reuse the tiles' room for the merge.
constexpr int k_halves_threads = 2 * k_threads;
template <int Dim>
inline constexpr std::size_t halves_q_bytes = 2 * static_cast<std::size_t>(stride<Dim>) * k_rows;
template <int Dim>
inline constexpr std::size_t halves_shared_bytes = halves_q_bytes<Dim> +
                                                   2 * static_cast<std::size_t>(stride<Dim>) *
                                                       8 * keys_per_tile<Dim>;
static_assert(4 * k_warps * split_part_floats<64> * 32 <=
              halves_shared_bytes<64> - halves_q_bytes<64>);
static_assert(4 * k_warps * split_part_floats<128> * 32 <=
              halves_shared_bytes<128> - halves_q_bytes<128>);
// Rows of 16-byte pieces for load_matrices.
static_assert(stride<64> * 2 % 16 == 0 && stride<128> * 2 % 16 == 0);

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

constexpr float k_log2e = 1.4426950408889634F;

// 2^x by the MUFU alone (ex2.approx.ftz): results below 2^-126 become 0.
__device__ __forceinline__ float exp2_ftz(float x) {
  float y = 0;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
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

// Half `high` (0: the low 16 bits) of two packed 16-bit values, as a float.
template <class T>
__device__ __forceinline__ float unpack(std::uint32_t bits, int high) {
  const auto half_bits = static_cast<unsigned short>(high != 0 ? bits >> 16 : bits & 0xffffU);
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(__ushort_as_half(half_bits));
  } else {
    return __bfloat162float(__ushort_as_bfloat16(half_bits));
  }
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

// Four 8x8 matrices of 16-bit elements from shared memory, each lane naming
// one matrix row of 16 bytes (lanes 8i to 8i + 7: matrix i's rows), as one
// instruction where the fragments' own loads take 2 or 4 a matrix (sm_75
// and later). `trans` hands each thread a column pair instead of a row pair:
// the B fragment of a product with V, whose rows are keys.
template <bool Trans>
__device__ __forceinline__ void load_matrices(std::uint32_t (&r)[4], const void* row) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto at = static_cast<unsigned>(__cvta_generic_to_shared(row));
  if constexpr (Trans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(at));
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(at));
  }
#else
  (void)r, (void)row;
  __trap();  // the host launches the kernels that load so only on sm_90
#endif
}

// 16 bytes from global to shared memory without registers (cp.async, sm_80
// and later); `valid` false writes 16 zero bytes and reads nothing.
__device__ __forceinline__ void copy_16(void* shared, const void* global, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto to = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(global),
               "r"(valid ? 16 : 0)
               : "memory");
#else
  __trap();  // the host launches the kernels that copy so only on sm_90
#endif
}

// Waits for this thread's copy_16s; a barrier then shows them to the others.
__device__ __forceinline__ void wait_copies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// Rows [base, base + Rows) of a matrix of head_dim d columns, rows `ld`
// elements apart, into shared rows `Stride` elements apart (stride<Dim>
// unless said), by `Threads` threads (a
// warp or a block; `thread` is this one's index among them), zero past
// `count` rows and past d columns. Rows whose d is a whole number of 16-byte
// pieces, `ld` too, at a 16-byte aligned address, are copied 16 bytes at a
// time and left in flight (wait_copies ends them): every piece of the tile
// is issued at once, so a thread waits out the memory latency once per tile
// (one element per loop trip waited once per element, which made a GPT-2
// attention take 45 us on the H200). Others load one element at a time
// through registers, 8 in flight a thread.
template <class T, int Dim, int Rows, int Threads, int Stride>
__device__ __noinline__ void copy_tile_by_element(T* shared, const T* from, std::int64_t base,
                                                  std::int64_t count, std::int64_t d,
                                                  std::int64_t ld, int thread) {
  constexpr int batch = 8;  // loads in flight per thread
  for (int e0 = thread; e0 < Rows * Dim; e0 += batch * Threads) {
    T held[batch];
#pragma unroll
    for (int i = 0; i < batch; ++i) {
      const int e = e0 + i * Threads, r = e / Dim, c = e % Dim;
      held[i] =
          e < Rows * Dim && base + r < count && c < d ? from[(base + r) * ld + c] : narrow<T>(0.0F);
    }
#pragma unroll
    for (int i = 0; i < batch; ++i) {
      const int e = e0 + i * Threads;
      if (e < Rows * Dim) shared[(e / Dim) * Stride + e % Dim] = held[i];
    }
  }
}

template <class T, int Dim, int Rows, int Threads, int Stride = stride<Dim>>
__device__ __forceinline__ void copy_tile(T* shared, const T* from, std::int64_t base,
                                          std::int64_t count, std::int64_t d, std::int64_t ld,
                                          int thread) {
  constexpr int vec = 16 / static_cast<int>(sizeof(T));
  constexpr int per_row = Dim / vec;
  if (d % vec == 0 && ld % vec == 0 && reinterpret_cast<std::uintptr_t>(from) % 16 == 0) {
    // A thread keeps one column and steps down the rows: its addresses are a pointer bumped
    // each trip, not a 64-bit product a piece (which was a fifth of the kernels' code).
    static_assert(Threads % per_row == 0 && Rows * per_row % Threads == 0);
    constexpr int rows_a_trip = Threads / per_row, trips = Rows / rows_a_trip;
    const int c = (thread % per_row) * vec, r0 = thread / per_row;
    const std::int64_t left = count - base - r0;  // rows of the matrix from this thread's first
    const int rows_left = left <= 0 ? 0 : left >= Rows ? Rows : static_cast<int>(left);
    const bool column = c < d;
    const T* at = from + (base + r0) * ld + c;
    T* to = &shared[r0 * Stride + c];
#pragma unroll
    for (int t = 0; t < trips; ++t) {
      const bool valid = column && t * rows_a_trip < rows_left;
      copy_16(to + t * rows_a_trip * Stride, valid ? at : from, valid);
      at += rows_a_trip * ld;
    }
    return;
  }
  // Rare (a head dim or row stride not of whole 16-byte pieces): out of line, so its loops do
  // not swell every kernel's code (docs/perf/engine.md, 2026-12-06 morning).
  copy_tile_by_element<T, Dim, Rows, Threads, Stride>(shared, from, base, count, d, ld, thread);
}

// A warp's 16 query rows (r0 and r0 + 8 for this thread) as it walks the
// keys: the running maximum and sum of each row (reduced over the row's 4
// lanes) and the unnormalised output fragments.
template <int Dim>
struct row_state {
  float peak[2] = {-INFINITY, -INFINITY};
  float total[2] = {0, 0};
  float o[Dim / 8][4] = {};
};

// The online-softmax step of a warp's 16 rows over one tile of scores `s`,
// in accumulator fragments (this thread's rows r0 and r0 + 8 as e / 2),
// already scaled, biased or masked, each row's largest of the tile in
// `tile_peak`: the scores become exp(s - base) for the new running maximum
// base, and the running sum and output are rescaled to it. exp(x - base) is
// 2^((x - base)·log2 e) by the MUFU alone: three instructions a score, where
// __expf's guard of results below 2^-126 made it five (such a probability
// adds nothing to a row whose largest is 1). Not one FMA, x·log2 e -
// base·log2 e: base·log2 e overflows for a base below -2.4e38, a row masked
// so far by bfloat16's or float32's lowest, whose scores must still weigh
// equally.
template <int Dim, int Tiles>
__device__ __forceinline__ void softmax_step(float (&s)[Tiles][4], const float (&tile_peak)[2],
                                             row_state<Dim>& r) {
  float base[2], rescale[2], tile_total[2] = {0, 0};
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const float next = fmaxf(r.peak[i], row_max(tile_peak[i]));
    base[i] = next == -INFINITY ? 0.0F : next;  // a row hidden so far adds nothing
    rescale[i] = exp2_ftz((r.peak[i] - base[i]) * k_log2e);
    r.peak[i] = next;
  }
#pragma unroll
  for (int nt = 0; nt < Tiles; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      s[nt][e] = exp2_ftz((s[nt][e] - base[e / 2]) * k_log2e);
      tile_total[e / 2] += s[nt][e];
    }
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) r.total[i] = r.total[i] * rescale[i] + row_sum(tile_total[i]);
#pragma unroll
  for (int dt = 0; dt < Dim / 8; ++dt) {
    r.o[dt][0] *= rescale[0], r.o[dt][1] *= rescale[0];
    r.o[dt][2] *= rescale[1], r.o[dt][3] *= rescale[1];
  }
}

// The A fragments of the warp's 16 query rows from shared rows `qs`.
template <class T, int Dim>
__device__ __forceinline__ void query_fragments(const T* qs, int r0, int tig,
                                                std::uint32_t (&qa)[Dim / 16][4]) {
#pragma unroll
  for (int kk = 0; kk < Dim / 16; ++kk) {
    const int col = kk * 16 + tig * 2;
    qa[kk][0] = pair(&qs[r0 * stride<Dim> + col]);
    qa[kk][1] = pair(&qs[(r0 + 8) * stride<Dim> + col]);
    qa[kk][2] = pair(&qs[r0 * stride<Dim> + col + 8]);
    qa[kk][3] = pair(&qs[(r0 + 8) * stride<Dim> + col + 8]);
  }
}

}  // namespace coolbench::engine::cuda::mma

namespace coolbench::engine::cuda {

// Where a block's warps are: its (batch, head), query rows and keys.
struct block_at {
  std::int64_t b, h, m0, end;  // end: one past the last key any of its rows sees
};

// `longest_first`: causal_tile's order (the 64-row kernel; the split-keys kernel runs where its
// blocks are too few to queue, and the order's register spilled its general form).
__device__ __forceinline__ block_at locate(const attention_plan& p, int rows, bool longest_first) {
  block_at at{};
  const std::int64_t bh = blockIdx.x;
  at.b = bh / p.heads, at.h = bh % p.heads;
  at.m0 = (longest_first ? causal_tile(p) : std::int64_t{blockIdx.y}) * rows;
  at.end = p.sk;
  if (p.causal) {
    const std::int64_t last = at.m0 + rows - 1 + p.sk - p.sq;  // the last row's last visible key
    at.end = last + 1 < at.end ? last + 1 : at.end;
  }
  return at;
}

// What a thread's two rows add to their scores, worked out once a block: the
// keys each row sees, and its bias and mask rows at key 0 (null: none), whose
// keys lie `step` elements apart. The per-score work is then an offset from
// these and one load each, not four 64-bit products a score, which cost
// BERT's attention (a padding bias) 7-10 % on an H100 (docs/perf/engine.md,
// "The attention's bias path").
template <class T>
struct score_rows {
  std::int64_t limit[2] = {0, 0};  // one past the last key the row sees
  const T* bias[2] = {nullptr, nullptr};
  const bool* mask[2] = {nullptr, nullptr};
  int bias_step = 0, mask_step = 0;  // choose() keeps them below 2^24: offsets fit 32 bits
};

// This thread's rows (clamped to sq: rows past it compute garbage that is
// never stored, on a real row's bias and mask).
template <class T>
__device__ __forceinline__ score_rows<T> rows_at(const attention_plan& p, const block_at& at,
                                                 std::int64_t first, const T* bias,
                                                 const bool* mask) {
  score_rows<T> r;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const std::int64_t row = first + 8 * i < p.sq ? first + 8 * i : p.sq - 1;
    r.limit[i] = p.sk;
    if (p.causal && row + p.sk - p.sq + 1 < r.limit[i]) r.limit[i] = row + p.sk - p.sq + 1;
    if (bias != nullptr) {
      r.bias[i] = bias + at.b * p.bias_stride[0] + at.h * p.bias_stride[1] + row * p.bias_stride[2];
    }
    if (mask != nullptr) {
      r.mask[i] = mask + at.b * p.mask_stride[0] + at.h * p.mask_stride[1] + row * p.mask_stride[2];
    }
  }
  r.bias_step = static_cast<int>(p.bias_stride[3]);
  r.mask_step = static_cast<int>(p.mask_stride[3]);
  return r;
}

// What a kernel adds to its scores, fixed at compile time so that no score tests what it does
// not have: nothing (GPT-2's causal flag at most, ViT), a bias whose rows run along the keys
// with stride 1 and start 4 bytes aligned, read two keys a load at offsets known to the
// compiler (BERT's padding bias), or anything (any strides, a mask), each score's bias and
// mask found from runtime steps.
enum class score_form : std::uint8_t { plain, bias_rows, general };

// Whether score_form::bias_rows reads this bias right: stride 1 along the keys, every row
// starting 4 bytes aligned (the pointer, and even strides of batch, head and row), and an even
// number of keys, so that a pair starting at a visible key never passes the row's end (the
// mma and wgmma kernels' launches).
inline bool bias_rows_pair_aligned(const void* bias, const attention_plan& p) {
  return bias != nullptr && p.bias_stride[3] == 1 && p.sk % 2 == 0 &&
         reinterpret_cast<std::uintptr_t>(bias) % 4 == 0 && p.bias_stride[0] % 2 == 0 &&
         p.bias_stride[1] % 2 == 0 && p.bias_stride[2] % 2 == 0;
}

// Opts `kernel` in to `bytes` of dynamic shared memory (over the default 48 KB for some: the mma
// and wgmma kernels) and launches it.
template <class... Args>
void launch_opted_in(void (*kernel)(Args...), dim3 grid, int threads, std::size_t bytes,
                     cudaStream_t stream, Args... args) {
  COOLBENCH_CUDA_CALL(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(bytes)));
  kernel<<<grid, threads, bytes, stream>>>(args...);
}

// Calls `launch` with the score form (a std::integral_constant<score_form, ...>) a launch of
// the mma and wgmma kernels takes: plain without a bias or mask, bias_rows for a bias alone
// that bias_rows_pair_aligned reads right, general otherwise and wherever `general_scores`
// (COOLBENCH_ATTENTION_SCORES=general: attention_bench's "general" column and the tests).
template <class Launch>
void with_score_form(const void* bias, const bool* mask, const attention_plan& p,
                     bool general_scores, Launch&& launch) {
  if (!general_scores && bias == nullptr && mask == nullptr) {
    launch(std::integral_constant<score_form, score_form::plain>{});
  } else if (!general_scores && mask == nullptr && bias_rows_pair_aligned(bias, p)) {
    launch(std::integral_constant<score_form, score_form::bias_rows>{});
  } else {
    launch(std::integral_constant<score_form, score_form::general>{});
  }
}

// Calls `run` with the 16-bit element type (tag<__half> or tag<__nv_bfloat16>, as
// dispatch passes it) and the head dim the kernels are built for (a std::integral_constant:
// 64 up to 64, 128 above, the columns past head_dim zero-filled).
template <class Run>
void dispatch_16bit_head_dim(dtype type, std::int64_t head_dim, Run&& run) {
  dispatch(type, type_list<__half, __nv_bfloat16>{}, [&](auto t) {
    if (head_dim <= 64) {
      run(t, std::integral_constant<int, 64>{});
    } else {
      run(t, std::integral_constant<int, 128>{});
    }
  });
}

// A tile of keys [n0, n0 + Keys) as this thread's two rows see it: the tile's columns below
// visible[i] (the keys, and the causal flag's limit), and the bias and mask of the thread's
// first column (tig * 2) in the tile.
template <class T>
struct tile_view {
  int visible[2];
  const T* bias_at[2] = {nullptr, nullptr};
  const bool* mask_at[2] = {nullptr, nullptr};
};

template <class T, int Keys, score_form Form>
__device__ __forceinline__ tile_view<T> view_tile(std::int64_t n0, const score_rows<T>& rows) {
  const int tig = static_cast<int>(threadIdx.x % 4);
  tile_view<T> v;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const std::int64_t limit = rows.limit[i] - n0;
    v.visible[i] = limit <= 0 ? 0 : limit >= Keys ? Keys : static_cast<int>(limit);
    const std::int64_t first = n0 + tig * 2;
    if constexpr (Form == score_form::bias_rows) {
      v.bias_at[i] = rows.bias[i] + first;
    } else if constexpr (Form == score_form::general) {
      if (rows.bias[i] != nullptr) v.bias_at[i] = rows.bias[i] + first * rows.bias_step;
      if (rows.mask[i] != nullptr) v.mask_at[i] = rows.mask[i] + first * rows.mask_step;
    }
  }
  return v;
}

// A tile's scores `s` in accumulator fragments (s[nt][e]: row e / 2's key nt * 8 + tig * 2 +
// e % 2 of the tile; mma.sync m16n8's layout, and wgmma's for each 8 columns) scaled, biased
// or masked, and hidden past the visible keys; each row's largest of the tile into
// tile_peak. With FullTiles a tile every one of whose keys both rows see (all but a sequence's
// last, and the causal diagonal's) skips that test.
template <class T, int Keys, score_form Form, bool FullTiles>
__device__ __forceinline__ void adjust_scores(float (&s)[Keys / 8][4], const tile_view<T>& view,
                                              const attention_plan& p, const score_rows<T>& rows,
                                              float (&tile_peak)[2]) {
  const int tig = static_cast<int>(threadIdx.x % 4);
  const int(&visible)[2] = view.visible;
  const T* const(&bias_at)[2] = view.bias_at;
  const bool* const(&mask_at)[2] = view.mask_at;
  const auto adjust = [&](auto hiding) {
    constexpr bool hide = decltype(hiding)::value;
#pragma unroll
    for (int nt = 0; nt < Keys / 8; ++nt) {
      // This thread's two adjacent keys of the 8 for each row, one 4-byte load a row; none
      // past the visible keys (the last row's bias ends at sk, which bias_rows_pair_aligned
      // keeps even).
      [[maybe_unused]] std::uint32_t bias_pair[2] = {0, 0};
      if constexpr (Form == score_form::bias_rows) {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          if (!hide || tig * 2 + nt * 8 < visible[i]) {
            bias_pair[i] = __ldg(reinterpret_cast<const unsigned*>(bias_at[i] + nt * 8));
          }
        }
      }
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = e / 2, from_first = nt * 8 + e % 2;  // columns past this thread's first
        float x = s[nt][e] * p.scale;
        if (hide && tig * 2 + from_first >= visible[i]) {
          x = -INFINITY;
        } else if constexpr (Form == score_form::bias_rows) {
          x += mma::unpack<T>(bias_pair[i], e % 2);
        } else if constexpr (Form == score_form::general) {
          if (bias_at[i] != nullptr) x += load(bias_at[i], from_first * rows.bias_step);
          if (mask_at[i] != nullptr && mask_at[i][from_first * rows.mask_step] != p.mask_keeps) {
            x = p.mask_value;
          }
        }
        s[nt][e] = x;
        tile_peak[i] = fmaxf(tile_peak[i], x);
      }
    }
  };
  if (FullTiles && visible[0] == Keys && visible[1] == Keys) {
    adjust(std::false_type{});
  } else {
    adjust(std::true_type{});
  }
}

// A warp's 16 finished rows (this thread's r0 and r0 + 8 of the block),
// normalised, into `out`: two adjacent columns a store where they can go
// together.
template <class T, int Dim>
__device__ __forceinline__ void store_rows(const mma::row_state<Dim>& r, const attention_plan& p,
                                           const block_at& at, int r0, int tig, T* out) {
  T* base = out + at.b * p.out_stride[0] + at.h * p.out_stride[1];
  const bool pairs = p.head_dim % 2 == 0 && p.out_stride[2] % 2 == 0 &&
                     reinterpret_cast<std::uintptr_t>(base) % (2 * sizeof(T)) == 0;
#pragma unroll
  for (int h = 0; h < 2; ++h) {  // rows r0 and r0 + 8
    const std::int64_t i = at.m0 + r0 + 8 * h;
    if (i >= p.sq) continue;
    // finish() for the whole row: one division, not one an element.
    const float total = r.total[h];
    const bool seen = total > 0;
    const float scale = seen ? 1.0F / total : 0.0F;
    const float empty = p.zero_empty_rows ? 0.0F : __int_as_float(0x7fc00000);
    const auto finished = [&](float acc) { return narrow<T>(seen ? acc * scale : empty); };
#pragma unroll
    for (int dt = 0; dt < Dim / 8; ++dt) {
      const std::int64_t col = dt * 8 + tig * 2;
      if (col >= p.head_dim) continue;
      const T lo = finished(r.o[dt][2 * h]);
      const T hi = finished(r.o[dt][2 * h + 1]);
      T* at_col = base + i * p.out_stride[2] + col;
      if (pairs) {  // two elements aligned: base, the row and the column are
        if constexpr (std::is_same_v<T, float>) {
          *reinterpret_cast<float2*>(at_col) = make_float2(lo, hi);
        } else {
          *reinterpret_cast<std::uint32_t*>(at_col) = mma::pair(lo, hi);
        }
      } else {
        at_col[0] = lo;
        if (col + 1 < p.head_dim) at_col[1] = hi;
      }
    }
  }
}

}  // namespace coolbench::engine::cuda
