// The per-element program of a FusedElementwise node: a short list of
// instructions over float32 registers that loads inputs (broadcast by the
// kernel), applies ONNX elementwise ops and rounds each result to its
// value's dtype, as the unfused nodes would have stored it. Compiled on the
// host by the elementwise pass (and by the GEMM pass, to recognise GELU),
// stored in the node's attributes, decoded by the CUDA op into kernel
// parameters. ew_apply is shared by the host evaluator and the kernel.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "coolbench/engine/graph.hpp"

#if defined(__CUDACC__)
#define COOLBENCH_HOST_DEVICE __host__ __device__
#else
#define COOLBENCH_HOST_DEVICE
#endif

namespace coolbench::engine {

enum class ew_op : std::uint8_t {
  load,      // dst = input[a]
  constant,  // dst = constants[a]
  add,
  sub,
  mul,
  div,
  pow,
  min,
  max,
  neg,
  abs,
  sqrt,
  exp,
  log,
  tanh,
  erf,
  sigmoid,
  relu,
  reciprocal,
  gelu_erf,
  gelu_tanh,
  logical_not,
  equal,
  less,
  greater,
  less_equal,
  greater_equal,
  where,  // dst = a != 0 ? b : c
  copy,   // dst = a (Cast: the rounding does the work)
  count_
};

/// How an instruction's result is stored, as its value's dtype would hold it.
enum class ew_round : std::uint8_t { none, half, bfloat16, boolean, integer };

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

/// One op on float32 operands (ONNX semantics); ew_op::load and constant
/// are the caller's.
COOLBENCH_HOST_DEVICE inline float ew_apply(ew_op op, float a, float b, float c) {
  switch (op) {
    case ew_op::add: return a + b;
    case ew_op::sub: return a - b;
    case ew_op::mul: return a * b;
    case ew_op::div: return a / b;
    case ew_op::pow: return powf(a, b);
    case ew_op::min: return a != a || b != b ? a + b : fminf(a, b);
    case ew_op::max: return a != a || b != b ? a + b : fmaxf(a, b);
    case ew_op::neg: return -a;
    case ew_op::abs: return fabsf(a);
    case ew_op::sqrt: return sqrtf(a);
    case ew_op::exp: return expf(a);
    case ew_op::log: return logf(a);
    case ew_op::tanh: return tanhf(a);
    case ew_op::erf: return erff(a);
    case ew_op::sigmoid: return 1.0F / (1.0F + expf(-a));
    case ew_op::relu: return a > 0.0F ? a : (a != a ? a : 0.0F);
    case ew_op::reciprocal: return 1.0F / a;
    case ew_op::gelu_erf: return 0.5F * a * (1.0F + erff(a * 0.70710678118654752F));
    case ew_op::gelu_tanh:
      return 0.5F * a * (1.0F + tanhf(0.79788456080286536F * (a + 0.044715F * a * a * a)));
    case ew_op::logical_not: return a == 0.0F ? 1.0F : 0.0F;
    case ew_op::equal: return a == b ? 1.0F : 0.0F;
    case ew_op::less: return a < b ? 1.0F : 0.0F;
    case ew_op::greater: return a > b ? 1.0F : 0.0F;
    case ew_op::less_equal: return a <= b ? 1.0F : 0.0F;
    case ew_op::greater_equal: return a >= b ? 1.0F : 0.0F;
    case ew_op::where: return a != 0.0F ? b : c;
    default: return a;  // copy
  }
}

}  // namespace coolbench::engine
