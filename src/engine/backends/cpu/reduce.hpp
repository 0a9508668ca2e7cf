// CPU kernels that reduce along axes: ReduceMean/Sum/Max, Softmax,
// LogSoftmax and LayerNormalization. float16 is computed in float32.
#pragma once

#include <span>

#include "engine/backends/cpu/kernel.hpp"

namespace coolbench::engine::cpu {

/// ReduceMean, ReduceSum, ReduceMax, Softmax, LogSoftmax, LayerNormalization.
[[nodiscard]] std::span<const kernel_entry> reduce_kernels();

}  // namespace coolbench::engine::cpu
