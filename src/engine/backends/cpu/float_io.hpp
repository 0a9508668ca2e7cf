// Reading and writing float32/float16 tensors as float32 values, for the
// kernels that compute in float32 whatever the stored precision.
#pragma once

#include <span>
#include <vector>

#include "coolbench/engine/graph.hpp"
#include "coolbench/engine/tensor.hpp"

namespace coolbench::engine::cpu {

/// float32 values of a float32 or float16 tensor. Float32 data is viewed in
/// place; float16 is widened into `storage`.
struct float_values {
  std::vector<float> storage;
  std::span<const float> values;
};

[[nodiscard]] float_values read_floats(const tensor& t);

/// The output tensor holding `values` in `type` (narrowed for float16).
[[nodiscard]] tensor make_output(dtype type, shape_t shape, const std::vector<float>& values);

/// Throws invalid_argument naming the node unless `t` is float32 or float16.
void require_float(const node& n, const tensor& t, const char* what);

}  // namespace coolbench::engine::cpu
