// The decode attention's launch (attention_decode.cu): one query row,
// chunks of keys over blocks, then their merge. launch_attention
// (attention.cu) calls it for attention_kernel::decode_split and
// decode_vector.
#pragma once

#include "engine/backends/cuda/attention.hpp"
#include "engine/backends/cuda/launch_shapes.hpp"

namespace coolbench::engine::cuda {

/// `scratch` holds attention_scratch_floats(plan) floats; `l` is the decode
/// plan (kernel, chunk and chunks) from plan_attention and choose().
void launch_decode_attention(dtype type, const void* q, const void* k, const void* v,
                             const void* bias, const bool* mask, void* out, float* scratch,
                             const attention_plan& plan, const attention_launch& l, void* stream);

}  // namespace coolbench::engine::cuda
