// Launchers of the fused ops' kernels (fused_layer_norm.cu,
// fused_elementwise.cu): plain host functions over device pointers, each
// queued on `stream` and checked.
#pragma once

#include <cstdint>
#include <string>

#include "coolbench/engine/tensor.hpp"
#include "engine/backends/cuda/kernels.hpp"
#include "engine/fusion/elementwise_program.hpp"

namespace coolbench::engine::cuda {

/// y = LayerNorm(a + b) over the last `n` elements of each of `rows` rows,
/// with the sum rounded to the dtype as an Add node stores it; `b` may be
/// null (plain LayerNorm), `sum` (the rounded a + b) and `bias` may be null.
/// Statistics in float32.
void launch_fused_layer_norm(dtype type, const void* a, const void* b, const void* scale,
                             const void* bias, void* y, void* sum, std::int64_t rows,
                             std::int64_t n, float epsilon, void* stream);

/// One input of an elementwise program: its dtype and its element strides
/// over the output's dimensions (0 where it is broadcast).
struct ew_operand {
  const void* data = nullptr;
  dtype type = dtype::float32;
  std::int64_t stride[k_max_rank] = {};
};

/// The program a FusedGemm runs after its product when cuBLASLt's epilogue
/// cannot do the bias and activation ("relu", "gelu_erf", "gelu_tanh" or
/// "none"): y = act(y + bias), each step rounded as `type` stores it.
[[nodiscard]] ew_program bias_activation_program(dtype type, bool bias,
                                                 const std::string& activation);

/// out (of `out_type`, the output shape `shape` of `rank` dims, dense) =
/// the program evaluated per element over the operands. Returns "" when a
/// generated kernel ran it (ew_jit.hpp), else why the interpreting kernel
/// did ("COOLBENCH_EW_JIT=0", NVRTC's error).
[[nodiscard]] std::string launch_fused_elementwise(const ew_program& program,
                                                   const ew_operand* operands, int operand_count,
                                                   const std::int64_t* shape, int rank,
                                                   dtype out_type, void* out, void* stream);

}  // namespace coolbench::engine::cuda
