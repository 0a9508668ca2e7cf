// The wgmma pieces of the Hopper attention kernel (engine/backends/cuda/
// wgmma.cuh) one at a time on the GPU against the host, in the order to
// debug them: the swizzled tile copy (cp.async only, no wgmma), the scores
// tile Q Kᵀ (both operands from shared memory: the K-major descriptor, its
// 32-byte k-steps, the accumulator layout, the second warpgroup's rows), and
// the product P V (P packed from accumulator registers, V read transposed:
// the MN-major descriptor, and at head dim 128 its leading byte offset), and
// both products in flight at once as two wgmma groups (attention_wgmma_overlap.cu's
// order), each in float16 and bfloat16 at head dims 64 and 128. The values are multiples
// of 1/8 in [-2, 2], exact in both dtypes, whose products and sums float32
// holds exactly: any difference is a layout's, and a failure names the
// element, the thread and the register that holds it. Needs a GPU of compute
// capability 9.0 (ctest label gpu); skips without one, saying why.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "coolbench/engine/tensor.hpp"
#include "engine/gpu_present.hpp"
#include "engine/wgmma_test_kernels.hpp"

namespace coolbench::engine {
namespace {

using wgmma_test::k_keys;
using wgmma_test::k_rows;

#define COOLBENCH_REQUIRE_SM90()                                                          \
  COOLBENCH_REQUIRE_GPU("the wgmma kernels (sm_90a)");                                    \
  if (const int cc = wgmma_test::compute_capability(); cc != 90)                          \
  GTEST_SKIP() << "the wgmma kernels are sm_90a code: they need compute capability 9.0, " \
               << "device 0 has " << cc / 10 << "." << cc % 10

std::uint16_t to_bits(float x, bool bf16) { return bf16 ? float_to_bfloat16(x) : float_to_half(x); }

// Multiples of 1/8 in [-2, 2]: exact in float16 and bfloat16.
std::vector<float> eighths(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> eighth(-16, 16);
  std::vector<float> x(n);
  for (float& v : x) v = static_cast<float>(eighth(rng)) / 8.0F;
  return x;
}

std::vector<std::uint16_t> bits_of(const std::vector<float>& x, bool bf16) {
  std::vector<std::uint16_t> b(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) b[i] = to_bits(x[i], bf16);
  return b;
}

// Who holds element (row, col) of a 128-row accumulator tile: the warpgroup, warp and lane, and
// the register d[j][e] (wgmma.cuh's layout).
std::string holder(int row, int col) {
  const int warpgroup = row / 64, warp = row % 64 / 16, g = row % 8, high = row % 16 / 8;
  std::ostringstream s;
  s << "warpgroup " << warpgroup << ", warp " << warp << ", lane " << 4 * g + col % 8 / 2
    << ", register [" << col / 8 << "][" << 2 * high + col % 2 << "]";
  return s.str();
}

// Expects got == want (row-major, `cols` a row) up to 1e-3; on a difference, the first 8
// elements that differ (row, column, who holds them) and the count of differences by rows of
// 8 and by columns of 8 and of 64, where a pattern points at its cause.
void expect_tile(const std::vector<float>& got, const std::vector<double>& want, int cols,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  std::ostringstream first;
  std::map<int, int> by_rows, by_cols, by_blocks;
  int bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const int row = static_cast<int>(i) / cols, col = static_cast<int>(i) % cols;
    if (std::abs(static_cast<double>(got[i]) - want[i]) <= 1e-3) continue;
    if (++bad <= 8) {
      first << "\n  [row " << row << "][col " << col << "] = " << got[i] << ", want " << want[i]
            << " (" << holder(row, col) << ")";
    }
    ++by_rows[row / 8], ++by_cols[col / 8], ++by_blocks[col / 64];
  }
  if (bad == 0) return;
  std::ostringstream counts;
  counts << "\n  differences by rows of 8 (first row: count):";
  for (const auto& [r, n] : by_rows) counts << " " << 8 * r << ":" << n;
  counts << "\n  by columns of 8:";
  for (const auto& [c, n] : by_cols) counts << " " << 8 * c << ":" << n;
  counts << "\n  by columns of 64:";
  for (const auto& [c, n] : by_blocks) counts << " " << 64 * c << ":" << n;
  ADD_FAILURE() << what << ": " << bad << " of " << got.size() << " elements differ" << first.str()
                << counts.str();
}

const char* name_of(bool bf16) { return bf16 ? "bfloat16" : "float16"; }

// The host's S = Q Kᵀ: Q k_rows x dim, K k_keys x dim, both row-major.
std::vector<double> host_scores(const std::vector<float>& q, const std::vector<float>& k, int dim) {
  std::vector<double> s(static_cast<std::size_t>(k_rows) * k_keys, 0.0);
  for (int r = 0; r < k_rows; ++r) {
    for (int j = 0; j < k_keys; ++j) {
      double sum = 0;
      for (int c = 0; c < dim; ++c) {
        sum += static_cast<double>(q[static_cast<std::size_t>(r) * dim + c]) *
               k[static_cast<std::size_t>(j) * dim + c];
      }
      s[static_cast<std::size_t>(r) * k_keys + j] = sum;
    }
  }
  return s;
}

// The host's O = start + P V: P k_rows x k_keys, V k_keys x dim, both row-major.
std::vector<double> host_product(const std::vector<float>& p, const std::vector<float>& v, int dim,
                                 float start) {
  std::vector<double> o(static_cast<std::size_t>(k_rows) * dim, 0.0);
  for (int r = 0; r < k_rows; ++r) {
    for (int c = 0; c < dim; ++c) {
      double sum = start;
      for (int j = 0; j < k_keys; ++j) {
        sum += static_cast<double>(p[static_cast<std::size_t>(r) * k_keys + j]) *
               v[static_cast<std::size_t>(j) * dim + c];
      }
      o[static_cast<std::size_t>(r) * dim + c] = sum;
    }
  }
  return o;
}

// The copy alone: chunk c (16 bytes, 8 elements) of row r of column block b sits at
// b * 128 rows * 128 bytes + r * 128 + (c ^ r % 8) * 16; rows past `rows` and columns past
// `columns` zero.
TEST(wgmma, swizzled_tile_copy_puts_each_16_byte_chunk_where_the_swizzle_says) {
  COOLBENCH_REQUIRE_SM90();
  for (const int dim : {64, 128}) {
    for (const auto& [rows, columns] : {std::pair{k_rows, dim}, std::pair{100, dim - 24}}) {
      std::vector<std::uint16_t> from(static_cast<std::size_t>(k_rows) * dim);
      for (std::size_t i = 0; i < from.size(); ++i) from[i] = static_cast<std::uint16_t>(i + 1);
      const std::vector<std::uint16_t> got = wgmma_test::swizzled_tile(dim, rows, columns, from);
      ASSERT_EQ(got.size(), from.size());
      int bad = 0;
      std::ostringstream first;
      for (int r = 0; r < k_rows; ++r) {
        for (int c = 0; c < dim; ++c) {
          const int block = c / 64, chunk = c % 64 / 8;
          const std::size_t at = static_cast<std::size_t>(block) * k_rows * 64 + r * 64 +
                                 ((chunk ^ (r % 8)) * 8) + c % 8;
          const std::uint16_t want =
              r < rows && c < columns ? from[static_cast<std::size_t>(r) * dim + c] : 0;
          if (got[at] != want && ++bad <= 8) {
            first << "\n  element [row " << r << "][col " << c << "] at shared word " << at << ": "
                  << got[at] << ", want " << want;
          }
        }
      }
      EXPECT_EQ(bad, 0) << "dim " << dim << ", " << rows << " rows x " << columns << " columns"
                        << first.str();
    }
  }
}

// S = Q Kᵀ, 128 rows (two warpgroups) by 128 keys over head dims 64 and 128.
TEST(wgmma, scores_tile_of_two_warpgroups_matches_the_host) {
  COOLBENCH_REQUIRE_SM90();
  for (const bool bf16 : {false, true}) {
    for (const int dim : {64, 128}) {
      const std::vector<float> q = eighths(static_cast<std::size_t>(k_rows) * dim, 1);
      const std::vector<float> k = eighths(static_cast<std::size_t>(k_keys) * dim, 2);
      const std::vector<double> want = host_scores(q, k, dim);
      const std::vector<float> got =
          wgmma_test::scores(bf16, dim, bits_of(q, bf16), bits_of(k, bf16));
      expect_tile(got, want, k_keys,
                  std::string("scores ") + name_of(bf16) + " dim " + std::to_string(dim) +
                      " (wrong everywhere: the K-major descriptor or the swizzle; from column "
                      "16 of the head dim on: the 32-byte k-step; rows 64-127 alone: the second "
                      "warpgroup's Q offset)");
    }
  }
}

// O = start + P V: P 128 x 128 keys (rounded to the dtype by the kernel's packing), V 128 keys
// by head dims 64 and 128, the output registers starting at 0.5 (wgmma accumulates onto them).
TEST(wgmma, probabilities_times_v_match_the_host) {
  COOLBENCH_REQUIRE_SM90();
  constexpr float start = 0.5F;
  for (const bool bf16 : {false, true}) {
    for (const int dim : {64, 128}) {
      const std::vector<float> p = eighths(static_cast<std::size_t>(k_rows) * k_keys, 3);
      const std::vector<float> v = eighths(static_cast<std::size_t>(k_keys) * dim, 4);
      const std::vector<double> want = host_product(p, v, dim, start);
      const std::vector<float> got = wgmma_test::product(bf16, dim, p, bits_of(v, bf16), start);
      expect_tile(got, want, dim,
                  std::string("P V ") + name_of(bf16) + " dim " + std::to_string(dim) +
                      " (wrong everywhere: the packing of P or the MN-major descriptor's stride "
                      "offset; columns 64-127 alone at dim 128: its leading byte offset)");
    }
  }
}

// Both products in flight at once (attention_wgmma_overlap.cu's order): S = Q Kᵀ as one
// wgmma group, then O = start + P V as a second; after wait_group 1 the scores are done (and
// ordinary code doubles them in place while the second group may run), after wait_group 0 the
// output. The same values as the two tests above.
TEST(wgmma, scores_and_product_in_flight_together_match_the_host) {
  COOLBENCH_REQUIRE_SM90();
  constexpr float start = 0.5F;
  for (const bool bf16 : {false, true}) {
    for (const int dim : {64, 128}) {
      const std::vector<float> q = eighths(static_cast<std::size_t>(k_rows) * dim, 1);
      const std::vector<float> k = eighths(static_cast<std::size_t>(k_keys) * dim, 2);
      const std::vector<float> p = eighths(static_cast<std::size_t>(k_rows) * k_keys, 3);
      const std::vector<float> v = eighths(static_cast<std::size_t>(k_keys) * dim, 4);
      const std::vector<double> scores = host_scores(q, k, dim);
      std::vector<double> doubled = scores;
      for (double& x : doubled) x *= 2;
      const std::vector<double> output = host_product(p, v, dim, start);
      const wgmma_test::overlapped_result got = wgmma_test::overlapped(
          bf16, dim, bits_of(q, bf16), bits_of(k, bf16), p, bits_of(v, bf16), start);
      const std::string what = std::string(name_of(bf16)) + " dim " + std::to_string(dim);
      expect_tile(got.scores, scores, k_keys, "scores after wait_group 1, " + what);
      expect_tile(got.doubled, doubled, k_keys, "scores doubled during P V, " + what);
      expect_tile(got.output, output, dim, "P V after wait_group 0, " + what);
    }
  }
}

}  // namespace
}  // namespace coolbench::engine
