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

TEST(GemmChoice, RowPhasesOfTheLmHeadsLogits) {
  // GPT-2's logits in fp16: row r starts r x 2 bytes past a 16-byte step (modulo 16), so 8
  // phases; row 1's first whole step is at column 7 (element 50264), its last ends 2 short.
  EXPECT_EQ(aligned_run(0, 50257, 2).first_column, 0);
  EXPECT_EQ(aligned_run(0, 50257, 2).columns, 50256);
  EXPECT_EQ(aligned_run(1, 50257, 2).first_column, 7);
  EXPECT_EQ(aligned_run(1, 50257, 2).columns, 50248);
  EXPECT_EQ(aligned_run(9, 50257, 2).first_column, 7);  // row 9 is in row 1's phase
  const auto plan = plan_row_phases(8192, 50257, 2);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->phases, 8);
  ASSERT_EQ(plan->parts.size(), 8U);
  for (std::int64_t j = 0; j < 8; ++j) {
    EXPECT_EQ(plan->parts[j].first_row, j);
    EXPECT_EQ(plan->parts[j].rows, 1024);
    EXPECT_EQ(plan->parts[j].first_column, (8 - j) % 8);
  }
  // float32: 4 phases; an even N in fp16 (BERT's 30522: 61044-byte rows) 4 as well.
  EXPECT_EQ(plan_row_phases(8192, 50257, 4)->phases, 4);
  EXPECT_EQ(plan_row_phases(4096, 30522, 2)->phases, 4);
  EXPECT_EQ(plan_row_phases(4096, 30522, 4)->phases, 2);  // 122088-byte rows: 8 past a step
  // Fewer rows than phases: a part each; rows not a multiple of the phases: the first parts
  // take one more.
  EXPECT_EQ(plan_row_phases(3, 50257, 2)->parts.size(), 3U);
  const auto ten = plan_row_phases(10, 50257, 2);
  EXPECT_EQ(ten->parts[0].rows, 2);
  EXPECT_EQ(ten->parts[1].rows, 2);
  EXPECT_EQ(ten->parts[2].rows, 1);
  // Nothing to split: rows aligned already, or a row with no whole step after its first edge.
  EXPECT_FALSE(plan_row_phases(8192, 50264, 2).has_value());
  EXPECT_FALSE(plan_row_phases(8192, 7, 2).has_value());
  EXPECT_FALSE(plan_row_phases(8192, 9, 2).has_value());  // row 1: 7 columns, then 2
  EXPECT_FALSE(plan_row_phases(0, 50257, 2).has_value());
}

TEST(GemmChoice, RowPhasesAndEdgesCoverEveryElementOnceOnAlignedSteps) {
  // Every element of Y is written once, by one phase's product or by the edges' kernel, and
  // each phase's rows start its run on a 16-byte step (Y's address 16-byte aligned).
  for (const std::size_t element : {std::size_t{2}, std::size_t{4}}) {
    for (const std::int64_t n : {15, 17, 33, 50257, 1001, 30522, 6, 26}) {
      for (const std::int64_t m : {1, 5, 8, 13, 40}) {
        SCOPED_TRACE(std::to_string(element) + " bytes, " + std::to_string(m) + " x " +
                     std::to_string(n));
        const auto plan = plan_row_phases(m, n, element);
        if (!plan) {
          EXPECT_TRUE(rows_aligned(n, element) || n * static_cast<std::int64_t>(element) < 32);
          continue;
        }
        std::vector<int> written(static_cast<std::size_t>(m * n), 0);
        for (const row_phase& part : plan->parts) {
          EXPECT_EQ(part.columns % static_cast<std::int64_t>(16 / element), 0);
          for (std::int64_t i = 0; i < part.rows; ++i) {
            const std::int64_t row = part.first_row + i * plan->phases;
            ASSERT_LT(row, m);
            const std::int64_t start = row * n + part.first_column;
            EXPECT_EQ(start * static_cast<std::int64_t>(element) % 16, 0) << row;
            for (std::int64_t c = 0; c < part.columns; ++c) ++written[start + c];
          }
        }
        for (std::int64_t row = 0; row < m; ++row) {  // the edges' kernel's columns
          const row_run run = aligned_run(row, n, element);
          EXPECT_LT(run.first_column, static_cast<std::int64_t>(16 / element));
          EXPECT_LT(n - run.first_column - run.columns, static_cast<std::int64_t>(16 / element));
          for (std::int64_t c = 0; c < n; ++c) {
            if (c < run.first_column || c >= run.first_column + run.columns) {
              ++written[row * n + c];
            }
          }
        }
        for (std::size_t e = 0; e < written.size(); ++e) ASSERT_EQ(written[e], 1) << e;
      }
    }
  }
}

TEST(GemmChoice, RowPhaseProductsAndEdgesComputeTheWholeProduct) {
  // The products gemm_product.cpp queues (phase_product's offsets and leading dimensions, read
  // as cuBLASLt reads row-major operands) and the edges' columns (aligned_run), computed here
  // on small integers: together they give A Bᵀ exactly, and write nothing else. B's rows are
  // padded (ldb > K), as an aligned weight's are.
  for (const std::size_t element : {std::size_t{2}, std::size_t{4}}) {
    for (const std::int64_t n : {15, 26, 1001}) {
      for (const std::int64_t m : {1, 7, 29}) {
        SCOPED_TRACE(std::to_string(element) + " bytes, " + std::to_string(m) + " x " +
                     std::to_string(n));
        const std::int64_t k = 16, ldb = k + 8;
        std::vector<double> a(static_cast<std::size_t>(m * k)),
            b(static_cast<std::size_t>(n * ldb));
        for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<double>((i * 7 + 3) % 11) - 5;
        for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<double>((i * 5 + 1) % 13) - 6;
        const auto dot = [&](std::int64_t a_at, std::int64_t b_at) {
          double sum = 0;
          for (std::int64_t t = 0; t < k; ++t) sum += a[a_at + t] * b[b_at + t];
          return sum;
        };
        const double unwritten = 1e30;
        std::vector<double> y(static_cast<std::size_t>(m * n), unwritten);
        const auto plan = plan_row_phases(m, n, element);
        ASSERT_TRUE(plan.has_value());
        for (const row_phase& part : plan->parts) {
          const row_phase_product p = phase_product(*plan, part, n, k, ldb);
          for (std::int64_t i = 0; i < p.rows; ++i) {
            for (std::int64_t j = 0; j < p.columns; ++j) {
              double& out = y[p.y_offset + i * p.ldy + j];
              ASSERT_EQ(out, unwritten) << "written twice";
              out = dot(p.a_offset + i * p.lda, p.b_offset + j * ldb);
            }
          }
        }
        for (std::int64_t row = 0; row < m; ++row) {
          const row_run run = aligned_run(row, n, element);
          for (std::int64_t c = 0; c < n; ++c) {
            if (c >= run.first_column && c < run.first_column + run.columns) continue;
            ASSERT_EQ(y[row * n + c], unwritten) << "written twice";
            y[row * n + c] = dot(row * k, c * ldb);
          }
        }
        for (std::int64_t row = 0; row < m; ++row) {
          for (std::int64_t c = 0; c < n; ++c) {
            ASSERT_EQ(y[row * n + c], dot(row * k, c * ldb)) << row << ", " << c;
          }
        }
      }
    }
  }
}

TEST(GemmChoice, RowPhasesWhereEachPhaseHasManyRows) {
  // By size unless turned off; "1" by size too.
  EXPECT_EQ(row_phase_mode_from(nullptr), row_phase_mode::by_size);
  EXPECT_EQ(row_phase_mode_from("0"), row_phase_mode::off);
  EXPECT_EQ(row_phase_mode_from("yes"), row_phase_mode::off);
  EXPECT_EQ(row_phase_mode_from("1"), row_phase_mode::by_size);
  EXPECT_EQ(row_phase_mode_from("force"), row_phase_mode::forced);
  // GPT-2 at 8 x 1,024 tokens: 1,024 rows a phase; at 1 x 1,024 or 8 x 128, 128.
  EXPECT_TRUE(row_phases_wanted(row_phase_mode::by_size, 8192, 8));
  EXPECT_TRUE(row_phases_wanted(row_phase_mode::by_size, 4096, 8));
  EXPECT_FALSE(row_phases_wanted(row_phase_mode::by_size, 4095, 8));
  EXPECT_FALSE(row_phases_wanted(row_phase_mode::by_size, 1024, 8));
  EXPECT_TRUE(row_phases_wanted(row_phase_mode::by_size, 2048, 4));  // float32
  EXPECT_TRUE(row_phases_wanted(row_phase_mode::forced, 5, 8));
  EXPECT_FALSE(row_phases_wanted(row_phase_mode::off, 8192, 8));
}

}  // namespace
}  // namespace coolbench::engine::cuda
