// Host-side helpers of the CUDA ops: index plans for broadcasts and strided
// copies (kernels.hpp), and axis handling.
#pragma once

#include <span>

#include "engine/backends/cuda/backend.hpp"
#include "engine/backends/cuda/kernels.hpp"

namespace coolbench::engine::cuda {

/// Row-major element strides of `shape`.
[[nodiscard]] shape_t dense_strides(const shape_t& shape);

/// The broadcast of the operands' shapes (numpy rules) and a plan over it:
/// operand i of `operands` gets plan.stride[i]; the output (3) is dense.
/// Fails naming the node when the shapes do not broadcast or the rank is
/// over k_max_rank.
[[nodiscard]] index_plan broadcast_plan(const op_call& call,
                                        std::span<const shape_t* const> operands,
                                        shape_t& out_shape);

/// A plan over `shape` (the iteration space) with no strides set yet.
[[nodiscard]] index_plan iteration_plan(const op_call& call, const shape_t& shape);

/// `axis` in [-rank, rank) made non-negative; fails naming the node otherwise.
[[nodiscard]] std::int64_t normalize_axis(const op_call& call, std::int64_t axis,
                                          std::int64_t rank);

}  // namespace coolbench::engine::cuda
