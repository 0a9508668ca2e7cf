// coolbench.Attention's tensor-core prefill kernels (float16, bfloat16;
// sm_90), around attend_tile, the online-softmax step of attention_mma.cuh
// on one tile of keys:
//
// - rows64_kernel: a block takes 64 query rows of one (batch, head), 16 a
//   warp, and walks all its keys tile by tile, the 4 warps sharing each K
//   and V tile, the next tile's copies in flight while they work on this
//   one (two tiles of room). Few blocks for few heads and short sequences
//   (GPT-2 at batch 1 and 128 tokens: 12 heads x 2 = 24 blocks on 132 SMs,
//   each walking up to 2 tiles one after the other).
// - halves_kernel: rows64_kernel's 64 rows with 8 warps, two groups of 4
//   walking alternate key tiles, merged at the end (long walks over about a
//   block an SM: plan_attention).
// - split_keys_kernel: a block takes 16 query rows and its 4 warps split
//   the keys (tiles w, w + 4, ...), each with K and V tiles of its own, so
//   4 times as many blocks each wait out one tile's loads and products
//   where the other waited out several; warp 0 merges the other warps'
//   partial rows (maximum, sum, unnormalised output), left in shared memory
//   in fragment order, into its own registers and stores the rows.
//
// Every tile is copied by cp.async, the query rows together with the first
// keys, so a block waits for memory once per tile and not once per operand.
#include "engine/backends/cuda/attention_common.cuh"
#include "engine/backends/cuda/attention_merge.hpp"
#include "engine/backends/cuda/attention_mma.cuh"

namespace coolbench::engine::cuda {
namespace {

// One tile of keys [n0, n0 + keys) for the warp's 16 rows (this thread's
// two, as `rows` has them): scores on the tensor cores, adjusted, the
// running maximum and sum updated, the output rescaled and the
// probabilities times V added. `FullTiles`: a tile every key of whose rows
// is visible skips the visible-key test, in a second copy of the adjustment.
template <class T, int Dim, score_form Form, bool FullTiles>
__device__ __forceinline__ void attend_tile(const std::uint32_t (&qa)[Dim / 16][4], const T* ks,
                                            const T* vs, std::int64_t n0, const attention_plan& p,
                                            const score_rows<T>& rows, mma::row_state<Dim>& r) {
  constexpr int keys = mma::keys_per_tile<Dim>, st = mma::stride<Dim>;
  const int lane = threadIdx.x % 32;
  float s[keys / 8][4];
  float tile_peak[2] = {-INFINITY, -INFINITY};
  const tile_view<T> view = view_tile<T, keys, Form>(n0, rows);
#pragma unroll
  for (int nt = 0; nt < keys / 8; ++nt) {
    s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0;
#pragma unroll
    for (int kp = 0; kp < Dim / 32; ++kp) {
      // Keys nt * 8 + 0..7 (lane % 8), columns kp * 32 + 8 * (lane / 8): the B
      // fragments of two steps along the head's columns.
      std::uint32_t b[4];
      mma::load_matrices<false>(b, &ks[(nt * 8 + lane % 8) * st + kp * 32 + (lane / 8) * 8]);
      mma::mma16816<T>(s[nt], qa[2 * kp], b[0], b[1]);
      mma::mma16816<T>(s[nt], qa[2 * kp + 1], b[2], b[3]);
    }
  }
  adjust_scores<T, keys, Form, FullTiles>(s, view, p, rows, tile_peak);
  mma::softmax_step<Dim>(s, tile_peak, r);
#pragma unroll
  for (int kk = 0; kk < keys / 16; ++kk) {
    const std::uint32_t pa[4] = {mma::pack<T>(s[2 * kk][0], s[2 * kk][1]),
                                 mma::pack<T>(s[2 * kk][2], s[2 * kk][3]),
                                 mma::pack<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                 mma::pack<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
    // Keys kk * 16 + 0..15 (lane % 16), columns dp * 16 + 8 * (lane / 16),
    // transposed: the B fragments of two 8-column blocks of the output.
    const T* vk = &vs[(kk * 16 + lane % 16) * st + (lane / 16) * 8];
#pragma unroll
    for (int dp = 0; dp < Dim / 16; ++dp) {
      std::uint32_t b[4];
      mma::load_matrices<true>(b, vk + dp * 16);
      mma::mma16816<T>(r.o[2 * dp], pa, b[0], b[1]);
      mma::mma16816<T>(r.o[2 * dp + 1], pa, b[2], b[3]);
    }
  }
}

// Where a block of a tensor-core kernel is (locate), its (batch, head)'s K and V, and the copy
// of its Rows query rows into qs, issued by Threads threads: every kernel's first steps.
template <class T>
struct block_start {
  block_at at;
  const T* k;
  const T* v;
};

template <class T, int Dim, int Rows, int Threads>
__device__ __forceinline__ block_start<T> start_block(const T* q, const T* k, const T* v, T* qs,
                                                      const attention_plan& p, bool longest_first) {
  block_start<T> s;
  s.at = locate(p, Rows, longest_first);
  s.k = k + s.at.b * p.k_stride[0] + s.at.h * p.k_stride[1];
  s.v = v + s.at.b * p.v_stride[0] + s.at.h * p.v_stride[1];
  mma::copy_tile<T, Dim, Rows, Threads>(qs, q + s.at.b * p.q_stride[0] + s.at.h * p.q_stride[1],
                                        s.at.m0, p.sq, p.head_dim, p.q_stride[2],
                                        static_cast<int>(threadIdx.x));
  return s;
}

// A warp's partial rows (split over the keys) left in shared memory for another warp to merge:
// its output fragments, then its rows' maxima and sums, lane-minor (conflict-free). `part`
// points at this lane's first float of the warp's split_part_floats x 32.
template <int Dim>
__device__ __forceinline__ void leave_part(const mma::row_state<Dim>& r, float* part) {
#pragma unroll
  for (int dt = 0; dt < Dim / 8; ++dt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) part[(dt * 4 + e) * 32] = r.o[dt][e];
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    part[((Dim / 8) * 4 + i) * 32] = r.peak[i];
    part[((Dim / 8) * 4 + 2 + i) * 32] = r.total[i];
  }
}

// Merges the partial rows leave_part left at `part` (this lane's) into r, over disjoint keys.
template <int Dim>
__device__ __forceinline__ void merge_part(mma::row_state<Dim>& r, const float* part) {
  merge_weights weight[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    weight[i] = merge_into(r.peak[i], r.total[i], part[((Dim / 8) * 4 + i) * 32],
                           part[((Dim / 8) * 4 + 2 + i) * 32], [](float x) { return __expf(x); });
  }
#pragma unroll
  for (int dt = 0; dt < Dim / 8; ++dt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      r.o[dt][e] = r.o[dt][e] * weight[e / 2].mine + part[(dt * 4 + e) * 32] * weight[e / 2].theirs;
    }
  }
}

// Three blocks an SM at head dim 64 (168 registers a thread or fewer, no spills: the second
// tile's addresses took it to 189 and two blocks otherwise); two at 128.
template <class T, int Dim, score_form Form>
__global__ void __launch_bounds__(mma::k_threads, Dim <= 64 ? 3 : 2)
    rows64_kernel(const T* q, const T* k, const T* v, const T* bias, const bool* mask, T* out,
                  attention_plan p) {
  constexpr int keys = mma::keys_per_tile<Dim>, st = mma::stride<Dim>;
  extern __shared__ __align__(16) unsigned char mma_shared[];
  T* qs = reinterpret_cast<T*>(mma_shared);  // [64][st]
  T* tiles = qs + mma::k_rows * st;          // two of: K [keys][st], then V [keys][st]
  const block_at at = locate(p, mma::k_rows, true);
  const T* kb = k + at.b * p.k_stride[0] + at.h * p.k_stride[1];
  const T* vb = v + at.b * p.v_stride[0] + at.h * p.v_stride[1];
  const int lane = threadIdx.x % 32, g = lane / 4, tig = lane % 4;
  const int r0 = static_cast<int>(threadIdx.x / 32) * 16 + g;  // rows r0 and r0 + 8
  mma::copy_tile<T, Dim, mma::k_rows, mma::k_threads>(
      qs, q + at.b * p.q_stride[0] + at.h * p.q_stride[1], at.m0, p.sq, p.head_dim, p.q_stride[2],
      threadIdx.x);
  std::uint32_t qa[Dim / 16][4];
  const score_rows<T> rows = rows_at(p, at, at.m0 + r0, bias, mask);
  mma::row_state<Dim> r;
  const auto copy_keys = [&](std::int64_t n0, int buffer) {
    T* ks = tiles + buffer * 2 * keys * st;
    mma::copy_tile<T, Dim, keys, mma::k_threads>(ks, kb, n0, p.sk, p.head_dim, p.k_stride[2],
                                                 threadIdx.x);
    mma::copy_tile<T, Dim, keys, mma::k_threads>(ks + keys * st, vb, n0, p.sk, p.head_dim,
                                                 p.v_stride[2], threadIdx.x);
  };
  if (at.end > 0) copy_keys(0, 0);  // in flight with the query rows
  int buffer = 0;
  for (std::int64_t n0 = 0; n0 < at.end; n0 += keys, buffer ^= 1) {
    mma::wait_copies();  // this tile (and, the first time, the query rows)
    // Every thread's copies of this tile are in, and every warp is done with the other
    // buffer (the previous tile): the next tile goes there while this one is worked on.
    __syncthreads();
    if (n0 + keys < at.end) copy_keys(n0 + keys, buffer ^ 1);
    if (n0 == 0) mma::query_fragments<T, Dim>(qs, r0, tig, qa);
    const T* ks = tiles + buffer * 2 * keys * st;
    // The general form always tests: its code twice spilled at head dim 64.
    attend_tile<T, Dim, Form, Form != score_form::general>(qa, ks, ks + keys * st, n0, p, rows, r);
  }
  mma::wait_copies();  // the query rows' copies, where no key is visible to any row
  store_rows<T, Dim>(r, p, at, r0, tig, out);
}

// bar.sync on a barrier of `threads` threads other than __syncthreads' 0: one group of warps
// waits for its own, whatever the others' trip counts.
__device__ __forceinline__ void group_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// rows64_kernel's 64 query rows with twice the warps: warps 0-3 (group 0) walk the key tiles
// 0, 2, 4, ... and warps 4-7 (group 1) tiles 1, 3, 5, ..., each group double-buffering its own
// tiles behind a barrier of its own; group 1 leaves its partial rows in shared memory and
// group 0 merges them and stores. Why: where the blocks are few (GPT-2 at batch 1 and 1,024
// tokens: 192 blocks of 64 rows, longest first, mostly one to an SM), the time is the longest
// block's walk, 16 tiles one after the other by 4 warps; halves walk 8 each, on 8 warps an SM.
// Taken for walks of 512 keys or more over at most 1.5 blocks an SM (plan_attention).
template <class T, int Dim, score_form Form>
__global__ void __launch_bounds__(mma::k_halves_threads, 1)
    halves_kernel(const T* q, const T* k, const T* v, const T* bias, const bool* mask, T* out,
                  attention_plan p) {
  constexpr int keys = mma::keys_per_tile<Dim>, st = mma::stride<Dim>;
  extern __shared__ __align__(16) unsigned char mma_shared[];
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int group = warp / mma::k_warps, in_group = static_cast<int>(threadIdx.x) % mma::k_threads;
  const int g = lane / 4, tig = lane % 4;
  const int r0 = (warp % mma::k_warps) * 16 + g;             // rows r0 and r0 + 8
  T* qs = reinterpret_cast<T*>(mma_shared);                  // [64][st]
  T* tiles = qs + mma::k_rows * st + group * 4 * keys * st;  // this group's two K and V
  const block_start<T> start =
      start_block<T, Dim, mma::k_rows, mma::k_halves_threads>(q, k, v, qs, p, true);
  const block_at at = start.at;
  const T *kb = start.k, *vb = start.v;
  const auto copy_keys = [&](std::int64_t n0, int buffer) {
    T* ks = tiles + buffer * 2 * keys * st;
    mma::copy_tile<T, Dim, keys, mma::k_threads>(ks, kb, n0, p.sk, p.head_dim, p.k_stride[2],
                                                 in_group);
    mma::copy_tile<T, Dim, keys, mma::k_threads>(ks + keys * st, vb, n0, p.sk, p.head_dim,
                                                 p.v_stride[2], in_group);
  };
  const std::int64_t first = std::int64_t{group} * keys, step = 2 * std::int64_t{keys};
  if (first < at.end) copy_keys(first, 0);  // in flight with the query rows
  mma::wait_copies();
  __syncthreads();  // the query rows and each group's first tile, from every thread's copies
  std::uint32_t qa[Dim / 16][4];
  mma::query_fragments<T, Dim>(qs, r0, tig, qa);
  const score_rows<T> rows = rows_at(p, at, at.m0 + r0, bias, mask);
  mma::row_state<Dim> r;
  int buffer = 0;
  for (std::int64_t n0 = first; n0 < at.end; n0 += step, buffer ^= 1) {
    if (n0 != first) {
      mma::wait_copies();  // this thread's copies of this tile
      // The group's copies of this tile are in, and its warps are done with the other buffer.
      group_barrier(1 + group, mma::k_threads);
    }
    if (n0 + step < at.end) copy_keys(n0 + step, buffer ^ 1);
    const T* ks = tiles + buffer * 2 * keys * st;
    attend_tile<T, Dim, Form, Form != score_form::general>(qa, ks, ks + keys * st, n0, p, rows, r);
  }
  // Group 1's partial rows (where it saw a key) into the tiles' room, merged by group 0.
  constexpr int part_floats = mma::split_part_floats<Dim>;
  auto* part = reinterpret_cast<float*>(mma_shared + mma::halves_q_bytes<Dim>) +
               (warp % mma::k_warps) * part_floats * 32 + lane;
  const bool merge = at.end > keys;
  __syncthreads();  // both groups are done with their tiles
  if (group == 1 && merge) leave_part<Dim>(r, part);
  __syncthreads();
  if (group == 1) return;
  if (merge) merge_part<Dim>(r, part);
  store_rows<T, Dim>(r, p, at, r0, tig, out);
}

// Three blocks an SM, as its shared memory allows: the bound keeps the registers there (left
// free, the kernel without bias took 235 at head dim 64 and 213 at 128, two blocks, and a
// head dim 128 causal prefill of 512 took 0.0243 ms on an H100, 0.0204 before on another). With a
// bias or mask at head dim 128 three blocks' registers would spill: two there.
template <class T, int Dim, score_form Form>
__global__ void __launch_bounds__(mma::k_threads, Dim <= 64 || Form == score_form::plain ? 3 : 1)
    split_keys_kernel(const T* q, const T* k, const T* v, const T* bias, const bool* mask, T* out,
                      attention_plan p) {
  constexpr int keys = mma::keys_per_tile<Dim>, st = mma::stride<Dim>;
  extern __shared__ __align__(16) unsigned char mma_shared[];
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int g = lane / 4, tig = lane % 4;
  T* qs = reinterpret_cast<T*>(mma_shared);                    // [16][st]
  T* ks = qs + mma::k_split_rows * st + warp * 2 * keys * st;  // this warp's [keys][st]
  T* vs = ks + keys * st;                                      // and its V
  // The query rows and each warp's first tile in flight together.
  const block_start<T> start =
      start_block<T, Dim, mma::k_split_rows, mma::k_threads>(q, k, v, qs, p, false);
  const block_at at = start.at;
  const T *kb = start.k, *vb = start.v;
  const std::int64_t first = std::int64_t{warp} * keys, step = std::int64_t{mma::k_warps} * keys;
  if (first < at.end) {
    mma::copy_tile<T, Dim, keys, 32>(ks, kb, first, p.sk, p.head_dim, p.k_stride[2], lane);
    mma::copy_tile<T, Dim, keys, 32>(vs, vb, first, p.sk, p.head_dim, p.v_stride[2], lane);
  }
  mma::wait_copies();
  __syncthreads();  // the query rows and the first tiles, from every thread's copies
  std::uint32_t qa[Dim / 16][4];
  mma::query_fragments<T, Dim>(qs, g, tig, qa);
  const score_rows<T> rows = rows_at(p, at, at.m0 + g, bias, mask);
  mma::row_state<Dim> r;
  for (std::int64_t n0 = first; n0 < at.end; n0 += step) {
    if (n0 > first) {
      __syncwarp();  // the warp is done reading its previous tile
      mma::copy_tile<T, Dim, keys, 32>(ks, kb, n0, p.sk, p.head_dim, p.k_stride[2], lane);
      mma::copy_tile<T, Dim, keys, 32>(vs, vb, n0, p.sk, p.head_dim, p.v_stride[2], lane);
      mma::wait_copies();
      __syncwarp();  // the tile, from every lane's copies
    }
    // One copy of the adjustment: with two the bias_rows form spilled at head dim 64.
    attend_tile<T, Dim, Form, false>(qa, ks, vs, n0, p, rows, r);
  }
  // Warps 1 to 3 leave their partial rows in shared memory (those that saw
  // keys), and warp 0 merges them into its own in registers and stores.
  constexpr int part_floats = mma::split_part_floats<Dim>;
  const int with_keys = static_cast<int>(
      (at.end + keys - 1) / keys < mma::k_warps ? (at.end + keys - 1) / keys : mma::k_warps);
  __syncthreads();  // every warp is done with its tiles: their room takes the partial rows
  auto* part = reinterpret_cast<float*>(mma_shared + mma::split_q_bytes<Dim>);
  if (warp > 0 && warp < with_keys) leave_part<Dim>(r, part + (warp - 1) * part_floats * 32 + lane);
  __syncthreads();
  if (warp != 0) return;
  for (int w = 1; w < with_keys; ++w) merge_part<Dim>(r, part + (w - 1) * part_floats * 32 + lane);
  store_rows<T, Dim>(r, p, at, g, tig, out);
}

template <class T, int Dim, score_form Form>
void launch_kernel(const T* q, const T* k, const T* v, const T* bias, const bool* mask, T* out,
                   const attention_plan& p, const attention_launch& l, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(l.blocks_x), static_cast<unsigned>(l.blocks_y));
  if (l.kernel == attention_kernel::mma_halves) {
    launch_opted_in(halves_kernel<T, Dim, Form>, grid, mma::k_halves_threads,
                    mma::halves_shared_bytes<Dim>, stream, q, k, v, bias, mask, out, p);
  } else if (l.kernel == attention_kernel::mma_split_keys) {
    launch_opted_in(split_keys_kernel<T, Dim, Form>, grid, mma::k_threads,
                    mma::split_shared_bytes<Dim>, stream, q, k, v, bias, mask, out, p);
  } else {
    launch_opted_in(rows64_kernel<T, Dim, Form>, grid, mma::k_threads, mma::shared_bytes<Dim>,
                    stream, q, k, v, bias, mask, out, p);
  }
  check_launch();
}

}  // namespace

// Each score form a kernel of its own (score_form): a score's adjustment is unrolled 32 times
// a tile, and with the bias's and mask's paths in every copy the code outgrew the instruction
// cache (docs/perf/engine.md, 2026-12-06 morning); the general form's runtime steps and
// branches took a BERT layer's padding bias to twice the instructions of no bias (ncu and the
// SASS: docs/perf/engine.md, "2026-12-06, late").
// with_score_form (attention_mma.cuh) picks it.
void launch_mma_attention(dtype type, const void* q, const void* k, const void* v, const void* bias,
                          const bool* mask, void* out, const attention_plan& p,
                          const attention_launch& l, void* stream) {
  dispatch_16bit_head_dim(type, p.head_dim, [&](auto t, auto dim) {
    using T = typename decltype(t)::type;
    with_score_form(bias, mask, p, l.general_scores, [&](auto form) {
      launch_kernel<T, decltype(dim)::value, decltype(form)::value>(
          static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
          static_cast<const T*>(bias), mask, static_cast<T*>(out), p, l, as_stream(stream));
    });
  });
}

}  // namespace coolbench::engine::cuda
