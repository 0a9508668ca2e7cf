// How the CUDA backend's hand-written kernels split their work: the grid,
// the block and the per-thread tiling each launch takes for a problem's
// sizes. Plain host code (no CUDA headers), so the choices and their
// bounds are unit-tested on the CPU (tests/engine/launch_shapes_test.cpp);
// the kernels (fused_layer_norm.cu) launch what these return.
#pragma once

#include <algorithm>
#include <cstdint>

namespace coolbench::engine::cuda {

/// A LayerNorm launch over `rows` rows of `n` elements.
struct layer_norm_launch {
  bool warp_per_row = false;  // else one block per row
  int vec = 1;                // elements per load (16 bytes, or 1)
  int lane_elements = 0;      // warp kernel: registers of the row a lane holds (8, 16, 32, 64)
  std::int64_t blocks = 0;
  int threads = 0;
};

inline constexpr int k_layer_norm_warp_rows = 4;               // warps (rows) per block
inline constexpr std::int64_t k_layer_norm_warp_width = 2048;  // 32 lanes x 64 registers
inline constexpr int k_layer_norm_block_threads = 512;

/// `element` bytes per element; `aligned`: every pointer is 16-byte aligned.
/// 16-byte loads need n a multiple of their width too, so every row starts
/// aligned; otherwise each load takes one element.
inline layer_norm_launch plan_layer_norm(int element, std::int64_t rows, std::int64_t n,
                                         bool aligned) {
  layer_norm_launch l;
  const int wide = 16 / element;
  l.vec = aligned && n % wide == 0 ? wide : 1;
  if (n <= k_layer_norm_warp_width) {
    l.warp_per_row = true;
    const std::int64_t per_lane = (n + 31) / 32;  // elements, rounded up to whole loads below
    const std::int64_t loads = (per_lane + l.vec - 1) / l.vec;
    l.lane_elements = 64;
    for (const int e : {8, 16, 32}) {
      if (loads * l.vec <= e) {
        l.lane_elements = e;
        break;
      }
    }
    l.blocks = (rows + k_layer_norm_warp_rows - 1) / k_layer_norm_warp_rows;
    l.threads = k_layer_norm_warp_rows * 32;
    return l;
  }
  const std::int64_t lanes = (n / l.vec + 31) / 32 * 32;
  l.threads = static_cast<int>(std::min<std::int64_t>(lanes, k_layer_norm_block_threads));
  l.blocks = rows;
  return l;
}

}  // namespace coolbench::engine::cuda
