// The pieces of engine/backends/cuda/wgmma.cuh run alone on the GPU
// (wgmma_test_kernels.cu, sm_90a), for wgmma_test.cpp to check against the
// host: plain host functions over host vectors, 16-bit values as their bit
// patterns (float16 or bfloat16 by `bf16`). Each throws std::runtime_error
// with the CUDA error where the GPU fails.
#pragma once

#include <cstdint>
#include <vector>

namespace coolbench::engine::wgmma_test {

/// Rows of the tiles these use: attention_wgmma.cu's 128 query rows (two warpgroups of 64) and
/// its 128 keys a tile.
inline constexpr int k_rows = 128;
inline constexpr int k_keys = 128;

/// Device 0's compute capability as 10 x major + minor (90: sm_90a code runs).
int compute_capability();

/// The bytes copy_swizzled leaves in shared memory for `from`, a [k_rows][dim] matrix (rows
/// `dim` elements apart) of which only `rows` rows and `columns` columns are real (the rest
/// zero-filled), read back as 16-bit words in shared-memory order.
std::vector<std::uint16_t> swizzled_tile(int dim, int rows, int columns,
                                         const std::vector<std::uint16_t>& from);

/// s = q kᵀ as attention_wgmma.cu makes it: q [k_rows][dim] and k [k_keys][dim] copied
/// swizzled, each warpgroup's 64 rows by wgmma::scores; s [k_rows][k_keys] from each thread's
/// accumulators at the rows and columns the layout gives them.
std::vector<float> scores(bool bf16, int dim, const std::vector<std::uint16_t>& q,
                          const std::vector<std::uint16_t>& k);

/// o = start + P v as attention_wgmma.cu makes it: p [k_rows][k_keys] floats put into each
/// thread's accumulator registers by the layout, packed to 16 bits by
/// wgmma::pack_probabilities, times v [k_keys][dim] copied swizzled, by wgmma::accumulate into
/// output registers that start at `start`; o [k_rows][dim].
std::vector<float> product(bool bf16, int dim, const std::vector<float>& p,
                           const std::vector<std::uint16_t>& v, float start);

/// Both products in flight at once, as attention_wgmma_overlap.cu issues them (wgmma::
/// issue_scores, then issue_accumulate, each its own group): `scores` = q kᵀ read after
/// wait_group 1 (the product with v may still run), `doubled` the same doubled by ordinary
/// code before wait_group 0, `output` = start + P v read after it (q, k, p, v and start as
/// scores() and product() take them).
struct overlapped_result {
  std::vector<float> scores, doubled, output;
};
overlapped_result overlapped(bool bf16, int dim, const std::vector<std::uint16_t>& q,
                             const std::vector<std::uint16_t>& k, const std::vector<float>& p,
                             const std::vector<std::uint16_t>& v, float start);

}  // namespace coolbench::engine::wgmma_test
