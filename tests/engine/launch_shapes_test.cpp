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

}  // namespace
}  // namespace coolbench::engine::cuda
