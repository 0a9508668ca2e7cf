// CPU kernels of the convolutional-network operators: Conv (conv.cpp: im2col
// and OpenBLAS's sgemm per image and group), the pools and
// BatchNormalization (pool.cpp). They compute in float32 for float32,
// float16 and bfloat16 inputs, over 1 to 3 spatial axes.
#pragma once

#include <span>

#include "engine/backends/cpu/kernel.hpp"

namespace coolbench::engine::cpu {

/// Conv.
[[nodiscard]] std::span<const kernel_entry> conv_kernels();

/// MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool, BatchNormalization.
[[nodiscard]] std::span<const kernel_entry> pool_kernels();

}  // namespace coolbench::engine::cpu
