#include "engine/backends/cpu/kernel_args.hpp"

#include "coolbench/core/error.hpp"

namespace coolbench::engine::cpu {

void fail(const node& n, const std::string& message) {
  throw invalid_argument(n.describe() + ": " + message);
}

const tensor& input(const node& n, inputs_t inputs, std::size_t index) {
  if (index >= inputs.size() || inputs[index] == nullptr) {
    fail(n, "expected input " + std::to_string(index) + ", got none");
  }
  return *inputs[index];
}

const tensor& require_input(const node& n, inputs_t inputs, std::size_t index, const char* what) {
  if (index >= inputs.size() || inputs[index] == nullptr) {
    fail(n, "expected input " + std::to_string(index) + " (" + what + "), got none");
  }
  return *inputs[index];
}

const tensor* optional_input(inputs_t inputs, std::size_t index) {
  return index < inputs.size() ? inputs[index] : nullptr;
}

std::size_t normalize_axis(const node& n, std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) {
    fail(n, "expected an axis in [" + std::to_string(-r) + ", " + std::to_string(r - 1) +
                "], got " + std::to_string(axis));
  }
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

std::int64_t product(const shape_t& shape, std::size_t begin, std::size_t end) {
  std::int64_t result = 1;
  for (std::size_t d = begin; d < end; ++d) result *= shape[d];
  return result;
}

}  // namespace coolbench::engine::cpu
