// The skinny product's host-side plan (skinny_gemm.hpp), on the CPU: which
// products the kernel refuses (skinny_fits), and how it splits K (plan_skinny):
// every row of K in exactly one split, the grid within CUDA's limits and its
// shared memory within a launch's default 48 KiB, as many splits as fill the
// SMs with 2 blocks each, fewer where the workspace is short.
#include <gtest/gtest.h>

#include <cstdint>

#include "engine/backends/cuda/skinny_gemm.hpp"

namespace coolbench::engine::cuda {
namespace {

constexpr std::size_t k_workspace = std::size_t{32} << 20U;  // the backend's
constexpr int k_h100_sms = 132;

// GPT-2's decode product x[m, k] W[k, n] (or W [n, k] transposed), dense and aligned.
skinny_problem problem(dtype type, std::int64_t m, std::int64_t k, std::int64_t n,
                       bool trans_b = false) {
  return skinny_problem{.type = type,
                        .trans_b = trans_b,
                        .m = m,
                        .n = n,
                        .k = k,
                        .ldb = trans_b ? k : n,
                        .align_b = 256,
                        .workspace = k_workspace};
}

TEST(SkinnyPlan, ModeFromTheEnvironmentValue) {
  EXPECT_EQ(skinny_mode_from(nullptr), skinny_mode::off);
  EXPECT_EQ(skinny_mode_from(""), skinny_mode::off);
  EXPECT_EQ(skinny_mode_from("0"), skinny_mode::off);
  EXPECT_EQ(skinny_mode_from("1"), skinny_mode::timed);
  EXPECT_EQ(skinny_mode_from("force"), skinny_mode::forced);
  EXPECT_EQ(skinny_mode_from("yes"), skinny_mode::off);
}

TEST(SkinnyPlan, FitsGpt2DecodeProducts) {
  for (const dtype type : {dtype::float16, dtype::bfloat16, dtype::float32}) {
    for (const std::int64_t m : {1, 2, 5, 8}) {
      EXPECT_TRUE(skinny_fits(problem(type, m, 768, 2304)));
      EXPECT_TRUE(skinny_fits(problem(type, m, 768, 768)));
      EXPECT_TRUE(skinny_fits(problem(type, m, 768, 3072)));
      EXPECT_TRUE(skinny_fits(problem(type, m, 3072, 768)));
      EXPECT_TRUE(skinny_fits(problem(type, m, 768, 50264, true)));  // the padded lm_head
    }
  }
  // Odd K and N: the edges are read an element a load; W's rows stay aligned.
  EXPECT_TRUE(skinny_fits(problem(dtype::float16, 3, 100, 768)));
  EXPECT_TRUE(skinny_fits(problem(dtype::float16, 3, 768, 50257, true)));
  skinny_problem odd_n = problem(dtype::float16, 3, 64, 1001);
  odd_n.ldb = 1008;  // a weight padded to whole 16-byte rows
  EXPECT_TRUE(skinny_fits(odd_n));
  skinny_problem odd_k = problem(dtype::float16, 3, 100, 64, true);
  odd_k.ldb = 104;
  EXPECT_TRUE(skinny_fits(odd_k));
}

TEST(SkinnyPlan, Refusals) {
  const skinny_problem fits = problem(dtype::float16, 8, 768, 768);
  ASSERT_TRUE(skinny_fits(fits));
  skinny_problem p = fits;
  p.m = 9;  // past the register tile
  EXPECT_FALSE(skinny_fits(p));
  p.m = 0;
  EXPECT_FALSE(skinny_fits(p));
  p = fits;
  p.batch = 2;
  EXPECT_FALSE(skinny_fits(p));
  p = fits;
  p.trans_a = true;
  EXPECT_FALSE(skinny_fits(p));
  // W's rows off 16-byte boundaries: 2002-byte rows (fp16, N = 1001).
  p = problem(dtype::float16, 1, 64, 1001);
  EXPECT_FALSE(skinny_fits(p));
  p = problem(dtype::float32, 1, 64, 6);  // 24-byte rows
  EXPECT_FALSE(skinny_fits(p));
  p = problem(dtype::float16, 1, 100, 64, true);  // [N, K] with rows of 100 halves
  EXPECT_FALSE(skinny_fits(p));
  // W's address off 16 bytes.
  for (const std::uint32_t align : {1U, 2U, 4U, 8U}) {
    p = fits;
    p.align_b = align;
    EXPECT_FALSE(skinny_fits(p)) << align;
  }
  p = fits;
  p.align_b = 16;
  EXPECT_TRUE(skinny_fits(p));
  // A row stride under the row.
  p = fits;
  p.ldb = 760;
  EXPECT_FALSE(skinny_fits(p));
  // Types the kernel has no variant for.
  for (const dtype type : {dtype::int64, dtype::int32, dtype::boolean}) {
    p = fits;
    p.type = type;
    EXPECT_FALSE(skinny_fits(p)) << to_string(type);
  }
  // No workspace: K past one block's depth needs splits, so it does not fit; K within it does.
  p = problem(dtype::float16, 8, 3072, 768);
  p.workspace = 0;
  EXPECT_FALSE(skinny_fits(p));
  p = problem(dtype::float16, 8, 768, 768);
  p.workspace = 0;
  ASSERT_TRUE(skinny_fits(p));
  EXPECT_EQ(plan_skinny(p, k_h100_sms)->splits, 1);
}

// The plan's invariants for `p` on `sms` multiprocessors.
void expect_sound(const skinny_problem& p, int sms) {
  SCOPED_TRACE("m " + std::to_string(p.m) + " k " + std::to_string(p.k) + " n " +
               std::to_string(p.n) + (p.trans_b ? " transposed" : "") + " on " +
               std::to_string(sms) + " SMs");
  const auto plan = plan_skinny(p, sms);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->transposed, p.trans_b);
  EXPECT_GE(plan->rows, p.m);
  EXPECT_LE(plan->rows, 8);
  // Every row of K in exactly one split: splits of `depth`, the last one non-empty.
  ASSERT_GE(plan->splits, 1);
  EXPECT_GT(plan->depth, 0);
  EXPECT_LE(plan->depth, k_skinny_max_depth);
  EXPECT_EQ(plan->depth % 8, 0);  // whole 16-byte pieces of [N, K] rows
  EXPECT_GE(plan->splits * plan->depth, p.k);
  EXPECT_LT((plan->splits - 1) * plan->depth, p.k);
  std::int64_t covered = 0;
  for (std::int64_t s = 0; s < plan->splits; ++s) {
    const std::int64_t begin = s * plan->depth;
    const std::int64_t end = std::min(begin + plan->depth, p.k);
    EXPECT_LT(begin, end) << s;
    EXPECT_EQ(begin, covered) << s;
    covered = end;
  }
  EXPECT_EQ(covered, p.k);
  // Every output column in a tile; the grid within CUDA's limits.
  EXPECT_GE(plan->tiles * plan->tile, p.n);
  EXPECT_LT((plan->tiles - 1) * plan->tile, p.n);
  EXPECT_LE(plan->tiles, std::int64_t{0x7fffffff});
  EXPECT_LE(plan->splits, k_skinny_max_splits);
  if (plan->splits > 1) {
    EXPECT_LE(plan->tiles, k_skinny_counters);
    EXPECT_LE(plan->partial_bytes(), p.workspace);
  } else {
    EXPECT_EQ(plan->partial_bytes(), 0U);
  }
  EXPECT_LE(skinny_shared_bytes(*plan), std::size_t{48} << 10U);
  // Splits from the multiprocessors: the grid fills them at most once (2 blocks each), unless
  // the depth limit or the minimum depth of a split decides.
  const std::int64_t slots = std::int64_t{sms} * k_skinny_blocks_per_sm;
  if (plan->splits > (p.k + k_skinny_max_depth - 1) / k_skinny_max_depth) {
    EXPECT_LE(plan->tiles * plan->splits, slots);
  }
}

TEST(SkinnyPlan, SplitsCoverKOnceAndFillTheGpu) {
  for (const int sms : {1, 16, 78, 114, 132, 144}) {
    for (const dtype type : {dtype::float16, dtype::float32}) {
      for (const std::int64_t m : {1, 2, 5, 8}) {
        for (const std::int64_t k : {8, 64, 100, 768, 3072}) {
          for (const std::int64_t n : {8, 768, 2304, 3072}) {
            for (const bool trans_b : {false, true}) {
              const skinny_problem p = problem(type, m, k, n, trans_b);
              if (trans_b && !skinny_fits(p)) {
                EXPECT_EQ(k, 100);  // rows of 100 halves: 200 bytes
                EXPECT_EQ(type, dtype::float16);
                continue;
              }
              expect_sound(p, sms);
            }
          }
        }
        expect_sound(problem(type, m, 768, 50264, true), sms);
        expect_sound(problem(type, m, 100000, 64), sms);  // K past the depth limit
      }
    }
  }
}

TEST(SkinnyPlan, Gpt2SplitsOnAnH100) {
  // [K, N] fp16: 64-column tiles; 768 -> 768 has 12 of them, 22 splits would fill 264
  // slots, so 35 rows a split rounded up to 40: 20 splits of 40 rows.
  auto plan = plan_skinny(problem(dtype::float16, 1, 768, 768), k_h100_sms);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->tile, 64);
  EXPECT_EQ(plan->tiles, 12);
  EXPECT_EQ(plan->depth, 40);
  EXPECT_EQ(plan->splits, 20);
  // 768 -> 2304: 36 tiles x 7 splits of 112 rows.
  plan = plan_skinny(problem(dtype::float16, 8, 768, 2304), k_h100_sms);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->tiles, 36);
  EXPECT_EQ(plan->splits, 7);
  EXPECT_EQ(plan->depth, 112);
  // 3072 -> 768: 12 tiles x 22 splits of 144 rows (139.6 rounded up to 8s).
  plan = plan_skinny(problem(dtype::float16, 8, 3072, 768), k_h100_sms);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->tiles, 12);
  EXPECT_EQ(plan->depth, 144);
  EXPECT_EQ(plan->splits, 22);
  // The lm_head [50264, 768] at 8 rows: 64-row tiles (2 a lane group), already 786 of
  // them: K whole.
  plan = plan_skinny(problem(dtype::float16, 8, 768, 50264, true), k_h100_sms);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->tile, 64);
  EXPECT_EQ(plan->tiles, 786);
  EXPECT_EQ(plan->splits, 1);
  EXPECT_EQ(plan->partial_bytes(), 0U);
  // At 1 row, 4 rows a group: 128-row tiles.
  plan = plan_skinny(problem(dtype::float16, 1, 768, 50264, true), k_h100_sms);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->tile, 128);
  EXPECT_EQ(plan->rows, 1);
  // More multiprocessors, at least as many splits.
  const auto fewer = plan_skinny(problem(dtype::float16, 1, 3072, 768), 66);
  const auto more = plan_skinny(problem(dtype::float16, 1, 3072, 768), 132);
  ASSERT_TRUE(fewer && more);
  EXPECT_LT(fewer->splits, more->splits);
}

TEST(SkinnyPlan, AShortWorkspaceTakesFewerSplits) {
  skinny_problem p = problem(dtype::float16, 8, 3072, 768);
  const auto full = plan_skinny(p, k_h100_sms);
  ASSERT_TRUE(full);
  // Room for 5 splits' partial sums: 12 tiles x 8 rows x 64 columns x 4 bytes each.
  p.workspace = std::size_t{5} * 12 * 8 * 64 * 4;
  const auto short_plan = plan_skinny(p, k_h100_sms);
  ASSERT_TRUE(short_plan);
  EXPECT_LT(short_plan->splits, full->splits);
  EXPECT_LE(short_plan->partial_bytes(), p.workspace);
  EXPECT_EQ(short_plan->splits, 5);  // 3072 over 5: 614.4 rows, 616 in 8s
  expect_sound(p, k_h100_sms);
  // Room for fewer than the 3 splits the depth limit needs: refused.
  p.workspace = std::size_t{2} * 12 * 8 * 64 * 4;
  EXPECT_FALSE(skinny_fits(p));
}

TEST(SkinnyPlan, SplitK) {
  // 768 rows, 12 tiles, 264 slots: 22 splits wanted, 35 rows each, 40 in 8s: 20 splits.
  auto s = split_k(768, 12, 264, 8, 32);
  EXPECT_EQ(s.depth, 40);
  EXPECT_EQ(s.splits, 20);
  // The minimum depth wins over the slots.
  s = split_k(64, 1, 264, 8, 32);
  EXPECT_EQ(s.depth, 32);
  EXPECT_EQ(s.splits, 2);
  s = split_k(8, 1, 264, 8, 32);
  EXPECT_EQ(s.depth, 32);
  EXPECT_EQ(s.splits, 1);
  // The depth limit wins over a full GPU.
  s = split_k(100000, 1000, 264, 8, 32);
  EXPECT_EQ(s.depth, 1024);
  EXPECT_EQ(s.splits, 98);
}

}  // namespace
}  // namespace coolbench::engine::cuda
