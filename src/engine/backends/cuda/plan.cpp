#include "engine/backends/cuda/plan.hpp"

#include <algorithm>

namespace coolbench::engine::cuda {

shape_t dense_strides(const shape_t& shape) {
  shape_t strides(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

index_plan iteration_plan(const op_call& call, const shape_t& shape) {
  if (shape.size() > static_cast<std::size_t>(k_max_rank)) {
    call.fail("rank " + std::to_string(shape.size()) + " is over the CUDA kernels' " +
              std::to_string(k_max_rank));
  }
  index_plan plan;
  plan.rank = static_cast<int>(shape.size());
  plan.count = element_count(shape);
  std::copy(shape.begin(), shape.end(), plan.shape);
  return plan;
}

index_plan broadcast_plan(const op_call& call, std::span<const shape_t* const> operands,
                          shape_t& out_shape) {
  std::size_t rank = 0;
  for (const shape_t* s : operands) rank = std::max(rank, s->size());
  out_shape.assign(rank, 1);
  for (const shape_t* s : operands) {
    const std::size_t lead = rank - s->size();
    for (std::size_t d = 0; d < s->size(); ++d) {
      std::int64_t& o = out_shape[lead + d];
      if ((*s)[d] == o || (*s)[d] == 1) continue;
      if (o != 1) {
        std::string got;
        for (const shape_t* u : operands) got += (got.empty() ? "" : " and ") + to_string(*u);
        call.fail("expected input shapes that broadcast, got " + got);
      }
      o = (*s)[d];
    }
  }
  index_plan plan = iteration_plan(call, out_shape);
  plan.contiguous = true;
  for (std::size_t k = 0; k < operands.size(); ++k) {
    const shape_t& s = *operands[k];
    if (s != out_shape) plan.contiguous = false;
    const shape_t strides = dense_strides(s);
    const std::size_t lead = rank - s.size();
    for (std::size_t d = 0; d < s.size(); ++d) {
      plan.stride[k][lead + d] = s[d] == 1 ? 0 : strides[d];
    }
  }
  const shape_t out_strides = dense_strides(out_shape);
  std::copy(out_strides.begin(), out_strides.end(), plan.stride[3]);
  return plan;
}

std::int64_t normalize_axis(const op_call& call, std::int64_t axis, std::int64_t rank) {
  if (axis < -rank || axis >= rank) {
    call.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

}  // namespace coolbench::engine::cuda
