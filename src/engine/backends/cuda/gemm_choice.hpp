// The decisions the CUDA backend's products make on the host, free of CUDA
// so that the CPU tests check them: which rows break cuBLASLt's 16-byte
// alignment and how far to pad them, how aligned an address is, whether two
// operands overlap, and which timed candidate wins.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

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
