// The attention block both Hopper kernels take (attention_wgmma.cu, which waits for each
// product, and attention_wgmma_overlap.cu, which runs a tile's softmax under the last tile's
// product with V): two warpgroups of 64 query rows, 128-key tiles shared by both (or 64-key
// ones: attention_wgmma.cu's second form), and their shared memory. sm_90a device code only, as
// wgmma.cuh.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/backends/cuda/attention_mma.cuh"
#include "engine/backends/cuda/wgmma.cuh"

namespace coolbench::engine::cuda::wgmma_block {

constexpr int k_block_rows = 128;  // query rows a block
constexpr int k_warpgroup_rows = 64;
constexpr int k_tile_keys = 128;
constexpr int k_block_threads = 2 * wgmma::k_warpgroup_threads;

template <int Dim>
constexpr std::uint32_t q_bytes = k_block_rows* Dim * 2;
template <int Dim, int Keys = k_tile_keys>
constexpr std::uint32_t kv_bytes = Keys* Dim * 2;  // one K or V tile
// Q and two stages of K and V (every tile 1024-byte aligned), plus the 1024 bytes the base may
// need to reach that alignment: 81 KB at head dim 64, 161 KB at 128, one block an SM; with
// 64-key tiles 49 and 97 KB.
template <int Dim, int Keys = k_tile_keys>
constexpr std::size_t shared_bytes = q_bytes<Dim> + 4 * std::size_t{kv_bytes<Dim, Keys>} + 1024;
static_assert(shared_bytes<128> <= 227 * 1024, "an H100's shared memory a block");
static_assert(2 * shared_bytes<64, 64> <= 227 * 1024, "two 64-key blocks an SM at head dim 64");

// One past the last key any row of the warpgroup whose rows start at `first_row` of the block
// sees: none where its rows all lie past sq, and with the causal flag its last row's last
// visible key. The same for the warpgroup's 128 threads, so its wgmmas stay convergent.
__device__ __forceinline__ std::int64_t warpgroup_keys_end(const attention_plan& p,
                                                           const block_at& at, int first_row) {
  const std::int64_t warpgroup_m0 = at.m0 + first_row;
  if (warpgroup_m0 >= p.sq) return 0;
  if (!p.causal) return at.end;
  const std::int64_t last = warpgroup_m0 + k_warpgroup_rows - 1 + p.sk - p.sq;
  return last + 1 < at.end ? last + 1 : at.end;
}

}  // namespace coolbench::engine::cuda::wgmma_block
