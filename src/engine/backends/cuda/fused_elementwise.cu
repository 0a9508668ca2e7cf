// The elementwise program interpreter: one thread per output element (a
// grid-stride loop) computes each input's offset from the element's
// coordinates and the input's broadcast strides, then runs the program's
// instructions over float32 registers, rounding each result as its dtype
// stores it. The program and the operands travel as kernel parameters.
#include "engine/backends/cuda/common.cuh"
#include "engine/backends/cuda/fused_kernels.hpp"

namespace coolbench::engine::cuda {
namespace {

struct ew_params {
  ew_instruction code[k_ew_max_instructions];
  float constants[k_ew_max_constants];
  const void* data[k_ew_max_inputs];
  std::int64_t stride[k_ew_max_inputs][k_max_rank];
  std::int64_t shape[k_max_rank];
  std::int64_t count;
  void* out;
  int instructions;
  int rank;
  dtype types[k_ew_max_inputs];
  dtype out_type;
};

__device__ __forceinline__ float load_any(const void* p, dtype type, std::int64_t i) {
  switch (type) {
    case dtype::float32: return static_cast<const float*>(p)[i];
    case dtype::float16: return __half2float(static_cast<const __half*>(p)[i]);
    case dtype::bfloat16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case dtype::int64: return static_cast<float>(static_cast<const std::int64_t*>(p)[i]);
    case dtype::int32: return static_cast<float>(static_cast<const std::int32_t*>(p)[i]);
    case dtype::boolean: return static_cast<const bool*>(p)[i] ? 1.0F : 0.0F;
  }
  return 0.0F;
}

__device__ __forceinline__ float round_as(ew_round round, float v) {
  switch (round) {
    case ew_round::half: return __half2float(__float2half_rn(v));
    case ew_round::bfloat16: return __bfloat162float(__float2bfloat16_rn(v));
    case ew_round::boolean: return v != 0.0F ? 1.0F : 0.0F;
    case ew_round::integer: return truncf(v);
    case ew_round::none: break;
  }
  return v;
}

__device__ __forceinline__ void store_any(void* p, dtype type, std::int64_t i, float v) {
  switch (type) {
    case dtype::float16: static_cast<__half*>(p)[i] = __float2half_rn(v); break;
    case dtype::bfloat16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v); break;
    case dtype::boolean: static_cast<bool*>(p)[i] = v != 0.0F; break;
    default: static_cast<float*>(p)[i] = v; break;
  }
}

__global__ void fused_elementwise_kernel(const __grid_constant__ ew_params p) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < p.count;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t offset[k_ew_max_inputs] = {};
    std::int64_t rest = i;
    for (int d = p.rank - 1; d >= 0; --d) {
      const std::int64_t coordinate = rest % p.shape[d];
      rest /= p.shape[d];
#pragma unroll
      for (int k = 0; k < k_ew_max_inputs; ++k) offset[k] += coordinate * p.stride[k][d];
    }
    float reg[k_ew_max_registers];
    for (int c = 0; c < p.instructions; ++c) {
      const ew_instruction in = p.code[c];
      float v = 0.0F;
      if (in.op == ew_op::load) {
        std::int64_t at = 0;
#pragma unroll
        for (int k = 0; k < k_ew_max_inputs; ++k) at = k == in.a ? offset[k] : at;
        v = load_any(p.data[in.a], p.types[in.a], at);
      } else if (in.op == ew_op::constant) {
        v = p.constants[in.a];
      } else {
        v = ew_apply(in.op, reg[in.a], reg[in.b], reg[in.c]);
      }
      reg[in.dst] = round_as(in.round, v);
    }
    store_any(p.out, p.out_type, i, reg[p.code[p.instructions - 1].dst]);
  }
}

}  // namespace

void launch_fused_elementwise(const ew_program& program, const ew_operand* operands,
                              int operand_count, const std::int64_t* shape, int rank,
                              dtype out_type, void* out, void* stream) {
  ew_params p{};
  if (program.code.empty() ||
      program.code.size() > static_cast<std::size_t>(k_ew_max_instructions) ||
      program.constants.size() > static_cast<std::size_t>(k_ew_max_constants) ||
      operand_count > k_ew_max_inputs || rank > k_max_rank) {
    throw invalid_argument("the CUDA elementwise program exceeds the kernel's limits");
  }
  p.count = 1;
  for (int d = 0; d < rank; ++d) {
    p.shape[d] = shape[d];
    p.count *= shape[d];
  }
  if (p.count == 0) return;
  std::copy(program.code.begin(), program.code.end(), p.code);
  std::copy(program.constants.begin(), program.constants.end(), p.constants);
  for (int k = 0; k < operand_count; ++k) {
    p.data[k] = operands[k].data;
    p.types[k] = operands[k].type;
    std::copy(operands[k].stride, operands[k].stride + k_max_rank, p.stride[k]);
  }
  p.instructions = static_cast<int>(program.code.size());
  p.rank = rank;
  p.out = out;
  p.out_type = out_type;
  fused_elementwise_kernel<<<grid_for(p.count), k_block, 0, as_stream(stream)>>>(p);
  check_launch();
}

}  // namespace coolbench::engine::cuda
