// The CUDA backend's host-side product decisions (gemm_choice.hpp), on the
// CPU: which rows break cuBLASLt's 16-byte alignment and how far the
// lm_head's output is padded, pointer alignment, the overlap that makes
// timing write a scratch block, and which timed candidate wins.
#include <gtest/gtest.h>

#include <vector>

#include "engine/backends/cuda/gemm_choice.hpp"

namespace coolbench::engine::cuda {
namespace {

TEST(GemmChoice, RowAlignment) {
  EXPECT_FALSE(rows_aligned(50257, 2));  // GPT-2's vocabulary in fp16
  EXPECT_TRUE(rows_aligned(768, 2));
  EXPECT_TRUE(rows_aligned(8, 2));
  EXPECT_FALSE(rows_aligned(6, 4));
  EXPECT_TRUE(rows_aligned(4, 4));
  EXPECT_EQ(aligned_columns(50257, 2), 50264);
  EXPECT_EQ(aligned_columns(13, 4), 16);
  EXPECT_EQ(aligned_columns(6, 4), 8);
  EXPECT_EQ(aligned_columns(16, 2), 16);
  EXPECT_EQ(aligned_columns(1, 2), 8);
}

TEST(GemmChoice, AddressAlignment) {
  const auto at = [](std::uintptr_t address) {
    return address_alignment(reinterpret_cast<const void*>(address));  // NOLINT: an address
  };
  EXPECT_EQ(address_alignment(nullptr), 256U);
  EXPECT_EQ(at(0x10000), 256U);
  EXPECT_EQ(at(0x10080), 128U);
  EXPECT_EQ(at(0x10010), 16U);
  EXPECT_EQ(at(0x10002), 2U);
  EXPECT_EQ(at(0x10001), 1U);
}

TEST(GemmChoice, PaddedOutputOnlyWhereItMakesTheProductAligned) {
  // The built-in lm_head (Gemm, transB: B's rows are K wide) and the exports'
  // after the aligned_weights pass (B padded to 50264).
  EXPECT_EQ(padded_output_columns(768, 768, 50257, 50257, 128, 1, 0, 2), 50264);
  EXPECT_EQ(padded_output_columns(768, 50264, 50257, 50257, 128, 1, 0, 2), 50264);
  // B's rows unaligned (an unpadded [768, 50257] weight): padding Y gains nothing.
  EXPECT_EQ(padded_output_columns(768, 50257, 50257, 50257, 128, 1, 0, 2), 0);
  // A's rows unaligned (odd K).
  EXPECT_EQ(padded_output_columns(33, 7, 7, 7, 10, 1, 0, 2), 0);
  // Y aligned already.
  EXPECT_EQ(padded_output_columns(768, 768, 2304, 2304, 128, 1, 0, 2), 0);
  // float32, N = 6: 24-byte rows; B padded to 8 by the aligned_weights pass.
  EXPECT_EQ(padded_output_columns(8, 8, 6, 6, 5, 1, 0, 4), 8);
  EXPECT_EQ(padded_output_columns(8, 6, 6, 6, 5, 1, 0, 4), 0);
  // Batched: dense Y across the batch only.
  EXPECT_EQ(padded_output_columns(8, 13, 13, 13, 3, 4, 39, 2), 0);  // ldb 13: B unaligned
  EXPECT_EQ(padded_output_columns(8, 8, 13, 13, 3, 4, 39, 2), 16);  // B transposed, rows of K
  EXPECT_EQ(padded_output_columns(8, 8, 13, 13, 3, 4, 40, 2), 0);
  // Y with rows of its own ld (already a strided view): left alone.
  EXPECT_EQ(padded_output_columns(8, 8, 15, 13, 3, 1, 0, 2), 0);
}

TEST(GemmChoice, AllPaddedColumnsComputedOnlyOverAPaddedWeightWithoutBias) {
  // The lm_head over wte padded to 50264 rows (transB) or a [768, 50264] copy.
  EXPECT_EQ(computed_columns(50257, 50264, 50264, false), 50264);
  // An unpadded B: its 50257 columns only.
  EXPECT_EQ(computed_columns(50257, 50264, 50257, false), 50257);
  EXPECT_EQ(computed_columns(50257, 50264, 0, false), 50257);
  // A bias vector holds N values: the epilogue would read past it.
  EXPECT_EQ(computed_columns(50257, 50264, 50264, true), 50257);
  // No scratch (0) or nothing to round: N.
  EXPECT_EQ(computed_columns(2304, 0, 2304, false), 2304);
  EXPECT_EQ(computed_columns(13, 16, 32, false), 16);
}

TEST(GemmChoice, OperandOverlap) {
  const auto* base = reinterpret_cast<const std::byte*>(std::uintptr_t{0x100000});  // NOLINT
  // Y [4, 8] fp16 and an A right after it: adjacent, no overlap.
  const byte_range y = matrix_bytes(base, 4, 8, 8, 1, 0, 2);
  EXPECT_EQ(y.end - y.begin, 64U);
  EXPECT_FALSE(overlaps(y, matrix_bytes(base + 64, 4, 8, 8, 1, 0, 2)));
  EXPECT_TRUE(overlaps(y, matrix_bytes(base + 62, 1, 1, 1, 1, 0, 2)));
  EXPECT_TRUE(overlaps(y, matrix_bytes(base, 1, 1, 1, 1, 0, 2)));  // in place
  // Rows ld apart and batches stride apart: the last element bounds it.
  const byte_range strided = matrix_bytes(base, 2, 3, 16, 2, 100, 4);
  EXPECT_EQ(strided.end - strided.begin, (100U + 16U + 3U) * 4U);
  // No operand (a bias left out) overlaps nothing.
  EXPECT_FALSE(overlaps(y, matrix_bytes(nullptr, 1, 8, 8, 1, 0, 2)));
}

TEST(GemmChoice, FastestCandidateByMedian) {
  EXPECT_DOUBLE_EQ(median_of({3.0, 1.0, 2.0}), 2.0);
  EXPECT_DOUBLE_EQ(median_of({4.0, 1.0, 2.0, 3.0}), 2.5);
  // One outlier does not move a median; a candidate that failed to launch is skipped.
  const std::vector<std::vector<double>> samples = {
      {0.020, 0.021, 0.020}, {}, {0.009, 0.500, 0.010}, {0.011, 0.011, 0.011}};
  EXPECT_EQ(fastest_candidate(samples), 2U);
  // A tie goes to the heuristic's earlier candidate.
  const std::vector<std::vector<double>> tie = {{0.5}, {0.5}, {0.7}};
  EXPECT_EQ(fastest_candidate(tie), 0U);
  const std::vector<std::vector<double>> none = {{}, {}};
  EXPECT_FALSE(fastest_candidate(none).has_value());
}

TEST(GemmChoice, SplitKOnlyWhereTheOutputLeavesMultiprocessorsIdle) {
  // GPT-2 small at batch 1 on 132 SMs: the MLP's second product (K = 3072)
  // and the QKV product (K = 768) get splits; each keeps >= 128 of K.
  EXPECT_EQ(split_k_counts(128, 768, 3072, 1, 132), (std::vector<int>{2, 3, 4, 6, 8, 12, 16}));
  EXPECT_EQ(split_k_counts(128, 2304, 768, 1, 132), (std::vector<int>{2, 3, 4, 6}));
  EXPECT_EQ(split_k_counts(128, 768, 200, 1, 132), (std::vector<int>{}));
  EXPECT_TRUE(split_k_counts(128, 768, 3072, 1, 0).empty());  // none wanted
  // The lm_head (393 tiles) and BERT at batch 32 (4096 x 768: 192 tiles)
  // already fill the GPU; a batch of small products counts every matrix.
  EXPECT_TRUE(split_k_counts(128, 50264, 768, 1, 132).empty());
  EXPECT_TRUE(split_k_counts(4096, 768, 768, 1, 132).empty());
  EXPECT_TRUE(split_k_counts(128, 128, 1024, 200, 132).empty());
  EXPECT_EQ(split_k_counts(128, 128, 512, 12, 132), (std::vector<int>{2, 3, 4}));
}

}  // namespace
}  // namespace coolbench::engine::cuda
