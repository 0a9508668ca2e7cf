// The CUDA kernels' launch shapes (engine/backends/cuda/launch_shapes.hpp)
// on the CPU: which kernel a problem takes, the vector width, the registers
// a lane holds and the grid, for the shapes of GPT-2, BERT and ViT and for
// the edges (widths no multiple of the vector, misaligned pointers, the
// widest row of the warp kernel).
#include <gtest/gtest.h>

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
    case attention_kernel::fma_rows32: return 32;
    case attention_kernel::mma_rows64: return 64;
    case attention_kernel::mma_split_keys: return 16;
    case attention_kernel::decode_split: break;
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
  // Enough blocks of 64 rows: GPT-2 at batch 8 or 1024 tokens, BERT and ViT at batch 32.
  for (const auto& [bh, s] :
       {std::pair<std::int64_t, std::int64_t>{96, 128}, {12, 1024}, {384, 128}, {384, 197}}) {
    l = plan_attention(bh, s, s, true, k_h200_sms, "");
    EXPECT_EQ(l.kernel, attention_kernel::mma_rows64) << bh << " " << s;
    EXPECT_EQ(l.blocks_y, (s + 63) / 64);
  }
}

TEST(launch_shapes, attention_takes_the_kernel_forced_or_the_only_one_that_runs) {
  EXPECT_EQ(plan_attention(12, 128, 128, false, k_h200_sms, "").kernel,
            attention_kernel::fma_rows32);  // float32, or no sm_90
  EXPECT_EQ(plan_attention(12, 128, 128, true, k_h200_sms, "fma").kernel,
            attention_kernel::fma_rows32);
  EXPECT_EQ(plan_attention(12, 128, 128, true, k_h200_sms, "mma").kernel,
            attention_kernel::mma_rows64);
  EXPECT_EQ(plan_attention(384, 128, 128, true, k_h200_sms, "split_keys").kernel,
            attention_kernel::mma_split_keys);
  EXPECT_EQ(plan_attention(12, 128, 128, false, k_h200_sms, "split_keys").kernel,
            attention_kernel::fma_rows32);
  // More 16-row tiles than a grid's y dimension holds: 64-row tiles.
  EXPECT_EQ(plan_attention(1, std::int64_t{1} << 21, 8, true, k_h200_sms, "split_keys").kernel,
            attention_kernel::mma_rows64);
}

TEST(launch_shapes, attention_grids_cover_every_query_row_once) {
  for (const char* forced : {"", "fma", "mma", "split_keys"}) {
    for (const bool tensor_cores : {false, true}) {
      for (const std::int64_t sq : {2, 7, 16, 17, 64, 65, 128, 197, 1024}) {
        const auto l = plan_attention(3, sq, sq, tensor_cores, k_h200_sms, forced);
        const std::int64_t rows = rows_of(l.kernel);
        EXPECT_GE(l.blocks_y * rows, sq) << forced << " " << sq;
        EXPECT_LT((l.blocks_y - 1) * rows, sq) << forced << " " << sq;
        EXPECT_EQ(l.blocks_x, 3);
      }
    }
  }
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

}  // namespace
}  // namespace coolbench::engine::cuda
