// coolbench.Attention's Hopper prefill kernel (float16, bfloat16): both
// products on wgmma (sm_90a: this file alone is built for 90a-real,
// src/engine/CMakeLists.txt). Picked where it fits and its blocks are many
// (launch_shapes.hpp: GPT-2 fp16 at 8 x 1,024 on an H100 67.9 us against
// mma.sync's 70.5, docs/perf/engine.md, "2026-12-07, night"), and no faster
// there than that, since each product is waited for before the softmax; its
// 64-key form (wgmma_keys64_rows128; the pick at head dims up to 64, or forced with
// COOLBENCH_ATTENTION_KERNEL=wgmma64) runs two blocks an SM at head dim 64 so
// that one block's products overlap the other's softmax (GPT-2 8 x 1,024 on an H100:
// 55.5 us against 67.5, docs/perf/engine.md, "2026-12-08").
//
// A block of 256 threads (two warpgroups) takes 128 query rows of one
// (batch, head), 64 a warpgroup, and walks the keys in tiles of 128 (or 64), both
// warpgroups sharing each K and V tile, the next tile's copies (cp.async,
// 16 bytes a thread) in flight in the other of two stages while this one is
// worked on. Per tile, each warpgroup: scores = Q Kᵀ (Q and K from shared
// memory, head dim / 16 wgmmas of m64n128k16), the score adjustment and
// online softmax of attention_mma.cuh on the accumulators as they are (their
// layout is mma.sync's for each 8 columns), the probabilities packed to
// 16 bits in place as the A registers of output += P V (V read transposed
// from shared memory, 8 wgmmas of m64n{head dim}k16). Each product is waited
// for before the next step (the memo's Step A: no overlap of the softmax
// with the products yet). With the causal flag a block walks only up to its
// last row's last visible key, and a warpgroup whose rows see none of a tile
// skips it (the diagonal's tiles mask per score).
//
// Tiles in shared memory: wgmma.cuh's swizzled layout, every tile 1024-byte
// aligned: Q [head dim / 64][128 rows][64], then two stages of K and V, each
// [head dim / 64][128 keys][64]: 80 KB at head dim 64, 160 KB at 128 (48 and 96 KB on
// 64-key tiles).
#include "engine/backends/cuda/attention_common.cuh"
#include "engine/backends/cuda/attention_mma.cuh"
#include "engine/backends/cuda/attention_wgmma.cuh"
#include "engine/backends/cuda/wgmma.cuh"

namespace coolbench::engine::cuda {
namespace {

using namespace wgmma_block;  // the block both Hopper kernels take

// Keys: the key tile, 128 or 64. With 128, one block an SM (80 or 160 KB of shared memory), so
// the registers may take 255 a thread: the scores (64 a thread), the output (32 or 64) and the
// packed probabilities (32) live together. With 64 keys at head dim 64 (MinBlocks 2) the scores
// are 32 and the probabilities 16, so two blocks fit an SM (128 registers a thread, 49 KB of
// shared memory each): while one block's warpgroups run the softmax, the other's products keep
// the tensor cores busy, which one block an SM cannot (its products wait for its softmax).
template <class T, int Dim, int Keys, int MinBlocks, score_form Form>
__global__ void __launch_bounds__(k_block_threads, MinBlocks)
    wgmma_kernel(const T* q, const T* k, const T* v, const T* bias, const bool* mask, T* out,
                 attention_plan p) {
  extern __shared__ unsigned char wgmma_shared[];
  // The swizzle's phase follows the absolute shared address: the tiles start on a 1024-byte
  // boundary, rounded up here (__align__ on the extern array is no promise).
  const std::uint32_t q_tile = (wgmma::shared_address(wgmma_shared) + 1023U) & ~1023U;
  const auto k_tile = [&](int stage) {
    return q_tile + q_bytes<Dim> + static_cast<std::uint32_t>(stage) * 2 * kv_bytes<Dim, Keys>;
  };
  const block_at at = locate(p, k_block_rows, true);
  const T* kb = k + at.b * p.k_stride[0] + at.h * p.k_stride[1];
  const T* vb = v + at.b * p.v_stride[0] + at.h * p.v_stride[1];
  const int thread = static_cast<int>(threadIdx.x), lane = thread % 32;
  const int warpgroup = thread / wgmma::k_warpgroup_threads;
  const int first_row = warpgroup * k_warpgroup_rows;  // the warpgroup's, in the block
  const int r0 = first_row + (thread % wgmma::k_warpgroup_threads) / 32 * 16 + lane / 4;
  const auto copy_keys = [&](std::int64_t n0, int stage) {
    wgmma::copy_swizzled<T, Dim, Keys, k_block_threads>(k_tile(stage), kb, n0, p.sk, p.head_dim,
                                                        p.k_stride[2], thread);
    wgmma::copy_swizzled<T, Dim, Keys, k_block_threads>(k_tile(stage) + kv_bytes<Dim, Keys>, vb, n0,
                                                        p.sk, p.head_dim, p.v_stride[2], thread);
  };
  wgmma::copy_swizzled<T, Dim, k_block_rows, k_block_threads>(
      q_tile, q + at.b * p.q_stride[0] + at.h * p.q_stride[1], at.m0, p.sq, p.head_dim,
      p.q_stride[2], thread);
  if (at.end > 0) copy_keys(0, 0);  // in flight with the query rows
  wgmma::commit_copies();
  const score_rows<T> rows = rows_at(p, at, at.m0 + r0, bias, mask);
  const std::int64_t warpgroup_end = warpgroup_keys_end(p, at, first_row);
  mma::row_state<Dim> r;
  int stage = 0;
  for (std::int64_t n0 = 0; n0 < at.end; n0 += Keys, stage ^= 1) {
    wgmma::wait_copies_for_wgmma();  // this tile's copies (the first time, the query rows too)
    // Every thread's copies of this tile are in, and both warpgroups are done with the other
    // stage (their products on the previous tile were waited for): the next tile goes there.
    __syncthreads();
    if (n0 + Keys < at.end) copy_keys(n0 + Keys, stage ^ 1);
    wgmma::commit_copies();
    if (n0 >= warpgroup_end) continue;
    float s[Keys / 8][4];
    wgmma::scores<T, Dim, Keys, k_block_rows>(s, q_tile, first_row, k_tile(stage));
    float tile_peak[2] = {-INFINITY, -INFINITY};
    const tile_view<T> view = view_tile<T, Keys, Form>(n0, rows);
    // The general form always tests, as rows64_kernel's: one copy of its long adjustment.
    adjust_scores<T, Keys, Form, Form != score_form::general>(s, view, p, rows, tile_peak);
    mma::softmax_step<Dim>(s, tile_peak, r);
    std::uint32_t probabilities[Keys / 16][4];
    wgmma::pack_probabilities<T, Keys>(s, probabilities);
    wgmma::accumulate<T, Dim, Keys>(r.o, probabilities, k_tile(stage) + kv_bytes<Dim, Keys>);
  }
  wgmma::wait_copies_for_wgmma();  // the query rows' copies, where no row sees a key
  store_rows<T, Dim>(r, p, at, r0, lane % 4, out);
}

// Two blocks an SM where the head dim's output leaves the registers for it (64, not 128).
template <int Dim>
constexpr int k_keys64_min_blocks = Dim <= 64 ? 2 : 1;

// The 64-key kernel asks for the largest shared-memory carveout, so that its two blocks of 49 KB
// an SM are not held back by a carveout the driver picked smaller.
template <class Kernel>
void prefer_shared(Kernel kernel) {
  COOLBENCH_CUDA_CALL(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                           cudaSharedmemCarveoutMaxShared));
}

template <class T, int Dim, score_form Form>
void launch_kernel(const T* q, const T* k, const T* v, const T* bias, const bool* mask, T* out,
                   const attention_plan& p, const attention_launch& l, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(l.blocks_x), static_cast<unsigned>(l.blocks_y));
  if (l.kernel == attention_kernel::wgmma_keys64_rows128) {
    const auto kernel = wgmma_kernel<T, Dim, 64, k_keys64_min_blocks<Dim>, Form>;
    prefer_shared(kernel);
    launch_opted_in(kernel, grid, k_block_threads, shared_bytes<Dim, 64>, stream, q, k, v, bias,
                    mask, out, p);
  } else {
    launch_opted_in(wgmma_kernel<T, Dim, k_tile_keys, 1, Form>, grid, k_block_threads,
                    shared_bytes<Dim>, stream, q, k, v, bias, mask, out, p);
  }
  check_launch();
}

}  // namespace

int wgmma_blocks_per_sm(dtype type, std::int64_t head_dim, bool keys64) {
  int blocks = 0;
  dispatch_16bit_head_dim(type, head_dim, [&](auto t, auto dim) {
    using T = typename decltype(t)::type;
    constexpr int d = decltype(dim)::value;
    const auto query = [&](auto kernel, std::size_t bytes) {
      COOLBENCH_CUDA_CALL(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(bytes)));
      COOLBENCH_CUDA_CALL(
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, k_block_threads, bytes));
    };
    if (keys64) {
      const auto kernel = wgmma_kernel<T, d, 64, k_keys64_min_blocks<d>, score_form::plain>;
      prefer_shared(kernel);
      query(kernel, shared_bytes<d, 64>);
    } else {
      query(wgmma_kernel<T, d, k_tile_keys, 1, score_form::plain>, shared_bytes<d>);
    }
  });
  return blocks;
}

// The score form with_score_form picks (attention_mma.cuh): plain, BERT's padding bias
// (bias_rows, which the general form took to 32.6 us against rows64's 18.9 on an H100) or the
// general one.
void launch_wgmma_attention(dtype type, const void* q, const void* k, const void* v,
                            const void* bias, const bool* mask, void* out, const attention_plan& p,
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
