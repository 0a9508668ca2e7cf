// CPU kernels for MatMul and Gemm. Both compute in float32 through OpenBLAS's
// cblas_sgemm; float16 inputs are widened first and the result narrowed back.
#pragma once

#include <span>

#include "engine/backends/cpu/kernel.hpp"

namespace coolbench::engine::cpu {

/// MatMul (numpy matmul semantics) and Gemm, for float32 and float16.
[[nodiscard]] std::span<const kernel_entry> matmul_kernels();

}  // namespace coolbench::engine::cpu
