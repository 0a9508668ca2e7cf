// The score adjustments and row reductions every coolbench.Attention
// kernel shares (attention.cu's FMA and split-K kernels, attention_mma.cu's
// tensor-core kernels).
#pragma once

#include <cmath>

#include "engine/backends/cuda/attention.hpp"
#include "engine/backends/cuda/common.cuh"

namespace coolbench::engine::cuda {

// Bias, mask and causal flag applied to one raw score.
template <class T>
__device__ __forceinline__ float adjust(float x, const T* bias, const bool* mask,
                                        const attention_plan& p, std::int64_t b, std::int64_t h,
                                        std::int64_t i, std::int64_t j) {
  if (bias != nullptr) {
    x += load(bias, b * p.bias_stride[0] + h * p.bias_stride[1] + i * p.bias_stride[2] +
                        j * p.bias_stride[3]);
  }
  if (mask != nullptr && mask[b * p.mask_stride[0] + h * p.mask_stride[1] + i * p.mask_stride[2] +
                              j * p.mask_stride[3]] != p.mask_keeps) {
    x = p.mask_value;
  }
  if (p.causal && j > i + p.sk - p.sq) x = -INFINITY;
  return x;
}

// The query tile of a prefill block (blockIdx.y). With the causal flag the last tiles see the
// most keys, so they take the first block indices: the GPU starts blocks in index order (x
// fastest), and the longest then start first, not last behind a wave of short ones (longest
// first, as a list scheduler does).
__device__ __forceinline__ std::int64_t causal_tile(const attention_plan& p) {
  return p.causal ? std::int64_t{gridDim.y} - 1 - blockIdx.y : std::int64_t{blockIdx.y};
}

__device__ __forceinline__ float finish(float acc, float total, bool zero_empty_rows) {
  if (total > 0) return acc / total;
  return zero_empty_rows ? 0.0F : __int_as_float(0x7fc00000);  // NaN, as Softmax of all -inf
}

// The 4 threads of a row are adjacent lanes.
__device__ __forceinline__ float row_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffU, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffU, v, 2));
}
__device__ __forceinline__ float row_sum(float v) {
  v += __shfl_xor_sync(0xffffffffU, v, 1);
  return v + __shfl_xor_sync(0xffffffffU, v, 2);
}

}  // namespace coolbench::engine::cuda
