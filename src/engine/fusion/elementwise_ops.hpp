// The ops of an elementwise program and their float32 semantics (ew_apply),
// in one header that three compilers read: the host's (the CPU evaluator and
// the fusion passes), nvcc's (the interpreting kernel) and NVRTC's (the
// kernels generated per program, ew_jit.cpp, which embeds this file's text).
// So it includes nothing NVRTC lacks: <cmath> only outside NVRTC, whose
// math functions are built in.
#pragma once

#if !defined(__CUDACC_RTC__)
#include <cmath>
#endif

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define COOLBENCH_HOST_DEVICE __host__ __device__
#else
#define COOLBENCH_HOST_DEVICE
#endif

namespace coolbench::engine {

enum class ew_op : unsigned char {
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
enum class ew_round : unsigned char { none, half, bfloat16, boolean, integer };

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
