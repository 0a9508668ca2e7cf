// The shape every CPU kernel has. A kernel reads its node's attributes and
// inputs, sizes its outputs itself (outputs arrive default-constructed) and
// fills them. Kernels live in one header per op family (its .cpp split by
// sub-family where it would grow large); backend.cpp keeps the table that
// maps op types to them, beside supports().
#pragma once

#include <span>
#include <string_view>

#include "coolbench/engine/graph.hpp"
#include "coolbench/engine/tensor.hpp"

namespace coolbench::engine::cpu {

/// `inputs[i]` is nullptr for an omitted optional input. Throws
/// invalid_argument (naming the node: n.describe()) for inputs the op does
/// not accept: wrong dtype, incompatible shapes.
using kernel_fn = void (*)(const node& n, std::span<const tensor* const> inputs,
                           std::span<tensor> outputs);

struct kernel_entry {
  std::string_view op_type;
  kernel_fn run;
};

}  // namespace coolbench::engine::cpu
