// Kernels that move or describe data without arithmetic on it: Reshape,
// Transpose, Squeeze, Unsqueeze, Concat, Split, Slice, Gather, GatherElements, Shape, Size,
// ConstantOfShape, Constant, Expand, Range, Trilu. They copy elements as bytes
// of the dtype's size, so every dtype works (Range computes, on its numeric
// types only).
#pragma once

#include <span>

#include "engine/backends/cpu/kernel.hpp"

namespace coolbench::engine::cpu {

/// Every shape op type and its kernel: the sub-family tables below joined,
/// made once; the table lives for the whole program.
[[nodiscard]] std::span<const kernel_entry> shape_kernels();

/// The op types above and their kernels, in static tables per file.
/// Reshape, Transpose, Squeeze, Unsqueeze, Flatten, Expand, Shape, Size.
[[nodiscard]] std::span<const kernel_entry> shape_view_kernels();

/// Concat, Split, Slice, Gather, GatherElements, GatherND.
[[nodiscard]] std::span<const kernel_entry> shape_select_kernels();

/// ConstantOfShape, Constant, Range, Trilu.
[[nodiscard]] std::span<const kernel_entry> shape_generator_kernels();

}  // namespace coolbench::engine::cpu
