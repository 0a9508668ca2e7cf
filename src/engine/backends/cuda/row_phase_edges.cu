// The edges of a product written in row phases (gemm_choice.hpp, plan_row_phases): the columns
// of each row of Y before its first 16-byte step and after its last whole one, which the
// phases' products leave, fewer than 2 x 16 bytes of a row. One warp a row: its lanes take
// 16-byte pieces of A's row and of the edges' rows of B ([N, K], so a column of Y is a row of
// B), the sums in float32, met by shuffles.
#include "engine/backends/cuda/common.cuh"
#include "engine/backends/cuda/gemm_choice.hpp"
#include "engine/backends/cuda/kernels.hpp"

namespace coolbench::engine::cuda {
namespace {

constexpr int k_edge_warps = 8;  // rows a block
constexpr unsigned k_all_lanes = 0xffffffffU;

template <class T>
__global__ void row_phase_edges_kernel(const T* a, const T* b, std::int64_t ldb, T* y,
                                       std::int64_t m, std::int64_t n, std::int64_t k,
                                       float alpha) {
  constexpr int piece = k_piece<T>;
  // At most piece - 1 columns at each end (aligned_run).
  constexpr int most = 2 * (piece - 1);
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t first_row =
      std::int64_t{blockIdx.x} * k_edge_warps + static_cast<int>(threadIdx.x) / 32;
  for (std::int64_t row = first_row; row < m; row += std::int64_t{gridDim.x} * k_edge_warps) {
    const row_run run = aligned_run(row, n, sizeof(T));        // the phases' columns of this row
    const std::int64_t last = run.first_column + run.columns;  // the tail starts here
    const int head = static_cast<int>(run.first_column);
    const int edges = head + static_cast<int>(n - last);
    std::int64_t columns[most];
#pragma unroll
    for (int i = 0; i < most; ++i) columns[i] = i < head ? i : last + (i - head);
    float sums[most] = {};
    const T* a_row = a + row * k;
    for (std::int64_t at = std::int64_t{lane} * piece; at < k; at += 32 * piece) {
      float av[piece];
      widen<T>(__ldg(reinterpret_cast<const uint4*>(a_row + at)), av);
#pragma unroll
      for (int i = 0; i < most; ++i) {
        if (i < edges) {
          float bv[piece];
          widen<T>(__ldg(reinterpret_cast<const uint4*>(b + columns[i] * ldb + at)), bv);
#pragma unroll
          for (int e = 0; e < piece; ++e) sums[i] = fmaf(av[e], bv[e], sums[i]);
        }
      }
    }
#pragma unroll
    for (int i = 0; i < most; ++i) {
#pragma unroll
      for (int mask = 16; mask > 0; mask /= 2)
        sums[i] += __shfl_xor_sync(k_all_lanes, sums[i], mask);
      if (lane == i && i < edges) y[row * n + columns[i]] = narrow<T>(alpha * sums[i]);
    }
  }
}

}  // namespace

void launch_row_phase_edges(dtype type, const void* a, const void* b, std::int64_t ldb, void* y,
                            std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                            void* stream) {
  if (m <= 0 || n <= 0) return;
  const std::int64_t blocks = (m + k_edge_warps - 1) / k_edge_warps;
  const auto grid = static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8);
  dispatch(type, float_list{}, [&](auto t) {
    using T = typename decltype(t)::type;
    row_phase_edges_kernel<T><<<grid, k_edge_warps * 32, 0, as_stream(stream)>>>(
        static_cast<const T*>(a), static_cast<const T*>(b), ldb, static_cast<T*>(y), m, n, k,
        alpha);
  });
  check_launch();
}

}  // namespace coolbench::engine::cuda
