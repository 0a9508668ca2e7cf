// Elementwise ONNX ops on the CPU: arithmetic, math, comparisons, logic,
// Where, Min/Max, Clip, Cast, Identity and inference-mode Dropout. Binary and
// variadic ops broadcast multidirectionally, as numpy does.
#pragma once

#include <span>

#include "engine/backends/cpu/kernel.hpp"

namespace coolbench::engine::cpu {

/// Every elementwise op type and its kernel: the sub-family tables below joined,
/// made once; the table lives for the whole program.
[[nodiscard]] std::span<const kernel_entry> elementwise_kernels();

/// One entry per op type; the tables live for the whole program. Unary:
/// math, activations, Clip, Cast, IsNaN, CumSum, Identity, Dropout
/// (elementwise_unary.cpp).
[[nodiscard]] std::span<const kernel_entry> elementwise_unary_kernels();

/// Binary and variadic: arithmetic, Pow, comparisons, logic, Where, Min, Max
/// (elementwise_binary.cpp).
[[nodiscard]] std::span<const kernel_entry> elementwise_binary_kernels();

}  // namespace coolbench::engine::cpu
