// The elementwise program interpreter: one thread per output element (a
// grid-stride loop) computes each input's offset from the element's
// coordinates and the input's broadcast strides, then runs the program's
// instructions over float32 registers, rounding each result as its dtype
// stores it. The program and the operands travel as kernel parameters.
// The launch merges the dims every operand steps through as one
// (plan_elementwise, launch_shapes.hpp): where every operand is dense or
// broadcast whole, the offsets are the index itself, with no division;
// elsewhere the coordinates cost a division a merged dim, in 32 bits where
// the sizes allow. Each program runs as a kernel of its own instead,
// generated and compiled at run time (ew_jit.hpp), unless COOLBENCH_EW_JIT=0
// or that kernel could not be made.
#include "engine/backends/cuda/common.cuh"
#include "engine/backends/cuda/ew_jit.hpp"
#include "engine/backends/cuda/fused_kernels.hpp"
#include "engine/backends/cuda/launch_shapes.hpp"

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

// Dense: every operand at offset i or 0 (ew_layout::dense); otherwise the
// offsets from the coordinates. Index: uint32_t where ew_layout::narrow.
template <bool Dense, class Index>
__global__ void fused_elementwise_kernel(const __grid_constant__ ew_params p) {
  const auto count = static_cast<Index>(p.count);
  for (Index i = blockIdx.x * Index{blockDim.x} + threadIdx.x; i < count;
       i += Index{gridDim.x} * blockDim.x) {
    Index offset[k_ew_max_inputs];
    if constexpr (Dense) {
#pragma unroll
      for (int k = 0; k < k_ew_max_inputs; ++k) offset[k] = p.stride[k][0] != 0 ? i : Index{0};
    } else {
      ew_offsets<Index>(p.rank, p.shape, p.stride, i, offset);
    }
    float reg[k_ew_max_registers];
    for (int c = 0; c < p.instructions; ++c) {
      const ew_instruction in = p.code[c];
      float v = 0.0F;
      if (in.op == ew_op::load) {
        Index at = 0;
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

std::string launch_fused_elementwise(const ew_program& program, const ew_operand* operands,
                                     int operand_count, const std::int64_t* shape, int rank,
                                     dtype out_type, void* out, void* stream) {
  ew_params p{};
  if (program.code.empty() ||
      program.code.size() > static_cast<std::size_t>(k_ew_max_instructions) ||
      program.constants.size() > static_cast<std::size_t>(k_ew_max_constants) ||
      operand_count > k_ew_max_inputs || rank > k_max_rank) {
    throw invalid_argument("the CUDA elementwise program exceeds the kernel's limits");
  }
  std::int64_t strides[k_ew_max_inputs][k_max_rank] = {};
  for (int k = 0; k < operand_count; ++k) {
    std::copy(operands[k].stride, operands[k].stride + k_max_rank, strides[k]);
  }
  const ew_layout l = plan_elementwise(shape, rank, strides, operand_count);
  if (l.count == 0) return {};  // nothing to run, so nothing slower ran
  p.count = l.count;
  p.rank = l.rank;
  std::copy(l.shape, l.shape + k_max_rank, p.shape);
  for (int k = 0; k < operand_count; ++k) {
    p.data[k] = operands[k].data;
    p.types[k] = operands[k].type;
    std::copy(l.stride[k], l.stride[k] + k_max_rank, p.stride[k]);
  }
  std::copy(program.code.begin(), program.code.end(), p.code);
  std::copy(program.constants.begin(), program.constants.end(), p.constants);
  p.instructions = static_cast<int>(program.code.size());
  p.out = out;
  p.out_type = out_type;
  const unsigned grid = grid_for(p.count);
  const cudaStream_t s = as_stream(stream);
  // The program as its own kernel when the generated kernels are on (ew_jit.hpp).
  std::string interpreted = "COOLBENCH_EW_JIT=0";
  if (ew_jit_enabled()) {
    ew_jit_signature signature{{}, out_type, l.rank, l.dense, l.narrow};
    for (int k = 0; k < operand_count; ++k) {
      signature.inputs.push_back(operands[k].type);
      if (l.dense && p.stride[k][0] == 0) signature.scalar |= 1U << k;
    }
    signature.vector = ew_jit_vector(signature, p.data, out, p.count);
    if (void* kernel = ew_jit_kernel(program, signature, stream, &interpreted)) {
      ew_jit_params jp{};
      for (int k = 0; k < operand_count; ++k) {
        jp.data[k] = p.data[k];
        for (int d = 0; d < k_max_rank; ++d) jp.stride[k][d] = p.stride[k][d];
      }
      for (int d = 0; d < k_max_rank; ++d) jp.shape[d] = p.shape[d];
      jp.count = p.count;
      jp.out = out;
      jp.rank = p.rank;
      void* arguments[] = {&jp};
      // With a vector, a thread takes that many elements at once.
      const cudaError_t launched = cudaLaunchKernel(static_cast<const void*>(kernel),
                                                    dim3(grid_for(p.count / signature.vector)),
                                                    dim3(k_block), arguments, 0, s);
      if (launched == cudaSuccess) return {};
      // A launch refused (not a fault of earlier work, which would be sticky and shows below):
      // the interpreter runs this program from now on.
      (void)cudaGetLastError();
      ew_jit_drop(kernel, cudaGetErrorString(launched));
      interpreted = std::string("launching a generated kernel: ") + cudaGetErrorString(launched);
    }
  }
  if (l.dense && l.narrow) {
    fused_elementwise_kernel<true, std::uint32_t><<<grid, k_block, 0, s>>>(p);
  } else if (l.dense) {
    fused_elementwise_kernel<true, std::int64_t><<<grid, k_block, 0, s>>>(p);
  } else if (l.narrow) {
    fused_elementwise_kernel<false, std::uint32_t><<<grid, k_block, 0, s>>>(p);
  } else {
    fused_elementwise_kernel<false, std::int64_t><<<grid, k_block, 0, s>>>(p);
  }
  check_launch();
  return interpreted;
}

}  // namespace coolbench::engine::cuda
