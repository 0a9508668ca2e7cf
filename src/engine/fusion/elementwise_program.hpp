// The per-element program of a FusedElementwise node: a short list of
// instructions over float32 registers that loads inputs (broadcast by the
// kernel), applies ONNX elementwise ops and rounds each result to its
// value's dtype, as the unfused nodes would have stored it. Compiled on the
// host by the elementwise pass (and by the GEMM pass, to recognise GELU),
// stored in the node's attributes, decoded by the CUDA op into kernel
// parameters. The ops and ew_apply (elementwise_ops.hpp) are shared by the
// host evaluator, the interpreting kernel and the generated kernels.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "coolbench/engine/graph.hpp"
#include "engine/fusion/elementwise_ops.hpp"

namespace coolbench::engine {

struct ew_instruction {
  ew_op op = ew_op::copy;
  std::uint8_t dst = 0, a = 0, b = 0, c = 0;
  ew_round round = ew_round::none;
};

inline constexpr int k_ew_max_instructions = 48;
inline constexpr int k_ew_max_registers = 24;
inline constexpr int k_ew_max_constants = 16;
inline constexpr int k_ew_max_inputs = 8;

/// A compiled program; the result is the last instruction's register.
struct ew_program {
  std::vector<ew_instruction> code;
  std::vector<float> constants;
  int inputs = 0;
};

/// The op of an ONNX node in a program (nullopt for one that is not
/// elementwise here); `arity` gets its operand count.
[[nodiscard]] std::optional<ew_op> ew_op_of(const node& n, int& arity);

/// The rounding of values of this dtype.
[[nodiscard]] ew_round ew_round_for(dtype type);

/// As node attributes ("program", "constants") and back; from_attributes
/// throws invalid_argument naming the node when they are malformed.
void ew_to_attributes(const ew_program& program, node& n);
[[nodiscard]] ew_program ew_from_attributes(const node& n);

/// Runs the program on the host over one element's inputs (as float).
[[nodiscard]] float ew_evaluate(const ew_program& program, const std::vector<float>& inputs);

}  // namespace coolbench::engine
