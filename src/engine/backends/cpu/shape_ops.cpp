#include "engine/backends/cpu/shape_ops.hpp"

#include <vector>

namespace coolbench::engine::cpu {

std::span<const kernel_entry> shape_kernels() {
  static const std::vector<kernel_entry> table = [] {
    std::vector<kernel_entry> joined;
    for (const auto part :
         {shape_view_kernels(), shape_select_kernels(), shape_generator_kernels()}) {
      joined.insert(joined.end(), part.begin(), part.end());
    }
    return joined;
  }();
  return table;
}

}  // namespace coolbench::engine::cpu
