// coolbench.Attention's Hopper prefill kernel with the softmax overlapping a
// product (the second step after attention_wgmma.cu's kernel, which waits for
// each product; float16, bfloat16; sm_90a, built beside attention_wgmma.cu). Forced only
// (COOLBENCH_ATTENTION_KERNEL=wgmma_overlap, where attention_wgmma_fits:
// launch_shapes.hpp): correct on an H100 (cuda_attention_wgmma_overlap_test),
// and 5-10 % slower than attention_wgmma.cu's kernel there on every shape
// attention_bench has (docs/perf/engine.md, "2026-12-07, afternoon").
//
// The block is attention_wgmma.cu's (256 threads, two warpgroups of 64 query
// rows, 128-key tiles shared by both, wgmma.cuh's pieces); the order of the
// products differs. For tile n each warpgroup issues the scores S_n = Q K_nᵀ
// (one wgmma group), then the output's product with the previous tile,
// O += P_{n-1} V_{n-1} (a second group), waits for the first group alone, and
// works the softmax of S_n while P_{n-1} V_{n-1} runs on the tensor cores; it
// then waits for the second, rescales O and packs P_n into the registers
// that P_{n-1} held. The first tile has no product with V, the walk's last
// step no scores (one loop of tiles + 1 steps, each product issued where its
// tile exists for the warpgroup: the same for its 128 threads).
//
// K and V of different tiles are read at once (K_n by S_n, V_{n-1} by the
// product with P_{n-1}), so K and V have stage rings of their own, two stages
// each, and V runs one tile behind K: at step n the copies of K_{n+1} and V_n
// are in flight while K_n and V_{n-1} are read. The stage a step refills held
// K_{n-1} or V_{n-2}, both read by groups the step before waited for, and the
// barrier at the top of every step has both warpgroups past those waits.
// Three stages of K and V together would take the same 80 or 160 KB as this.
// Shared memory: Q [head dim / 64][128][64], K stages 0 and 1, V stages 0
// and 1 (each [head dim / 64][128 keys][64]), every tile 1024-byte aligned:
// 80 KB at head dim 64, 160 KB at 128, as attention_wgmma.cu.
//
// One block an SM even at head dim 64 (two would fit the shared memory):
// the scores (64 registers a thread), the probabilities of the previous tile
// (32) and the output (32 or 64) are live together, past the 128 registers a
// thread that two blocks of 256 threads would leave.
//
// Without a bias or mask (score_form::plain) the scores are scaled by
// scale · log2 e in the adjustment, so that each probability is
// 2^(x - base) with no further multiply; with a bias or mask the order of
// attention_mma.cuh's softmax_step stays (base · log2 e overflows for a row
// masked so far by the dtype's lowest, which must still weigh its keys
// equally).
#include "engine/backends/cuda/attention_common.cuh"
#include "engine/backends/cuda/attention_mma.cuh"
#include "engine/backends/cuda/attention_wgmma.cuh"
#include "engine/backends/cuda/wgmma.cuh"

namespace coolbench::engine::cuda {
namespace {

using namespace wgmma_block;  // the block both Hopper kernels take

// The softmax of one tile's adjusted scores `s` (each row's largest of the tile in tile_peak),
// without touching the output: the scores become 2^((x - base) · unit) for the new running
// maximum base (unit 1 where the scores are already in base 2, else log2 e), the running sums
// are rescaled and grown, and `rescale` is what the output must be multiplied by once the
// product that accumulates into it is done.
template <bool Log2, int Tiles>
__device__ __forceinline__ void exponentiate(float (&s)[Tiles][4], const float (&tile_peak)[2],
                                             float (&peak)[2], float (&total)[2],
                                             float (&rescale)[2]) {
  float base[2], tile_total[2] = {0, 0};
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const float next = fmaxf(peak[i], row_max(tile_peak[i]));
    base[i] = next == -INFINITY ? 0.0F : next;  // a row hidden so far adds nothing
    const float gap = peak[i] - base[i];
    rescale[i] = mma::exp2_ftz(Log2 ? gap : gap * mma::k_log2e);
    peak[i] = next;
  }
#pragma unroll
  for (int nt = 0; nt < Tiles; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float gap = s[nt][e] - base[e / 2];
      s[nt][e] = mma::exp2_ftz(Log2 ? gap : gap * mma::k_log2e);
      tile_total[e / 2] += s[nt][e];
    }
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) total[i] = total[i] * rescale[i] + row_sum(tile_total[i]);
}

template <int Tiles>
__device__ __forceinline__ void fence_values(float (&v)[Tiles]) {
#pragma unroll
  for (int i = 0; i < Tiles; ++i) asm volatile("" : "+f"(v[i])::"memory");
}

// One block an SM (80 or 160 KB of shared memory; the registers as the header says).
template <class T, int Dim, score_form Form>
__global__ void __launch_bounds__(k_block_threads, 1)
    wgmma_overlap_kernel(const T* q, const T* k, const T* v, const T* bias, const bool* mask,
                         T* out, attention_plan p) {
  extern __shared__ unsigned char overlap_shared[];
  // The swizzle's phase follows the absolute shared address: the tiles start on a 1024-byte
  // boundary, rounded up here (__align__ on the extern array is no promise).
  const std::uint32_t q_tile = (wgmma::shared_address(overlap_shared) + 1023U) & ~1023U;
  const auto k_tile = [&](int stage) {
    return q_tile + q_bytes<Dim> + static_cast<std::uint32_t>(stage) * kv_bytes<Dim>;
  };
  const auto v_tile = [&](int stage) {
    return q_tile + q_bytes<Dim> + static_cast<std::uint32_t>(2 + stage) * kv_bytes<Dim>;
  };
  const block_at at = locate(p, k_block_rows, true);
  const T* kb = k + at.b * p.k_stride[0] + at.h * p.k_stride[1];
  const T* vb = v + at.b * p.v_stride[0] + at.h * p.v_stride[1];
  const int thread = static_cast<int>(threadIdx.x), lane = thread % 32;
  const int warpgroup = thread / wgmma::k_warpgroup_threads;
  const int first_row = warpgroup * k_warpgroup_rows;  // the warpgroup's, in the block
  const int r0 = first_row + (thread % wgmma::k_warpgroup_threads) / 32 * 16 + lane / 4;
  const auto copy_tile = [&](std::uint32_t tile, const T* from, std::int64_t ld, std::int64_t n0) {
    wgmma::copy_swizzled<T, Dim, k_tile_keys, k_block_threads>(tile, from, n0, p.sk, p.head_dim, ld,
                                                               thread);
  };
  wgmma::copy_swizzled<T, Dim, k_block_rows, k_block_threads>(
      q_tile, q + at.b * p.q_stride[0] + at.h * p.q_stride[1], at.m0, p.sq, p.head_dim,
      p.q_stride[2], thread);
  if (at.end > 0) copy_tile(k_tile(0), kb, p.k_stride[2], 0);  // in flight with the query rows
  wgmma::commit_copies();
  const score_rows<T> rows = rows_at(p, at, at.m0 + r0, bias, mask);
  const std::int64_t warpgroup_end = warpgroup_keys_end(p, at, first_row);
  const std::int64_t tiles = (at.end + k_tile_keys - 1) / k_tile_keys;  // the block's
  const std::int64_t warpgroup_tiles = (warpgroup_end + k_tile_keys - 1) / k_tile_keys;
  // The plain form's scores in base 2 (the header); the others as attention_mma.cuh has them.
  constexpr bool log2 = Form == score_form::plain;
  attention_plan scaled = p;
  if constexpr (log2) scaled.scale = p.scale * mma::k_log2e;
  mma::row_state<Dim> r;
  float s[k_tile_keys / 8][4] = {};
  std::uint32_t probabilities[k_tile_keys / 16][4] = {};
  for (std::int64_t n = 0; n <= tiles; ++n) {
    const int stage = static_cast<int>(n % 2);
    // K_n's and V_{n-1}'s copies (the first time, the query rows and K_0) landed for every
    // thread, and both warpgroups waited for their products on K_{n-1} and V_{n-2}: their
    // stages take K_{n+1} and V_n.
    wgmma::wait_copies_for_wgmma();
    __syncthreads();
    if (n + 1 < tiles) copy_tile(k_tile(stage ^ 1), kb, p.k_stride[2], (n + 1) * k_tile_keys);
    if (n < tiles) copy_tile(v_tile(stage), vb, p.v_stride[2], n * k_tile_keys);
    wgmma::commit_copies();
    // Whether this warpgroup has the scores of tile n and the product with tile n - 1.
    const bool scores_now = n < warpgroup_tiles;
    const bool values_now = n > 0 && n <= warpgroup_tiles;
    if (!scores_now && !values_now) continue;
    // The last step's ordinary code (the output rescaled, the probabilities packed from s)
    // before the products that use those registers: an empty asm for each (the compiler's
    // side), then wgmma.fence (the hardware's), one before each group. Each kind of step
    // (scores alone, both, the product with V alone) has its own fence, products and commit:
    // ptxas serialized every wgmma (C7520) where the products alone sat under a branch.
    wgmma::fence_registers(s);
    wgmma::fence_registers(r.o);
    wgmma::fence_registers(probabilities);
    const auto issue_scores = [&] {
      wgmma::fence();
      wgmma::issue_scores<T, Dim, k_tile_keys, k_block_rows>(s, q_tile, first_row, k_tile(stage));
      wgmma::commit();
    };
    const auto issue_values = [&] {
      wgmma::fence();
      wgmma::issue_accumulate<T, Dim, k_tile_keys>(r.o, probabilities, v_tile(stage ^ 1));
      wgmma::commit();
    };
    if (scores_now && values_now) {
      issue_scores();
      issue_values();
      wgmma::wait<1>();  // the scores' group; the product with V may still run
    } else if (scores_now) {
      issue_scores();
      wgmma::wait<0>();
    } else {
      issue_values();
    }
    wgmma::fence_registers(s);
    float rescale[2] = {1, 1};
    if (scores_now) {
      float tile_peak[2] = {-INFINITY, -INFINITY};
      const tile_view<T> view = view_tile<T, k_tile_keys, Form>(n * k_tile_keys, rows);
      // The general form always tests, as attention_wgmma.cu's: one copy of its adjustment.
      adjust_scores<T, k_tile_keys, Form, Form != score_form::general>(s, view, scaled, rows,
                                                                       tile_peak);
      exponentiate<log2>(s, tile_peak, r.peak, r.total, rescale);
    }
    // The softmax before the wait (each value through an empty asm the compiler keeps in
    // order with the wait's), so that it runs while the product with V does.
    wgmma::fence_registers(s);
    fence_values(rescale);
    wgmma::wait<0>();
    wgmma::fence_registers(r.o);
    wgmma::fence_registers(probabilities);
    if (scores_now) {
#pragma unroll
      for (int dt = 0; dt < Dim / 8; ++dt) {
        r.o[dt][0] *= rescale[0], r.o[dt][1] *= rescale[0];
        r.o[dt][2] *= rescale[1], r.o[dt][3] *= rescale[1];
      }
      wgmma::pack_probabilities<T, k_tile_keys>(s, probabilities);
    }
  }
  wgmma::wait_copies_for_wgmma();  // the query rows' copies, where the block sees no key
  store_rows<T, Dim>(r, p, at, r0, lane % 4, out);
}

template <class T, int Dim, score_form Form>
void launch_kernel(const T* q, const T* k, const T* v, const T* bias, const bool* mask, T* out,
                   const attention_plan& p, const attention_launch& l, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(l.blocks_x), static_cast<unsigned>(l.blocks_y));
  launch_opted_in(wgmma_overlap_kernel<T, Dim, Form>, grid, k_block_threads, shared_bytes<Dim>,
                  stream, q, k, v, bias, mask, out, p);
  check_launch();
}

}  // namespace

// The score form with_score_form picks (attention_mma.cuh): plain, BERT's padding bias
// (bias_rows) or the general one.
void launch_wgmma_overlap_attention(dtype type, const void* q, const void* k, const void* v,
                                    const void* bias, const bool* mask, void* out,
                                    const attention_plan& p, const attention_launch& l,
                                    void* stream) {
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
