// The skinny product: Y[M,N] = act(alpha x[M,K] W + beta C + bias) for M of 1 to 8 (a decode
// step's products: one token a sequence, batch 1 to 8), where cuBLASLt's kernels take 4-5 us a
// product on an H100 and streaming GPT-2's 1.2-4.7 MB weights takes 0.4-1.6 us. The kernel
// (skinny_gemm.cu) reads W once, in 16-byte pieces, with K split over the warps of a block and
// over blocks so that the grid fills every multiprocessor; the blocks of a column tile leave
// float32 partial sums in the cuBLASLt workspace and the last of them (an atomic counter,
// which it sets back to 0, so the counters stay valid across runs and CUDA graph replays)
// sums them in split order and applies the epilogue. No host sync and no allocation: it can
// be captured.
//
// This header is plain host code (no CUDA headers): which products the kernel takes
// (skinny_fits) and how it splits them (plan_skinny) are unit-tested on the CPU
// (tests/engine/skinny_plan_test.cpp). gemm_tuning.cpp times it as one more candidate beside
// cuBLASLt's where COOLBENCH_GEMM_SKINNY=1, and takes it wherever it fits, untimed, where
// COOLBENCH_GEMM_SKINNY=force (for tests and benchmarks); off by default.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "coolbench/engine/tensor.hpp"

namespace coolbench::engine::cuda {

/// Whether products consider the skinny kernel (COOLBENCH_GEMM_SKINNY): off (unset or
/// anything else), timed beside cuBLASLt's candidates ("1"), or taken untimed ("force").
enum class skinny_mode : std::uint8_t { off, timed, forced };

[[nodiscard]] inline skinny_mode skinny_mode_from(const char* value) noexcept {
  if (value == nullptr) return skinny_mode::off;
  const std::string_view v(value);
  if (v == "1") return skinny_mode::timed;
  if (v == "force") return skinny_mode::forced;
  return skinny_mode::off;
}

/// Rows of Y (M) the kernel takes at most.
inline constexpr std::int64_t k_skinny_max_rows = 8;
/// Threads a block.
inline constexpr int k_skinny_threads = 256;
/// Blocks a multiprocessor holds at once (the kernels' launch bounds): the grid is sized to
/// fill them once.
inline constexpr int k_skinny_blocks_per_sm = 2;
/// K rows a block at most: its slice of x waits in shared memory as float32 (8 rows x 1,024
/// x 4 bytes = 32 KiB).
inline constexpr std::int64_t k_skinny_max_depth = 1024;
/// Column tiles whose K may be split: the counters the backend keeps (4 bytes each).
inline constexpr std::int64_t k_skinny_counters = 4096;
/// The grid's y dimension (the splits) at most.
inline constexpr std::int64_t k_skinny_max_splits = 65535;

/// What decides whether and how the kernel runs a product (fused_blas.hpp's product with
/// its ldb resolved).
struct skinny_problem {
  dtype type = dtype::float16;
  bool trans_a = false;
  bool trans_b = false;  ///< W is [N, K] (rows of K), else [K, N]
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  std::int64_t lda = 0;       ///< elements between x's rows (0: dense); the kernel reads x dense
  std::int64_t ldb = 0;       ///< elements between W's rows
  std::uint32_t align_b = 0;  ///< W's address alignment (gemm_choice.hpp's address_alignment)
  std::size_t workspace = 0;  ///< bytes of the workspace the partial sums go to
};

/// How a fitting product is split. A block computes `tile` outputs of each row of Y (columns
/// of Y; W's rows where transposed) over `depth` rows of K; the grid is tiles x splits.
struct skinny_plan {
  bool transposed = false;  ///< W [N, K]: the kernel whose lanes run along W's rows
  int rows = 0;             ///< M rounded up to 1, 2, 4 or 8: the kernel's register tile
  int piece = 0;            ///< elements in 16 bytes: 8 for 16-bit types, 4 for float32
  std::int64_t tile = 0;
  std::int64_t tiles = 0;
  std::int64_t splits = 1;
  std::int64_t depth = 0;  ///< K elements a split (the last one may have fewer)
  /// float32 partial sums of the splits in the workspace (0 where K is not split).
  [[nodiscard]] std::size_t partial_bytes() const noexcept {
    return splits > 1 ? static_cast<std::size_t>(tiles * splits * rows * tile) * sizeof(float) : 0;
  }
};

namespace skinny_detail {

[[nodiscard]] inline int element_bytes(dtype type) noexcept {
  switch (type) {
    case dtype::float16:
    case dtype::bfloat16: return 2;
    case dtype::float32: return 4;
    default: return 0;  // none of the kernel's
  }
}

[[nodiscard]] inline int rows_for(std::int64_t m) noexcept {
  return m <= 1 ? 1 : m <= 2 ? 2 : m <= 4 ? 4 : 8;
}

// The kernels' thread layouts (skinny_gemm.cu): 8 lanes across 16-byte pieces of a row of W,
// the block's 32 groups of them down K ([K, N]: 8 pieces of N a tile) or across W's rows ([N, K]:
// each group takes 2 rows of W at 8 rows of Y, 4 below, so 64 or 128 rows a tile).
inline constexpr int k_lanes_across = 8;
inline constexpr int k_groups = k_skinny_threads / k_lanes_across;

[[nodiscard]] constexpr int transposed_rows_a_group(int rows) noexcept { return rows >= 8 ? 2 : 4; }

[[nodiscard]] inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) noexcept {
  return (a + b - 1) / b;
}

}  // namespace skinny_detail

/// The split of K into `splits` ranges of `depth` (rounded up to `granule`, at least
/// `min_depth`, at most k_skinny_max_depth): as many splits as fill `slots` blocks with
/// `tiles` column tiles, at least as many as keep every range within the maximum depth.
/// Returns {splits, depth}.
struct skinny_split {
  std::int64_t splits = 1, depth = 0;
};
[[nodiscard]] inline skinny_split split_k(std::int64_t k, std::int64_t tiles, std::int64_t slots,
                                          std::int64_t granule, std::int64_t min_depth) noexcept {
  using skinny_detail::ceil_div;
  const std::int64_t wanted = std::max<std::int64_t>(1, slots / std::max<std::int64_t>(tiles, 1));
  const std::int64_t fewest = ceil_div(k, k_skinny_max_depth);
  const std::int64_t splits = std::max(wanted, fewest);
  std::int64_t depth = ceil_div(ceil_div(k, splits), granule) * granule;
  depth = std::min(std::max(depth, min_depth), k_skinny_max_depth);
  return {ceil_div(k, depth), depth};
}

/// The plan for `p` on a GPU of `multiprocessors` SMs, or nullopt where the kernel does not
/// take it: not one product (batch > 1), A transposed or not dense, M outside 1..8, a dtype other
/// than float16, bfloat16 and float32, W's rows or address off 16-byte boundaries, or K needing
/// more splits than the counters, the workspace or the grid allow. Where the split that
/// fills the GPU needs more workspace than there is, fewer splits.
[[nodiscard]] inline std::optional<skinny_plan> plan_skinny(const skinny_problem& p,
                                                            int multiprocessors) noexcept {
  using namespace skinny_detail;  // NOLINT(google-build-using-namespace): the layouts' names
  const int element = element_bytes(p.type);
  if (element == 0 || p.batch != 1 || p.trans_a || p.m < 1 || p.m > k_skinny_max_rows || p.n < 1 ||
      p.k < 1 || (p.lda != 0 && p.lda != p.k)) {
    return std::nullopt;
  }
  const std::int64_t row_extent = p.trans_b ? p.k : p.n;
  if (p.ldb < row_extent || (p.ldb * element) % 16 != 0 || p.align_b < 16) return std::nullopt;
  skinny_plan plan;
  plan.transposed = p.trans_b;
  plan.rows = rows_for(p.m);
  plan.piece = 16 / element;
  plan.tile = p.trans_b ? std::int64_t{k_groups} * transposed_rows_a_group(plan.rows)
                        : std::int64_t{k_lanes_across} * plan.piece;
  plan.tiles = ceil_div(p.n, plan.tile);
  // [K, N]: a split gives each of the 32 groups one row of K at least; [N, K]: each of the 8
  // lanes one piece. The ranges start on whole pieces either way.
  const std::int64_t min_depth = p.trans_b ? std::int64_t{k_lanes_across} * plan.piece : k_groups;
  const std::int64_t slots = std::int64_t{std::max(multiprocessors, 1)} * k_skinny_blocks_per_sm;
  skinny_split split = split_k(p.k, plan.tiles, slots, 8, min_depth);
  if (split.splits > 1) {
    const std::size_t per_split =
        static_cast<std::size_t>(plan.tiles * plan.rows * plan.tile) * sizeof(float);
    const auto affordable = static_cast<std::int64_t>(p.workspace / per_split);
    if (split.splits > affordable) {  // fewer, deeper splits, down to the fewest allowed
      split = split_k(p.k, plan.tiles, std::max<std::int64_t>(affordable, 1) * plan.tiles, 8,
                      min_depth);
    }
    if (split.splits > 1 && (split.splits > affordable || plan.tiles > k_skinny_counters ||
                             split.splits > k_skinny_max_splits)) {
      return std::nullopt;
    }
  }
  plan.splits = split.splits;
  plan.depth = split.depth;
  return plan;
}

/// Whether the kernel takes `p` (on any GPU: how many multiprocessors only changes the split).
[[nodiscard]] inline bool skinny_fits(const skinny_problem& p) noexcept {
  return plan_skinny(p, 1).has_value();
}

/// Shared memory a block of `plan` takes (bytes): its slice of x as float32, or the warps'
/// partial sums when they are more ([K, N] alone); under the 48 KiB a launch may take
/// without opting in.
[[nodiscard]] inline std::size_t skinny_shared_bytes(const skinny_plan& plan) noexcept {
  using namespace skinny_detail;  // NOLINT(google-build-using-namespace)
  // A pass of the block: 32 rows of K 2 or 4 times ([K, N]), 8 pieces ([N, K]).
  const std::int64_t pass =
      plan.transposed ? std::int64_t{k_lanes_across} * plan.piece : std::int64_t{k_groups} * 4;
  const std::int64_t padded = ceil_div(plan.depth, pass) * pass;
  const auto staged = static_cast<std::size_t>(padded * plan.rows) * sizeof(float);
  const std::size_t sums =
      plan.transposed
          ? 0
          : static_cast<std::size_t>(k_skinny_threads / 32 * plan.rows * plan.tile) * sizeof(float);
  return std::max(staged, sums);
}

/// One launch's operands: device pointers, x [M, K] dense, W [K, N] or [N, K] with rows `ldb`
/// apart, Y and C [M, N] with rows `ldy` apart (C is read only where beta != 0), a bias of N
/// elements or none. `activation`: 0 none, 1 relu, 2 GELU's tanh form (blas_activation's
/// values). W and Y must not overlap, as for cuBLASLt.
struct skinny_operands {
  dtype type = dtype::float16;
  std::int64_t m = 0, n = 0, k = 0, ldb = 0, ldy = 0;
  const void* x = nullptr;
  const void* w = nullptr;
  void* y = nullptr;
  const void* c = nullptr;
  const void* bias = nullptr;
  float alpha = 1, beta = 0;
  int activation = 0;
};

/// Queues `plan`'s kernel on `stream` (a cudaStream_t). `partials`: plan.partial_bytes() of
/// device memory no other work on the stream uses meanwhile (the cuBLASLt workspace);
/// `counters`: k_skinny_counters unsigned ints, zero before the first launch, which every
/// launch leaves zero.
void launch_skinny(const skinny_plan& plan, const skinny_operands& operands, float* partials,
                   unsigned* counters, void* stream);

}  // namespace coolbench::engine::cuda
