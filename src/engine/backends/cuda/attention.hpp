// Fused attention on the CUDA backend (coolbench.Attention, made by the
// attention fusion pass: engine/fusion/attention.hpp): a flash-style kernel
// for prefill and a split-K kernel for one query row (decode).
#pragma once

#include <cstdint>
#include <span>

#include "coolbench/engine/tensor.hpp"
#include "engine/backends/cuda/backend.hpp"

namespace coolbench::engine::cuda {

/// The coolbench.Attention entry (attention_ops.cpp).
std::span<const op_entry> attention_ops();

/// One attention: q [batch, heads, sq, head_dim], k and v [batch or 1,
/// heads or 1, sk, head_dim] and the output like q, each by its element
/// strides of batch, head and row (a row is head_dim contiguous elements;
/// k's and v's batch or head stride 0 where broadcast): [B, H, S, D] dense,
/// or [B, S, H·D] with the heads side by side as a QKV projection writes
/// them. Bias and mask broadcast to [batch, heads, sq, sk] by their strides.
struct attention_plan {
  std::int64_t batch = 0, heads = 0, sq = 0, sk = 0, head_dim = 0;
  std::int64_t q_stride[3] = {}, k_stride[3] = {}, v_stride[3] = {}, out_stride[3] = {};
  std::int64_t bias_stride[4] = {}, mask_stride[4] = {};
  float scale = 1;
  float mask_value = 0;
  bool causal = false;
  bool mask_keeps = false;
  bool zero_empty_rows = false;
};

/// Floats of scratch the launch needs (the split-K partials; 0 for prefill).
[[nodiscard]] std::int64_t attention_scratch_floats(const attention_plan& plan);

/// Blocks an SM the Hopper wgmma kernel holds at once on the current GPU (cudaOccupancy, its
/// plain score form) over `type` (float16 or bfloat16) at `head_dim` (64 or 128), on 64-key tiles
/// (`keys64`, the wgmma64 kernel) or 128-key ones; 0 where this build has no sm_90a code or the
/// GPU is not of compute capability 9.0.
[[nodiscard]] int wgmma_attention_blocks_per_sm(dtype type, std::int64_t head_dim, bool keys64);

/// out = softmax(scale · q kᵀ (+ bias, masked, causal)) v, accumulated in
/// float32. `scratch` holds attention_scratch_floats(plan) floats.
void launch_attention(dtype type, const void* q, const void* k, const void* v, const void* bias,
                      const bool* mask, void* out, float* scratch, const attention_plan& plan,
                      void* stream);

}  // namespace coolbench::engine::cuda
