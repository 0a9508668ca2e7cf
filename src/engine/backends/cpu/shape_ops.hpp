// Kernels that move or describe data without arithmetic on it: Reshape,
// Transpose, Squeeze, Unsqueeze, Concat, Split, Slice, Gather, Shape, Size,
// ConstantOfShape, Constant, Expand, Range, Trilu. They copy elements as bytes
// of the dtype's size, so every dtype works (Range computes, on its numeric
// types only).
#pragma once

#include <span>

#include "engine/backends/cpu/kernel.hpp"

namespace coolbench::engine::cpu {

/// The op types above and their kernels, in a static table.
[[nodiscard]] std::span<const kernel_entry> shape_kernels();

}  // namespace coolbench::engine::cpu
