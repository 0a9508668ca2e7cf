// What the CPU-vs-CUDA parity test's case files share: how a case's inputs
// are drawn, the case and suite types, and node construction. The cases live
// in cuda_parity_test.cpp (elementwise, data, reductions, MatMul) and
// cuda_parity_nn.cpp (Conv, pools, BatchNormalization, GatherElements).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "coolbench/engine/graph.hpp"
#include "coolbench/engine/tensor.hpp"

namespace coolbench::engine::parity {

using int_list = std::vector<std::int64_t>;

// How random inputs are drawn.
enum class values : std::uint8_t { normal, positive, away_from_zero, small_ints, indices };

struct input_spec {
  input_spec(dtype t, shape_t s, values k = values::normal, int_list fixed_values = {},
             std::int64_t range = 0)
      : type(t), shape(std::move(s)), kind(k), fixed(std::move(fixed_values)), index_range(range) {}
  dtype type;
  shape_t shape;
  values kind;
  int_list fixed;            // int64 contents given exactly (shapes, axes), when not empty
  std::int64_t index_range;  // for values::indices: [-range, range)
};

struct parity_case {
  std::string label;
  node n;
  std::vector<input_spec> inputs;  // type float32 in a spec stands for the case's dtype
  std::size_t outputs = 1;
};

inline node make_node(std::string op, std::size_t inputs, std::size_t outputs,
                      std::map<std::string, attribute> attributes = {}) {
  node n;
  n.name = op + "_node";
  n.op_type = std::move(op);
  for (std::size_t i = 0; i < inputs; ++i) n.inputs.push_back("in" + std::to_string(i));
  for (std::size_t i = 0; i < outputs; ++i) n.outputs.push_back("out" + std::to_string(i));
  n.attributes = std::move(attributes);
  return n;
}

constexpr dtype f = dtype::float32;  // "the case's dtype" in specs
inline const std::vector<dtype> k_floats = {dtype::float32, dtype::float16, dtype::bfloat16};
inline const std::vector<dtype> k_numeric = {dtype::float32, dtype::float16, dtype::bfloat16,
                                             dtype::int64, dtype::int32};

struct suite {
  std::vector<std::pair<parity_case, std::vector<dtype>>> cases;
  void add(std::string label, node n, std::vector<input_spec> inputs, std::vector<dtype> types,
           std::size_t outputs = 1) {
    cases.push_back({parity_case{std::move(label), std::move(n), std::move(inputs), outputs},
                     std::move(types)});
  }
};

/// Conv, MaxPool, AveragePool, the global pools, BatchNormalization and
/// GatherElements (cuda_parity_nn.cpp).
void add_nn(suite& s);

}  // namespace coolbench::engine::parity
