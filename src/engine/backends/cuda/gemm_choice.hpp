// The decisions the CUDA backend's products make on the host, free of CUDA
// so that the CPU tests check them: which rows break cuBLASLt's 16-byte
// alignment and how far to pad them, how aligned an address is, whether two
// operands overlap, and which timed candidate wins.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "engine/fusion/elementwise_ops.hpp"  // COOLBENCH_HOST_DEVICE

namespace coolbench::engine::cuda {

/// The alignment cuBLASLt's vectorized kernels need of every row (bytes).
inline constexpr std::size_t k_row_alignment = 16;
/// The largest alignment cuBLASLt asks about (its preferences' default).
inline constexpr std::uint32_t k_max_alignment = 256;

/// Whether rows `ld` elements of `element` bytes apart all start 16-byte aligned.
[[nodiscard]] inline bool rows_aligned(std::int64_t ld, std::size_t element) noexcept {
  return (static_cast<std::size_t>(ld) * element) % k_row_alignment == 0;
}

/// `columns` rounded up so that a row of them is a multiple of 16 bytes.
[[nodiscard]] inline std::int64_t aligned_columns(std::int64_t columns,
                                                  std::size_t element) noexcept {
  const auto step = static_cast<std::int64_t>(std::max<std::size_t>(k_row_alignment / element, 1));
  return (columns + step - 1) / step * step;
}

/// The largest power of two up to 256 that divides `address` (256 for 0).
[[nodiscard]] inline std::uint32_t address_alignment(const void* address) noexcept {
  const auto bits = reinterpret_cast<std::uintptr_t>(address);
  std::uint32_t alignment = k_max_alignment;
  while (alignment > 1 && bits % alignment != 0) alignment /= 2;
  return alignment;
}

/// The columns of the padded scratch a product's Y is computed into, or 0
/// when Y is computed in place: Y's rows (ld `ldy`, N wide) break the
/// alignment while A's and B's rows keep it (padding Y alone would not make
/// the product aligned otherwise), and Y is dense across its batch.
[[nodiscard]] inline std::int64_t padded_output_columns(std::int64_t lda, std::int64_t ldb,
                                                        std::int64_t ldy, std::int64_t n,
                                                        std::int64_t m, std::int64_t batch,
                                                        std::int64_t stride_y,
                                                        std::size_t element) noexcept {
  if (rows_aligned(ldy, element) || !rows_aligned(lda, element) || !rows_aligned(ldb, element)) {
    return 0;
  }
  if (ldy != n || (batch > 1 && stride_y != m * n)) return 0;
  return aligned_columns(n, element);
}

/// How many columns a product whose Y goes through a scratch of `padded`
/// columns computes: all `padded` where B has that many readable columns (a
/// weight padded with zeros) and no bias (N long) is read per column, since
/// cuBLASLt runs an N that is not a whole number of 16-byte steps about 3
/// times slower (GPT-2's lm_head on an H100: 130 us at N = 50257, 39 us at
/// 50264); else N.
[[nodiscard]] inline std::int64_t computed_columns(std::int64_t n, std::int64_t padded,
                                                   std::int64_t readable, bool bias) noexcept {
  return padded > n && readable >= padded && !bias ? padded : n;
}

/// The bytes [begin, end) a row-major operand covers: `batch` matrices
/// `stride` elements apart, each `rows` rows `ld` apart of `cols` elements.
struct byte_range {
  std::uintptr_t begin = 0, end = 0;
};

[[nodiscard]] inline byte_range matrix_bytes(const void* data, std::int64_t rows, std::int64_t cols,
                                             std::int64_t ld, std::int64_t batch,
                                             std::int64_t stride, std::size_t element) noexcept {
  if (data == nullptr || rows <= 0 || cols <= 0 || batch <= 0) return {};
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const auto last = (batch - 1) * stride + (rows - 1) * ld + cols;
  return {begin, begin + static_cast<std::uintptr_t>(last) * element};
}

[[nodiscard]] inline bool overlaps(byte_range a, byte_range b) noexcept {
  return a.begin < a.end && b.begin < b.end && a.begin < b.end && b.begin < a.end;
}

/// Where a dense Y's rows break the alignment (N = 50257 in fp16: row r starts r x 2 bytes past
/// a 16-byte boundary, modulo 16), rows r, r + P, r + 2P, ... start at the same offset within 16
/// bytes, P = 16 / gcd(N x element, 16) of them (8 for an odd N in a 16-bit dtype). So the
/// product can write Y in place, with no padded scratch and no copy of it: one product for each
/// phase of rows (A's and Y's leading dimensions P times theirs), over the columns each of its
/// rows holds on whole 16-byte steps; the fewer than 16 bytes of columns left at each end of a
/// row (its edges) go to a kernel of their own. It pays where the phases' products are large
/// enough to be bound by their arithmetic, not by reading B once each (GPT-2's logits at 8 x
/// 1,024 tokens: 823 MB that the copy reads and writes again).
enum class row_phase_mode : std::uint8_t { off, by_size, forced };

/// COOLBENCH_GEMM_ROW_PHASES: unset or "1" where each phase has at least k_row_phase_min_rows
/// rows (the default: on an H100 the lm_head took 1.02 ms in phases against 1.69 through the
/// scratch at GPT-2 8 x 1,024, and more in phases of 128 rows, docs/perf/engine.md,
/// "2026-12-08"), "force" wherever the product allows it, anything else ("0") off.
[[nodiscard]] inline row_phase_mode row_phase_mode_from(const char* value) noexcept {
  if (value == nullptr) return row_phase_mode::by_size;
  const std::string_view v(value);
  if (v == "1") return row_phase_mode::by_size;
  if (v == "force") return row_phase_mode::forced;
  return row_phase_mode::off;
}

/// Rows a phase needs in the by-size mode: a phase's product does 2 FLOPs a row for each element
/// of B it reads, so 512 rows are 512 FLOPs a byte of fp16 B, past the about 260 an H100 does a
/// byte of its memory bandwidth: bound by its arithmetic, as the whole product is. GPT-2 at 8 x
/// 1,024 tokens has 1,024 a phase; at 1 x 1,024 (128 a phase) B's reads would cost more than the
/// copy.
inline constexpr std::int64_t k_row_phase_min_rows = 512;

/// One phase: rows first_row, first_row + phases, ... (`rows` of them) over columns
/// [first_column, first_column + columns), where each of these rows starts a 16-byte step.
struct row_phase {
  std::int64_t first_row = 0, rows = 0, first_column = 0, columns = 0;
};

struct row_phase_plan {
  std::int64_t phases = 0;
  std::vector<row_phase> parts;  ///< the phases that have rows
};

/// The first column of row `row` that starts a 16-byte step of Y (dense, N wide, 16-byte
/// aligned), and how many columns after it are whole steps; the rest are the row's edges.
struct row_run {
  std::int64_t first_column = 0, columns = 0;
};
/// The edges' kernel (row_phase_edges.cu) computes its columns with this function too.
[[nodiscard]] COOLBENCH_HOST_DEVICE inline row_run aligned_run(std::int64_t row, std::int64_t n,
                                                               std::size_t element) noexcept {
  const auto step = static_cast<std::int64_t>(k_row_alignment / element);
  const std::int64_t offset = (row % step) * (n % step) % step;  // row x n, modulo the step
  const std::int64_t first = (step - offset) % step;
  const std::int64_t columns = n > first ? (n - first) / step * step : 0;
  return {first, columns};
}

/// The phases of an M x N dense Y of `element`-byte values whose rows break the alignment, or
/// nullopt where there is nothing to split: rows aligned already, an element that does not
/// divide 16 bytes, or a row too short to hold a whole step after its first edge.
[[nodiscard]] inline std::optional<row_phase_plan> plan_row_phases(std::int64_t m, std::int64_t n,
                                                                   std::size_t element) {
  if (m < 1 || n < 1 || element == 0 || k_row_alignment % element != 0 ||
      rows_aligned(n, element)) {
    return std::nullopt;
  }
  row_phase_plan plan;
  plan.phases = static_cast<std::int64_t>(
      k_row_alignment / std::gcd(static_cast<std::size_t>(n) * element, k_row_alignment));
  for (std::int64_t j = 0; j < plan.phases && j < m; ++j) {
    const row_run run = aligned_run(j, n, element);
    if (run.columns == 0) return std::nullopt;
    plan.parts.push_back({.first_row = j,
                          .rows = (m - j + plan.phases - 1) / plan.phases,
                          .first_column = run.first_column,
                          .columns = run.columns});
  }
  return plan;
}

/// One phase's product in Y = A op(B), A dense [M, K], B read as [N, K] with rows `ldb` apart, Y
/// dense [M, N]: its shape, where its operands start (element offsets from A, B and Y) and the
/// leading dimensions it reads A and writes Y with (`phases` rows apart).
struct row_phase_product {
  std::int64_t rows = 0, columns = 0;
  std::int64_t a_offset = 0, lda = 0, b_offset = 0, y_offset = 0, ldy = 0;
};
[[nodiscard]] inline row_phase_product phase_product(const row_phase_plan& plan,
                                                     const row_phase& part, std::int64_t n,
                                                     std::int64_t k, std::int64_t ldb) noexcept {
  return {.rows = part.rows,
          .columns = part.columns,
          .a_offset = part.first_row * k,
          .lda = plan.phases * k,
          .b_offset = part.first_column * ldb,
          .y_offset = part.first_row * n + part.first_column,
          .ldy = plan.phases * n};
}

/// Whether `mode` takes the phases for a plan of `m` rows in `phases` phases.
[[nodiscard]] inline bool row_phases_wanted(row_phase_mode mode, std::int64_t m,
                                            std::int64_t phases) noexcept {
  if (mode == row_phase_mode::forced) return true;
  return mode == row_phase_mode::by_size && phases > 0 && m / phases >= k_row_phase_min_rows;
}

/// Split-K counts timed beside the heuristic's candidates, for a product
/// whose output is too small to give every multiprocessor a tile: an M x N
/// output with fewer 128 x 128 tiles than `multiprocessors` (GPT-2 small at
/// batch 1: 128 x 768 is 6 tiles for 132 SMs), where splitting K is the one
/// way to put more SMs to reading the weights. Each split keeps at least
/// k_min_split_depth of K (shallower splits spend more on the reduction than
/// they save). Empty where the output already fills the GPU, and for 0
/// multiprocessors (the caller's "none wanted").
inline constexpr std::int64_t k_min_split_depth = 128;
[[nodiscard]] inline std::vector<int> split_k_counts(std::int64_t m, std::int64_t n, std::int64_t k,
                                                     std::int64_t batch, int multiprocessors) {
  const std::int64_t tiles = batch * ((m + 127) / 128) * ((n + 127) / 128);
  if (tiles >= multiprocessors) return {};
  std::vector<int> counts;
  for (const int splits : {2, 3, 4, 6, 8, 12, 16}) {
    if (k / splits < k_min_split_depth) break;
    counts.push_back(splits);
  }
  return counts;
}

/// The median of `samples` (the mean of the middle two for an even count).
[[nodiscard]] inline double median_of(std::vector<double> samples) {
  if (samples.empty()) return 0.0;
  std::sort(samples.begin(), samples.end());
  const std::size_t mid = samples.size() / 2;
  return samples.size() % 2 == 1 ? samples[mid] : (samples[mid - 1] + samples[mid]) / 2;
}

/// The candidate with the least median time; a candidate with no samples
/// (its launch failed) is skipped, and a tie goes to the earlier one (the
/// heuristic's order). nullopt when none ran.
[[nodiscard]] inline std::optional<std::size_t> fastest_candidate(
    std::span<const std::vector<double>> samples) {
  std::optional<std::size_t> best;
  double best_ms = 0.0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (samples[i].empty()) continue;
    const double ms = median_of(samples[i]);
    if (!best || ms < best_ms) {
      best = i;
      best_ms = ms;
    }
  }
  return best;
}

}  // namespace coolbench::engine::cuda
