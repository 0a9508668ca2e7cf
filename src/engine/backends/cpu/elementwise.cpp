#include "engine/backends/cpu/elementwise.hpp"

#include <vector>

namespace coolbench::engine::cpu {

std::span<const kernel_entry> elementwise_kernels() {
  static const std::vector<kernel_entry> table = [] {
    std::vector<kernel_entry> joined;
    for (const auto part : {elementwise_unary_kernels(), elementwise_binary_kernels()}) {
      joined.insert(joined.end(), part.begin(), part.end());
    }
    return joined;
  }();
  return table;
}

}  // namespace coolbench::engine::cpu
