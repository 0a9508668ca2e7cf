// Elementwise ONNX ops on the CPU: arithmetic, math, comparisons, logic,
// Where, Min/Max, Clip, Cast, Identity and inference-mode Dropout. Binary and
// variadic ops broadcast multidirectionally, as numpy does.
#pragma once

#include <span>

#include "engine/backends/cpu/kernel.hpp"

namespace coolbench::engine::cpu {

/// One entry per op type; the table lives for the whole program.
[[nodiscard]] std::span<const kernel_entry> elementwise_kernels();

}  // namespace coolbench::engine::cpu
