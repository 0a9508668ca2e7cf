// The CUDA kernels' launch shapes (engine/backends/cuda/launch_shapes.hpp)
// on the CPU: which kernel a problem takes, the vector width, the registers
// a lane holds and the grid, for the shapes of GPT-2, BERT and ViT and for
// the edges (widths no multiple of the vector, misaligned pointers, the
// widest row of the warp kernel); the attention kernels' choice and grids;
// the elementwise program's merged dims, and its index math (the kernel's
// own function, run here) against the offsets from the unmerged strides;
// the split-keys attention's merge of partial rows against a direct softmax;
// a Concat's one-launch plan, run piece by piece on host bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <string_view>
#include <vector>

#include "engine/backends/cuda/attention_merge.hpp"
#include "engine/backends/cuda/launch_shapes.hpp"

namespace coolbench::engine::cuda {
namespace {

TEST(launch_shapes, layer_norm_of_gpt2_takes_one_warp_a_row) {
  // [128, 768] in float16: 96 loads of 8, 3 a lane, in 32 registers.
  const auto l = plan_layer_norm(2, 128, 768, true);
  EXPECT_TRUE(l.warp_per_row);
  EXPECT_EQ(l.vec, 8);
  EXPECT_EQ(l.lane_elements, 32);
  EXPECT_EQ(l.blocks, 32);
  EXPECT_EQ(l.threads, 128);
  // float32: 4 a load, the same registers.
  const auto f = plan_layer_norm(4, 128, 768, true);
  EXPECT_EQ(f.vec, 4);
  EXPECT_EQ(f.lane_elements, 32);
  // ViT-B/16 at batch 32: 32 x 197 rows.
  EXPECT_EQ(plan_layer_norm(2, 32 * 197, 768, true).blocks, (32 * 197 + 3) / 4);
}

TEST(launch_shapes, layer_norm_loads_one_element_where_16_bytes_do_not_fit) {
  EXPECT_EQ(plan_layer_norm(2, 4, 768, false).vec, 1);  // a misaligned pointer
  EXPECT_EQ(plan_layer_norm(2, 4, 772, true).vec, 1);   // rows not a multiple of 8
  EXPECT_EQ(plan_layer_norm(4, 4, 772, true).vec, 4);   // but of float32's 4
  EXPECT_EQ(plan_layer_norm(2, 3, 7, true).vec, 1);
  // One element a load: 24 of 768 a lane.
  EXPECT_EQ(plan_layer_norm(2, 4, 768, false).lane_elements, 32);
}

TEST(launch_shapes, layer_norm_lanes_hold_the_whole_row) {
  for (const int element : {2, 4}) {
    for (const bool aligned : {true, false}) {
      for (std::int64_t n = 1; n <= k_layer_norm_warp_width; ++n) {
        const auto l = plan_layer_norm(element, 5, n, aligned);
        ASSERT_TRUE(l.warp_per_row) << n;
        ASSERT_EQ(l.lane_elements % l.vec, 0) << n;
        // Lane 0 takes the most loads: ceil(n / vec / 32) of them.
        const std::int64_t loads = (n / l.vec + 31) / 32;
        ASSERT_EQ(n % l.vec, 0) << n;
        ASSERT_LE(loads * l.vec, l.lane_elements) << element << " " << aligned << " n " << n;
        // and the least registers that do: half as many would not.
        if (l.lane_elements > 8) {
          ASSERT_GT(loads * l.vec, l.lane_elements / 2) << n;
        }
        ASSERT_EQ(l.blocks, 2);
      }
    }
  }
}

TEST(launch_shapes, layer_norm_wider_rows_take_a_block_each) {
  const auto l = plan_layer_norm(2, 3, 20000, true);
  EXPECT_FALSE(l.warp_per_row);
  EXPECT_EQ(l.blocks, 3);
  EXPECT_EQ(l.threads, k_layer_norm_block_threads);
  EXPECT_EQ(plan_layer_norm(2, 3, 2056, true).threads, 288);  // 257 loads: 9 warps
  EXPECT_FALSE(plan_layer_norm(2, 3, k_layer_norm_warp_width + 1, true).warp_per_row);
}

constexpr int k_h200_sms = 132;

std::int64_t rows_of(attention_kernel k) {
  switch (k) {
    case attention_kernel::fma_tiled32: return 32;
    case attention_kernel::fma_tiled64: return 64;
    case attention_kernel::mma_rows64: return 64;
    case attention_kernel::mma_split_keys: return 16;
    case attention_kernel::mma_halves: return 64;
    case attention_kernel::tf32x3_rows64: return 64;
    case attention_kernel::wgmma_rows128: return 128;
    case attention_kernel::wgmma_overlap_rows128: return 128;
    case attention_kernel::wgmma_keys64_rows128: return 128;
    case attention_kernel::decode_split:
    case attention_kernel::decode_vector:
    case attention_kernel::decode_cluster: break;
  }
  return 1;
}

TEST(launch_shapes, attention_splits_the_keys_where_64_row_tiles_leave_sms_idle) {
  // GPT-2 small and BERT-base at batch 1, 128 tokens: 12 heads x 2 tiles of
  // 64 rows = 24 blocks for 132 SMs; 16-row blocks make 96.
  auto l = plan_attention(12, 128, 128, true, k_h200_sms, "");
  EXPECT_EQ(l.kernel, attention_kernel::mma_split_keys);
  EXPECT_EQ(l.blocks_x, 12);
  EXPECT_EQ(l.blocks_y, 8);
  // ViT-B/16 at batch 1, 197 tokens: 48 blocks of 64 rows, or 156 of 16.
  l = plan_attention(12, 197, 197, true, k_h200_sms, "");
  EXPECT_EQ(l.kernel, attention_kernel::mma_split_keys);
  EXPECT_EQ(l.blocks_y, 13);
  // Fewer blocks than SMs over at most 256 x 256 scores: split; over more, 64-row tiles, as
  // GPT-2 at 1024 tokens (192 blocks: 22.4 against 31.0 us split on an H100) and head dim 128
  // at 512 tokens (96 blocks: 17.1 against 19.6 us), where the walks of 512 keys and more over
  // at most 1.5 blocks an SM take halves (next test).
  EXPECT_EQ(plan_attention(131, 64, 512, true, k_h200_sms, "").kernel,
            attention_kernel::mma_split_keys);  // 131 blocks over 64 x 512 scores
  EXPECT_EQ(plan_attention(131, 64, 511, true, k_h200_sms, "").kernel,
            attention_kernel::mma_split_keys);
  EXPECT_EQ(plan_attention(132, 64, 256, true, k_h200_sms, "").kernel,
            attention_kernel::mma_rows64);  // a block an SM, a short walk
  EXPECT_EQ(plan_attention(12, 300, 300, true, k_h200_sms, "").kernel,
            attention_kernel::mma_rows64);  // over 256 x 256, a short walk
  // Enough blocks of 64 rows: GPT-2 at batch 8 (192 blocks of 2 tiles), BERT and ViT at
  // batch 32, GPT-2 at 1024 tokens and batch 2 (384).
  for (const auto& [bh, s] :
       {std::pair<std::int64_t, std::int64_t>{96, 128}, {24, 1024}, {384, 128}, {384, 197}}) {
    l = plan_attention(bh, s, s, true, k_h200_sms, "");
    EXPECT_EQ(l.kernel, attention_kernel::mma_rows64) << bh << " " << s;
    EXPECT_EQ(l.blocks_y, (s + 63) / 64);
  }
}

TEST(launch_shapes, attention_takes_halves_for_long_walks_over_few_blocks) {
  // 64-row tiles with two groups of warps over the keys, for 16 bits on sm_90, by default
  // where a block walks at least 512 keys and 64-row blocks are at most 1.5 an SM: GPT-2 at
  // 1 x 1024 (192 blocks: 15.5 against 20.0 us on an H100), head dim 128 at 512 tokens (96
  // blocks: 16.2 against 17.3).
  auto l = plan_attention(12, 1024, 1024, true, k_h200_sms, "");
  EXPECT_EQ(l.kernel, attention_kernel::mma_halves);
  EXPECT_EQ(l.blocks_y, 16);
  EXPECT_EQ(plan_attention(12, 512, 512, true, k_h200_sms, "").kernel,
            attention_kernel::mma_halves);
  EXPECT_EQ(plan_attention(1, 64, 4096, true, k_h200_sms, "").kernel,
            attention_kernel::mma_halves);  // 1 block, 64 x 4096 scores: not few
  EXPECT_EQ(plan_attention(198, 64, 512, true, k_h200_sms, "").kernel,
            attention_kernel::mma_halves);  // 1.5 blocks an SM
  // Halves lost where the walk is short or the blocks many: GPT-2 at 8 x 128 (192 blocks of 2
  // tiles), at 8 x 1024 (1,536 blocks), BERT and ViT at batch 32.
  for (const auto& [bh, s] : {std::pair<std::int64_t, std::int64_t>{96, 128},
                              {96, 1024},
                              {384, 128},
                              {384, 197},
                              {12, 511}}) {
    EXPECT_EQ(plan_attention(bh, s, s, true, k_h200_sms, "").kernel, attention_kernel::mma_rows64)
        << bh << " " << s;
  }
  EXPECT_EQ(plan_attention(199, 64, 512, true, k_h200_sms, "").kernel,
            attention_kernel::mma_rows64);  // over 1.5 blocks an SM
  // Forced: everywhere on the tensor cores; "mma" keeps 4 warps; other names pick.
  EXPECT_EQ(plan_attention(12, 128, 128, true, k_h200_sms, "halves").kernel,
            attention_kernel::mma_halves);
  EXPECT_EQ(plan_attention(12, 1024, 1024, true, k_h200_sms, "mma").kernel,
            attention_kernel::mma_rows64);
  EXPECT_EQ(plan_attention(12, 1024, 1024, true, k_h200_sms, "split_keys").kernel,
            attention_kernel::mma_split_keys);
  EXPECT_EQ(plan_attention(12, 1024, 1024, true, k_h200_sms, "decode_scalar").kernel,
            attention_kernel::mma_halves);
  // Float32 and GPUs without sm_90's tensor-core code pick as unforced; decode splits.
  EXPECT_EQ(plan_attention(12, 1024, 1024, true, k_h200_sms, "halves", true).kernel,
            attention_kernel::tf32x3_rows64);
  EXPECT_EQ(plan_attention(12, 1024, 1024, false, k_h200_sms, "halves").kernel,
            attention_kernel::fma_tiled64);
  EXPECT_EQ(plan_attention(12, 1, 1024, true, k_h200_sms, "halves").kernel,
            attention_kernel::decode_split);
}

TEST(launch_shapes, attention_takes_the_kernel_forced_or_the_only_one_that_runs) {
  EXPECT_EQ(plan_attention(12, 128, 128, false, k_h200_sms, "").kernel,
            attention_kernel::fma_tiled32);  // float32, or no sm_90
  EXPECT_EQ(plan_attention(12, 128, 128, true, k_h200_sms, "fma").kernel,
            attention_kernel::fma_tiled32);
  EXPECT_EQ(plan_attention(12, 128, 128, true, k_h200_sms, "fma64").kernel,
            attention_kernel::fma_tiled64);
  EXPECT_EQ(plan_attention(384, 128, 128, false, k_h200_sms, "fma32").kernel,
            attention_kernel::fma_tiled32);

  EXPECT_EQ(plan_attention(12, 128, 128, true, k_h200_sms, "mma").kernel,
            attention_kernel::mma_rows64);
  EXPECT_EQ(plan_attention(384, 128, 128, true, k_h200_sms, "split_keys").kernel,
            attention_kernel::mma_split_keys);
  EXPECT_EQ(plan_attention(12, 128, 128, false, k_h200_sms, "split_keys").kernel,
            attention_kernel::fma_tiled32);
  // More 16-row tiles than a grid's y dimension holds: 64-row tiles.
  EXPECT_EQ(plan_attention(1, std::int64_t{1} << 21, 8, true, k_h200_sms, "split_keys").kernel,
            attention_kernel::mma_rows64);
}

TEST(launch_shapes, attention_float32_takes_3xtf32_where_64_row_blocks_fill_the_sms) {
  // GPT-2 at batch 8 x 128 and 1 x 1024 (192 blocks of 64 rows), BERT at batch 32 (768), ViT at
  // batch 32 (1536): 3xTF32, 1.18-1.33x the FMA kernel on an H100.
  for (const auto& [bh, s] : {std::pair<std::int64_t, std::int64_t>{96, 128},
                              {12, 1024},
                              {96, 1024},
                              {384, 128},
                              {384, 197},
                              {132, 64}}) {
    for (const char* forced : {"", "tf32x3", "mma", "split_keys"}) {
      const auto l = plan_attention(bh, s, s, true, k_h200_sms, forced, true);
      EXPECT_EQ(l.kernel, attention_kernel::tf32x3_rows64) << bh << " " << s << " " << forced;
      EXPECT_EQ(l.blocks_x, bh);
      EXPECT_EQ(l.blocks_y, (s + 63) / 64);
    }
    EXPECT_EQ(plan_attention(bh, s, s, true, k_h200_sms, "fma", true).kernel,
              attention_kernel::fma_tiled64);
  }
  // Batch 1 at 128 and 197 tokens (24 and 48 blocks), head dim 128 at 512 (96), a block short
  // of an SM: the FMA kernel, which was level or faster there, unless tf32x3 is forced.
  for (const auto& [bh, s] :
       {std::pair<std::int64_t, std::int64_t>{12, 128}, {12, 197}, {12, 512}, {131, 64}}) {
    EXPECT_EQ(plan_attention(bh, s, s, true, k_h200_sms, "", true).kernel,
              attention_kernel::fma_tiled32)
        << bh << " " << s;
    EXPECT_EQ(plan_attention(bh, s, s, true, k_h200_sms, "tf32x3", true).kernel,
              attention_kernel::tf32x3_rows64)
        << bh << " " << s;
  }
  // Without sm_90 (or with steps the tensor-core kernels cannot take): the FMA kernel.
  EXPECT_EQ(plan_attention(12, 1024, 1024, false, k_h200_sms, "tf32x3", true).kernel,
            attention_kernel::fma_tiled64);
  // 16-bit dtypes take their own kernels under that name; decode splits the keys.
  EXPECT_EQ(plan_attention(12, 1024, 1024, true, k_h200_sms, "tf32x3").kernel,
            attention_kernel::mma_halves);
  EXPECT_EQ(plan_attention(12, 128, 128, true, k_h200_sms, "tf32x3").kernel,
            attention_kernel::mma_split_keys);
  EXPECT_EQ(plan_attention(12, 1, 129, true, k_h200_sms, "tf32x3", true).kernel,
            attention_kernel::decode_split);
}

TEST(launch_shapes, attention_fma_takes_64_rows_where_they_make_a_block_an_sm) {
  // GPT-2 at batch 8 x 128 tokens and at 1024 tokens: 192 blocks of 64 rows; BERT at batch 32.
  for (const auto& [bh, s] :
       {std::pair<std::int64_t, std::int64_t>{96, 128}, {12, 1024}, {384, 128}, {132, 64}}) {
    const auto l = plan_attention(bh, s, s, false, k_h200_sms, "");
    EXPECT_EQ(l.kernel, attention_kernel::fma_tiled64) << bh << " " << s;
    EXPECT_EQ(l.blocks_y, (s + 63) / 64);
  }
  // GPT-2 and BERT at batch 1 x 128 tokens (24 blocks of 64 rows), ViT at batch 1 (48), one
  // block short of an SM each.
  for (const auto& [bh, s] :
       {std::pair<std::int64_t, std::int64_t>{12, 128}, {12, 197}, {131, 64}}) {
    const auto l = plan_attention(bh, s, s, false, k_h200_sms, "");
    EXPECT_EQ(l.kernel, attention_kernel::fma_tiled32) << bh << " " << s;
    EXPECT_EQ(l.blocks_y, (s + 31) / 32);
  }
}

TEST(launch_shapes, attention_grids_cover_every_query_row_once) {
  for (const char* forced : {"", "fma", "fma32", "fma64", "mma", "split_keys", "tf32x3", "wgmma",
                             "wgmma_overlap", "wgmma64"}) {
    for (const bool tensor_cores : {false, true}) {
      for (const bool float32 : {false, true}) {
        for (const std::int64_t sq : {2, 7, 16, 17, 64, 65, 127, 128, 129, 197, 1024}) {
          const auto l =
              plan_attention(3, sq, sq, tensor_cores, k_h200_sms, forced, float32, !float32);
          const std::int64_t rows = rows_of(l.kernel);
          EXPECT_GE(l.blocks_y * rows, sq) << forced << " " << sq << " " << float32;
          EXPECT_LT((l.blocks_y - 1) * rows, sq) << forced << " " << sq << " " << float32;
          EXPECT_EQ(l.blocks_x, 3);
        }
      }
    }
  }
}

// A [batch, heads, rows, head_dim] tensor's element strides, dense.
std::array<std::int64_t, 3> dense_strides(std::int64_t heads, std::int64_t rows,
                                          std::int64_t head_dim) {
  return {heads * rows * head_dim, rows * head_dim, head_dim};
}

constexpr std::uintptr_t k_aligned = 0x10000;  // an address on a 16-byte boundary

TEST(launch_shapes, attention_wgmma_fits_16_bit_rows_of_16_byte_pieces_on_sm90_alone) {
  const auto dense = dense_strides(12, 128, 64);
  const auto fits = [&](bool built, int major, int minor, std::size_t bytes, std::int64_t d,
                        std::array<std::int64_t, 3> q, std::array<std::int64_t, 3> k,
                        std::array<std::int64_t, 3> v, std::uintptr_t qa = k_aligned,
                        std::uintptr_t ka = k_aligned, std::uintptr_t va = k_aligned) {
    return attention_wgmma_fits(built, major, minor, bytes, d, q, k, v, qa, ka, va);
  };
  EXPECT_TRUE(fits(true, 9, 0, 2, 64, dense, dense, dense));
  const auto wide = dense_strides(12, 128, 128);
  EXPECT_TRUE(fits(true, 9, 0, 2, 128, wide, wide, wide));
  // Head dims of whole 16-byte pieces below 64 and 128 (columns zero-filled): 8, 40, 80, 96.
  for (const std::int64_t d : {8, 40, 80, 96}) {
    const auto s = dense_strides(3, 7, d);
    EXPECT_TRUE(fits(true, 9, 0, 2, d, s, s, s)) << d;
  }
  // Broadcast K and V (batch or head stride 0), and the QKV projection's views: heads 64
  // elements apart in rows of 3 x 12 x 64.
  EXPECT_TRUE(fits(true, 9, 0, 2, 64, dense, {0, 128 * 64, 64}, {128 * 64, 0, 64}));
  const std::array<std::int64_t, 3> view = {128 * 3 * 768, 64, 3 * 768};
  EXPECT_TRUE(
      fits(true, 9, 0, 2, 64, view, view, view, k_aligned, k_aligned + 1536, k_aligned + 3072));
  // Not built (no sm_90 among the architectures), not compute capability 9.0 (sm_90a code runs
  // there alone), float32.
  EXPECT_FALSE(fits(false, 9, 0, 2, 64, dense, dense, dense));
  EXPECT_FALSE(fits(true, 8, 0, 2, 64, dense, dense, dense));
  EXPECT_FALSE(fits(true, 10, 0, 2, 64, dense, dense, dense));
  EXPECT_FALSE(fits(true, 9, 1, 2, 64, dense, dense, dense));
  EXPECT_FALSE(fits(true, 9, 0, 4, 64, dense, dense, dense));
  // Head dims of no whole 16-byte pieces, or past 128.
  for (const std::int64_t d : {0, 4, 36, 100, 136, 256}) {
    const auto s = dense_strides(3, 7, d);
    EXPECT_FALSE(fits(true, 9, 0, 2, d, s, s, s)) << d;
  }
  // A stride of q, k or v off the 16-byte pieces (batch, head or row), or a misaligned address.
  EXPECT_FALSE(fits(true, 9, 0, 2, 64, {12 * 128 * 64, 128 * 64, 68}, dense, dense));
  EXPECT_FALSE(fits(true, 9, 0, 2, 64, dense, {12 * 128 * 64 + 4, 128 * 64, 64}, dense));
  EXPECT_FALSE(fits(true, 9, 0, 2, 64, dense, dense, {12 * 128 * 64, 128 * 64 + 2, 64}));
  EXPECT_FALSE(fits(true, 9, 0, 2, 64, dense, dense, dense, k_aligned + 8));
  EXPECT_FALSE(fits(true, 9, 0, 2, 64, dense, dense, dense, k_aligned, k_aligned + 2));
  EXPECT_FALSE(fits(true, 9, 0, 2, 64, dense, dense, dense, k_aligned, k_aligned, k_aligned + 4));
}

// "wgmma" (Step A: each product waited for), "wgmma_overlap" (Step B: the softmax under the
// last tile's product with V) and "wgmma64" (Step A on 64-key tiles) take the same blocks, each
// its own kernel.
TEST(launch_shapes, attention_takes_wgmma_forced_where_it_fits) {
  for (const auto& [forced, kernel] :
       {std::pair<const char*, attention_kernel>{"wgmma", attention_kernel::wgmma_rows128},
        {"wgmma_overlap", attention_kernel::wgmma_overlap_rows128},
        {"wgmma64", attention_kernel::wgmma_keys64_rows128}}) {
    // Forced where it fits: 128-row blocks, whatever the default would take.
    for (const auto& [bh, s] : {std::pair<std::int64_t, std::int64_t>{12, 128},
                                {12, 1024},
                                {96, 1024},
                                {384, 197},
                                {3, 2},
                                {3, 129}}) {
      const auto l = plan_attention(bh, s, s, true, k_h200_sms, forced, false, true);
      EXPECT_EQ(l.kernel, kernel) << forced << " " << bh << " " << s;
      EXPECT_EQ(l.blocks_x, bh);
      EXPECT_EQ(l.blocks_y, (s + 127) / 128) << forced << " " << bh << " " << s;
      // Forced where it does not fit: the kernel the default picks.
      EXPECT_EQ(plan_attention(bh, s, s, true, k_h200_sms, forced, false, false).kernel,
                plan_attention(bh, s, s, true, k_h200_sms, "").kernel)
          << forced << " " << bh << " " << s;
    }
    // Float32, no sm_90 (or bias or mask steps past the tensor-core kernels'), decode: the
    // kernels that run there, whatever wgmma_fits says.
    EXPECT_EQ(plan_attention(96, 1024, 1024, true, k_h200_sms, forced, true, true).kernel,
              attention_kernel::tf32x3_rows64)
        << forced;
    EXPECT_EQ(plan_attention(12, 128, 128, false, k_h200_sms, forced, false, true).kernel,
              attention_kernel::fma_tiled32)
        << forced;
    EXPECT_EQ(plan_attention(12, 1, 1024, true, k_h200_sms, forced, false, true).kernel,
              attention_kernel::decode_split)
        << forced;
  }
}

// Not forced, wgmma is picked where it fits and its 128-row blocks are at least twice the SMs
// (where it led the mma kernels on an H100); "mma", "halves" and "split_keys" keep theirs.
TEST(launch_shapes, attention_picks_wgmma_where_its_blocks_are_many) {
  // GPT-2 8 x 1024 (96 x 8 = 768 blocks of 128 rows), BERT 32 x 128 (384), ViT 32 x 197 (768),
  // and 264 blocks exactly: twice the H200's 132 SMs.
  for (const auto& [bh, s] : {std::pair<std::int64_t, std::int64_t>{96, 1024},
                              {384, 128},
                              {384, 197},
                              {264, 128},
                              {132, 129}}) {
    const auto l = plan_attention(bh, s, s, true, k_h200_sms, "", false, true);
    EXPECT_EQ(l.kernel, attention_kernel::wgmma_rows128) << bh << " " << s;
    EXPECT_EQ(l.blocks_y, (s + 127) / 128) << bh << " " << s;
    // Where it does not fit (another GPU, a head dim or layout it cannot read), the mma kernels.
    EXPECT_EQ(plan_attention(bh, s, s, true, k_h200_sms, "", false, false).kernel,
              attention_kernel::mma_rows64)
        << bh << " " << s;
    // Forcing an mma kernel keeps it; another name picks as "" does.
    EXPECT_EQ(plan_attention(bh, s, s, true, k_h200_sms, "mma", false, true).kernel,
              attention_kernel::mma_rows64);
    EXPECT_EQ(plan_attention(bh, s, s, true, k_h200_sms, "halves", false, true).kernel,
              attention_kernel::mma_halves);
    EXPECT_EQ(plan_attention(bh, s, s, true, k_h200_sms, "decode_scalar", false, true).kernel,
              attention_kernel::wgmma_rows128);
    // At a head dim of 64 or less (two blocks an SM) on 64-key tiles; "wgmma" keeps 128 keys,
    // "wgmma64" takes 64 at any head dim; the mma kernels forced stay.
    EXPECT_EQ(plan_attention(bh, s, s, true, k_h200_sms, "", false, true, true).kernel,
              attention_kernel::wgmma_keys64_rows128);
    EXPECT_EQ(plan_attention(bh, s, s, true, k_h200_sms, "wgmma", false, true, true).kernel,
              attention_kernel::wgmma_rows128);
    EXPECT_EQ(plan_attention(bh, s, s, true, k_h200_sms, "wgmma64", false, true, false).kernel,
              attention_kernel::wgmma_keys64_rows128);
    EXPECT_EQ(plan_attention(bh, s, s, true, k_h200_sms, "wgmma_overlap", false, true, true).kernel,
              attention_kernel::wgmma_overlap_rows128);
    EXPECT_EQ(plan_attention(bh, s, s, true, k_h200_sms, "mma", false, true, true).kernel,
              attention_kernel::mma_rows64);
    EXPECT_EQ(plan_attention(bh, s, s, true, k_h200_sms, "", false, false, true).kernel,
              attention_kernel::mma_rows64);
  }
  // Fewer blocks: GPT-2 8 x 128 (96), 1 x 1024 (96), batch 1 at 128 and 197 tokens (12, 24),
  // and one block short of twice the SMs.
  for (const auto& [bh, s] : {std::pair<std::int64_t, std::int64_t>{96, 128},
                              {12, 1024},
                              {12, 128},
                              {12, 197},
                              {263, 128}}) {
    EXPECT_EQ(plan_attention(bh, s, s, true, k_h200_sms, "", false, true).kernel,
              plan_attention(bh, s, s, true, k_h200_sms, "", false, false).kernel)
        << bh << " " << s;
    EXPECT_EQ(plan_attention(bh, s, s, true, k_h200_sms, "", false, true, true).kernel,
              plan_attention(bh, s, s, true, k_h200_sms, "", false, false).kernel)
        << bh << " " << s;
  }
  // On a GPU of fewer SMs the same grid counts as many: 96 blocks over 48 SMs.
  EXPECT_EQ(plan_attention(96, 128, 128, true, 48, "", false, true).kernel,
            attention_kernel::wgmma_rows128);
}

TEST(launch_shapes, attention_decode_splits_the_keys_over_blocks) {
  // One query row: chunks of keys halved from 256 until 264 blocks (or 32 keys).
  auto l = plan_attention(12, 1, 129, true, k_h200_sms, "");
  EXPECT_EQ(l.kernel, attention_kernel::decode_split);
  EXPECT_EQ(l.chunk, 32);
  EXPECT_EQ(l.blocks_y, 5);
  l = plan_attention(96, 1, 1024, true, k_h200_sms, "mma");
  EXPECT_EQ(l.kernel, attention_kernel::decode_split);
  EXPECT_EQ(l.chunk, 256);  // 96 x 4 = 384 blocks
  EXPECT_EQ(l.blocks_y, 4);
  for (const std::int64_t sk : {1, 31, 32, 33, 255, 256, 257, 5000}) {
    l = plan_attention(2, 1, sk, false, k_h200_sms, "");
    EXPECT_GE(l.blocks_y * l.chunk, sk);
    EXPECT_LT((l.blocks_y - 1) * l.chunk, sk);
  }
}

TEST(launch_shapes, attention_decode_merges_in_a_cluster_on_sm90_where_the_grid_is_small) {
  const auto cluster_chunk = [](std::int64_t batch_heads, std::int64_t sk, bool sm90,
                                std::string_view forced) {
    const attention_launch l = plan_attention(batch_heads, 1, sk, sm90, k_h200_sms, "");
    return attention_decode_cluster_chunk(batch_heads, sk, l.chunk, sm90, k_h200_sms, forced);
  };
  // The grids measured on an H100 (132 SMs): GPT-2 at batch 1 after 128 keys, the plan's 5
  // chunks of 32 (60 blocks); at batch 1 after 1,024, 7 of 160 where the plan had 33 of 32
  // (84 blocks); at batch 4 after 256, 5 of 64 where it had 9 of 32 (240 blocks): clustered.
  EXPECT_EQ(cluster_chunk(12, 129, true, ""), 32);
  EXPECT_EQ(cluster_chunk(12, 1025, true, ""), 160);
  EXPECT_EQ(cluster_chunk(48, 257, true, ""), 64);
  // At batch 8 after 1,024 keys the plan's 5 chunks of 256 make 480 blocks, more than two an
  // SM: the merge kernel, unless forced.
  EXPECT_EQ(cluster_chunk(96, 1025, true, ""), 0);
  EXPECT_EQ(cluster_chunk(96, 1025, true, "decode_cluster"), 256);
  // The bound itself: 264 blocks cluster on 132 SMs, 265 don't.
  EXPECT_EQ(attention_decode_cluster_chunk(264, 32, 32, true, k_h200_sms, ""), 32);
  EXPECT_EQ(attention_decode_cluster_chunk(265, 32, 32, true, k_h200_sms, ""), 0);
  // More than 8 of the plan's chunks: the fewest 32-key steps that make at most 8. 15 heads
  // after 1,000 keys: 32 chunks of 32 planned, 8 of 128 clustered (1,001 / 8 = 125.1).
  EXPECT_EQ(plan_attention(15, 1, 1001, true, k_h200_sms, "").blocks_y, 32);
  EXPECT_EQ(cluster_chunk(15, 1001, true, "decode_cluster"), 128);
  for (const std::int64_t sk : {1, 2, 33, 129, 1001, 4097, 8192}) {
    const std::int64_t chunk = cluster_chunk(12, sk, true, "decode_cluster");
    ASSERT_GT(chunk, 0) << sk;
    EXPECT_LE((sk + chunk - 1) / chunk, k_attention_max_cluster) << sk;
    EXPECT_LE(chunk, k_attention_max_cluster_chunk) << sk;
    EXPECT_EQ(cluster_chunk(12, sk, true, ""), chunk) << sk;  // 12 x at most 8 blocks: small
    EXPECT_EQ(cluster_chunk(12, sk, false, "decode_cluster"), 0) << sk;  // sm_90's alone
    EXPECT_EQ(cluster_chunk(12, sk, true, "decode_scalar"), 0) << sk;
    EXPECT_EQ(cluster_chunk(12, sk, true, "decode_vector"), 0) << sk;
  }
  // Past 8 chunks of 1,024 keys: the merge kernel, forced or not.
  EXPECT_EQ(cluster_chunk(12, 8193, true, "decode_cluster"), 0);
  EXPECT_EQ(cluster_chunk(12, 8193, true, ""), 0);
  EXPECT_EQ(attention_decode_cluster_chunk(12, 0, 32, true, k_h200_sms, "decode_cluster"), 0);
}

TEST(launch_shapes, attention_decode_reads_16_bytes_where_the_layout_allows) {
  const std::int64_t dense[3] = {12 * 129 * 64, 129 * 64, 64};  // [B, H, Sk, 64]
  constexpr std::uintptr_t aligned = 0x7f0000001000;
  EXPECT_TRUE(attention_decode_vector_fits(64, 2, dense, dense, aligned, aligned + 256));
  EXPECT_TRUE(attention_decode_vector_fits(64, 4, dense, dense, aligned, aligned));
  // Head dims in whole pieces: 8 elements of a 16-bit dtype, 4 of float32.
  const std::int64_t d40[3] = {5 * 40, 40, 40}, d36[3] = {5 * 36, 36, 36};
  EXPECT_TRUE(attention_decode_vector_fits(40, 2, d40, d40, aligned, aligned));
  EXPECT_FALSE(attention_decode_vector_fits(36, 2, d36, d36, aligned, aligned));
  EXPECT_TRUE(attention_decode_vector_fits(36, 4, d36, d36, aligned, aligned));
  // At most 32 pieces.
  const std::int64_t d256[3] = {256, 256, 256};
  EXPECT_TRUE(attention_decode_vector_fits(256, 2, d256, d256, aligned, aligned));
  EXPECT_FALSE(attention_decode_vector_fits(256, 4, d256, d256, aligned, aligned));
  // Q, K and V read in place from one [B, S, 3 x H x 36] projection: heads 72 bytes apart.
  const std::int64_t views[3] = {129 * 3 * 4 * 36, 36, 3 * 4 * 36};
  EXPECT_FALSE(attention_decode_vector_fits(36, 2, views, views, aligned, aligned));
  // A stride or an address off the 16-byte grid.
  for (int i = 0; i < 3; ++i) {
    std::int64_t off[3] = {dense[0], dense[1], dense[2]};
    off[i] += 4;
    EXPECT_FALSE(attention_decode_vector_fits(64, 2, off, dense, aligned, aligned)) << i;
    EXPECT_FALSE(attention_decode_vector_fits(64, 2, dense, off, aligned, aligned)) << i;
  }
  EXPECT_FALSE(attention_decode_vector_fits(64, 2, dense, dense, aligned + 8, aligned));
  EXPECT_FALSE(attention_decode_vector_fits(64, 2, dense, dense, aligned, aligned + 2));
}

// An elementwise launch's operands: dense strides of the output's shape
// broadcast from each operand's shape (aligned to the right, 1 where absent).
struct ew_case {
  std::vector<std::int64_t> shape;
  std::int64_t strides[k_ew_max_inputs][k_max_rank] = {};
  int operands = 0;

  ew_case(std::vector<std::int64_t> out, const std::vector<std::vector<std::int64_t>>& inputs)
      : shape(std::move(out)), operands(static_cast<int>(inputs.size())) {
    for (int k = 0; k < operands; ++k) {
      const auto& in = inputs[static_cast<std::size_t>(k)];
      const std::size_t lead = shape.size() - in.size();
      std::int64_t step = 1;
      for (std::size_t d = in.size(); d-- > 0;) {
        strides[k][lead + d] = in[d] == 1 ? 0 : step;
        step *= in[d];
      }
    }
  }
  ew_layout plan() const {
    return plan_elementwise(shape.data(), static_cast<int>(shape.size()), strides, operands);
  }
};

TEST(launch_shapes, elementwise_merges_dense_operands_to_one_dim) {
  const ew_layout l = ew_case({2, 1, 3, 17}, {{2, 1, 3, 17}, {2, 1, 3, 17}, {1}}).plan();
  EXPECT_EQ(l.rank, 1);
  EXPECT_EQ(l.shape[0], 102);
  EXPECT_EQ(l.stride[0][0], 1);
  EXPECT_EQ(l.stride[1][0], 1);
  EXPECT_EQ(l.stride[2][0], 0);  // a scalar
  EXPECT_TRUE(l.dense);
  EXPECT_TRUE(l.narrow);
  const ew_layout one = ew_case({1, 1}, {{1, 1}}).plan();
  EXPECT_EQ(one.rank, 0);
  EXPECT_EQ(one.count, 1);
  EXPECT_TRUE(one.dense);
}

TEST(launch_shapes, elementwise_keeps_the_dims_a_broadcast_needs) {
  // A row bias over [rows, n] (GPT-2's bias + GELU where the GEMM has no
  // epilogue): 2 dims, strides n, 1 and 0, 1.
  ew_layout l = ew_case({128, 3072}, {{128, 3072}, {3072}}).plan();
  EXPECT_EQ(l.rank, 2);
  EXPECT_FALSE(l.dense);
  EXPECT_TRUE(l.narrow);
  EXPECT_EQ(l.stride[0][0], 3072);
  EXPECT_EQ(l.stride[1][0], 0);
  // [4, 3, 17] with an input of [4, 1, 17]: 3 dims; leading 1s dropped.
  l = ew_case({1, 4, 3, 17}, {{1, 4, 3, 17}, {4, 1, 17}}).plan();
  EXPECT_EQ(l.rank, 3);
  EXPECT_EQ(l.shape[0], 4);
  // A column broadcast [5, 1] over [5, 33]: 2 dims.
  EXPECT_EQ(ew_case({5, 33}, {{5, 33}, {5, 1}}).plan().rank, 2);
}

TEST(launch_shapes, elementwise_index_math_is_64_bit_past_2_to_the_31) {
  EXPECT_FALSE(ew_case({65536, 32768}, {{65536, 32768}}).plan().narrow);  // 2^31 elements
  EXPECT_TRUE(ew_case({65536, 32767}, {{65536, 32767}}).plan().narrow);
  // An operand reaching past 2^31 elements though the output does not.
  ew_case c({2, 2}, {{2, 2}});
  c.strides[0][0] = std::int64_t{1} << 31;
  EXPECT_FALSE(c.plan().narrow);
}

// The offsets of every element through the merged layout, in 32 and 64
// bits, equal the sums of coordinates times the original strides.
TEST(launch_shapes, elementwise_offsets_match_the_unmerged_strides) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> rank_of(1, 5), extent(1, 5), coin(0, 2);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<std::int64_t> shape(static_cast<std::size_t>(rank_of(rng)));
    for (auto& d : shape) d = extent(rng);
    std::vector<std::vector<std::int64_t>> inputs;
    for (int k = 0; k < 3; ++k) {  // each dim kept, broadcast (1) or dropped from the left
      std::vector<std::int64_t> in;
      for (std::size_t d = static_cast<std::size_t>(coin(rng)) % shape.size(); d < shape.size();
           ++d) {
        in.push_back(coin(rng) == 0 ? 1 : shape[d]);
      }
      if (in.empty()) in.push_back(1);
      inputs.push_back(in);
    }
    const ew_case c(shape, inputs);
    const ew_layout l = c.plan();
    ASSERT_LE(l.rank, static_cast<int>(shape.size()));
    for (std::int64_t i = 0; i < l.count; ++i) {
      std::int64_t want[k_ew_max_inputs] = {}, rest = i;
      for (std::size_t d = shape.size(); d-- > 0;) {
        for (int k = 0; k < c.operands; ++k) want[k] += rest % shape[d] * c.strides[k][d];
        rest /= shape[d];
      }
      std::uint32_t narrow[k_ew_max_inputs];
      std::int64_t wide[k_ew_max_inputs];
      ew_offsets<std::uint32_t>(l.rank, l.shape, l.stride, static_cast<std::uint32_t>(i), narrow);
      ew_offsets<std::int64_t>(l.rank, l.shape, l.stride, i, wide);
      for (int k = 0; k < c.operands; ++k) {
        ASSERT_EQ(wide[k], want[k]) << "trial " << trial << " element " << i << " operand " << k;
        ASSERT_EQ(narrow[k], static_cast<std::uint32_t>(want[k])) << trial;
        // The dense kernel's offsets: i or 0 by the one stride.
        if (l.dense) {
          ASSERT_EQ(l.rank == 1 && l.stride[k][0] != 0 ? i : 0, want[k]) << trial;
        }
      }
    }
  }
}

// One part of a row as the kernels' online softmax leaves it after its
// tiles of keys (8 keys a tile here): the running maximum, the sum and the
// output rescaled at each tile, a tile's base 0 while every score is -inf.
struct part_state {
  float peak = -std::numeric_limits<float>::infinity(), total = 0, acc = 0;
};

part_state online(const std::vector<float>& s, const std::vector<float>& v, std::size_t from,
                  std::size_t to) {
  part_state p;
  for (std::size_t t0 = from; t0 < to; t0 += 8) {
    const std::size_t t1 = std::min(to, t0 + 8);
    float tile_peak = -std::numeric_limits<float>::infinity();
    for (std::size_t j = t0; j < t1; ++j) tile_peak = std::max(tile_peak, s[j]);
    const float next = std::max(p.peak, tile_peak);
    const float base = std::isinf(next) && next < 0 ? 0.0F : next;
    const float rescale = std::exp(p.peak - base);
    float tile_total = 0, tile_acc = 0;
    for (std::size_t j = t0; j < t1; ++j) {
      tile_total += std::exp(s[j] - base);
      tile_acc += std::exp(s[j] - base) * v[j];
    }
    p.total = p.total * rescale + tile_total;
    p.acc = p.acc * rescale + tile_acc;
    p.peak = next;
  }
  return p;
}

// Rows of 0 to 64 keys split over 4 parts as split_keys_kernel splits them
// (tiles w, w + 4, ... of 8 keys here), scores with whole parts hidden (-inf)
// and whole rows hidden: the merge equals softmax(s) v, and a hidden row
// sums to 0 (finish() then makes it NaN or 0, as the unfused graph does).
TEST(launch_shapes, attention_merges_split_keys_like_one_softmax) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0, 3);
  std::uniform_int_distribution<int> keys_of(0, 64), hide(0, 5);
  for (int trial = 0; trial < 500; ++trial) {
    const auto keys = static_cast<std::size_t>(keys_of(rng));
    const int hidden = hide(rng);  // 0: none; 1: the first half; 2: all; else some
    std::vector<float> s(keys), v(keys);
    for (std::size_t j = 0; j < keys; ++j) {
      s[j] = normal(rng), v[j] = normal(rng);
      if ((hidden == 1 && j < keys / 2) || hidden == 2 || (hidden > 2 && rng() % 3 == 0)) {
        s[j] = -inf;
      }
    }
    float peaks[4], totals[4], accs[4];
    for (std::size_t w = 0; w < 4; ++w) {
      part_state p;
      for (std::size_t t0 = w * 8; t0 < keys; t0 += 32) {  // this part's tiles, in turn
        const part_state tile = online(s, v, t0, std::min(keys, t0 + 8));
        const float next = std::max(p.peak, tile.peak);
        const float base = std::isinf(next) && next < 0 ? 0.0F : next;
        const float tile_base = std::isinf(tile.peak) && tile.peak < 0 ? 0.0F : tile.peak;
        p.total = p.total * std::exp(p.peak - base) + tile.total * std::exp(tile_base - base);
        p.acc = p.acc * std::exp(p.peak - base) + tile.acc * std::exp(tile_base - base);
        p.peak = next;
      }
      peaks[w] = p.peak, totals[w] = p.total, accs[w] = p.acc;
    }
    struct {
      float total, acc;
    } m{totals[0], accs[0]};  // warp 0 merges the others in turn, as the kernel does
    float merged_peak = peaks[0];
    for (std::size_t w = 1; w < 4; ++w) {
      const merge_weights weight = merge_into(merged_peak, m.total, peaks[w], totals[w],
                                              [](float x) { return std::exp(x); });
      m.acc = m.acc * weight.mine + accs[w] * weight.theirs;
    }
    double peak = -inf, total = 0, acc = 0;
    for (const float x : s) peak = std::max(peak, static_cast<double>(x));
    for (std::size_t j = 0; j < keys; ++j) {
      if (std::isinf(s[j])) continue;
      total += std::exp(s[j] - peak);
      acc += std::exp(s[j] - peak) * v[j];
    }
    if (total == 0) {
      EXPECT_EQ(m.total, 0.0F) << trial;  // a hidden row (or no keys)
      EXPECT_EQ(m.acc, 0.0F) << trial;
      continue;
    }
    EXPECT_NEAR(m.acc / m.total, acc / total, 1e-5 * (1 + std::abs(acc / total))) << trial;
  }
}

// What concat_kernel does with a plan, piece by piece, on host bytes.
std::vector<unsigned char> run_concat(const concat_launch& l,
                                      const std::vector<std::vector<unsigned char>>& parts,
                                      const std::vector<std::size_t>& kept) {
  std::vector<unsigned char> out(static_cast<std::size_t>(l.count * l.chunk));
  for (std::int64_t i = 0; i < l.count; ++i) {
    int p = 0;
    const std::int64_t from = concat_source(l, i, p) * l.chunk;
    std::copy_n(parts[kept[static_cast<std::size_t>(p)]].begin() + from, l.chunk,
                out.begin() + i * l.chunk);
  }
  return out;
}

TEST(launch_shapes, concat_in_one_launch_matches_a_concat) {
  std::mt19937 rng(7);
  struct problem {
    std::int64_t outer;
    std::vector<std::int64_t> row_bytes;
    std::uintptr_t address;         // every part's and the output's
    std::uintptr_t second_address;  // the second part's, where it differs
    int chunk;
  };
  const problem problems[] = {
      {12, {128 * 64 * 2, 64 * 2}, 256, 256, 16},    // a decode step's key cache, float16
      {2, {3 * 4 * 4, 0, 5 * 4 * 4}, 256, 256, 16},  // the parity test's Concat, an empty part
      {3, {6, 10, 2}, 256, 256, 2},                  // float16 rows of 3, 5 and 1
      {4, {16, 16}, 264, 264, 8},                    // aligned rows at an 8-byte address
      {4, {16, 16, 32}, 256, 260, 4},                // one part less aligned than the rest
      {5, {3, 1, 7}, 256, 256, 1},                   // bytes (boolean)
  };
  for (const problem& pb : problems) {
    std::vector<std::vector<unsigned char>> parts;
    std::vector<unsigned char> expected;
    for (const auto bytes : pb.row_bytes) {
      parts.emplace_back(static_cast<std::size_t>(pb.outer * bytes));
      for (auto& b : parts.back()) b = static_cast<unsigned char>(rng());
    }
    for (std::int64_t r = 0; r < pb.outer; ++r) {
      for (std::size_t p = 0; p < parts.size(); ++p) {
        const auto begin = parts[p].begin() + r * pb.row_bytes[p];
        expected.insert(expected.end(), begin, begin + pb.row_bytes[p]);
      }
    }
    std::vector<std::uintptr_t> addresses(pb.row_bytes.size() + 1, pb.address);
    addresses[1] = pb.second_address;
    std::vector<std::size_t> kept;
    const auto l = plan_concat(pb.outer, pb.row_bytes, addresses, kept);
    ASSERT_TRUE(l.has_value());
    EXPECT_EQ(l->chunk, pb.chunk);
    EXPECT_EQ(run_concat(*l, parts, kept), expected);
  }
}

TEST(launch_shapes, concat_of_many_parts_or_none_takes_a_copy_each) {
  std::vector<std::size_t> kept;
  const std::vector<std::int64_t> nine(9, 16);
  const std::vector<std::uintptr_t> addresses(10, 256);
  EXPECT_FALSE(plan_concat(2, nine, addresses, kept).has_value());
  // Nine parts of which one is empty fit the launch's eight.
  std::vector<std::int64_t> eight_and_empty(9, 16);
  eight_and_empty[4] = 0;
  const auto l = plan_concat(2, eight_and_empty, addresses, kept);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->parts, 8);
  EXPECT_EQ(kept.size(), 8U);
  EXPECT_EQ(kept[4], 5U);
  const std::vector<std::int64_t> empty(3, 0);
  EXPECT_FALSE(plan_concat(2, empty, addresses, kept).has_value());
}

}  // namespace
}  // namespace coolbench::engine::cuda
