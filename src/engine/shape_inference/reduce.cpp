// Shape rules of the ops that reduce along axes: ReduceMean/Sum/Max and
// LayerNormalization (its mean and inverse standard deviation outputs).
#include "engine/shape_inference/rules.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace coolbench::engine::shape_rules {

std::vector<shape_info> reduce(const op_context& c) {
  const shape_info& data = c.shape(0);
  const bool keepdims = c.n.get<std::int64_t>("keepdims", 1) != 0;
  bool given = false;
  const auto axes = axes_of(c, given);
  if (!data.rank_known) return {data};
  if (!axes) return {keepdims ? unknown_dims_like(data) : rank_unknown(data)};
  if (axes->empty() && c.n.get<std::int64_t>("noop_with_empty_axes", 0) != 0) return {data};
  std::vector<bool> reduced(data.dims.size(), axes->empty());
  for (const std::int64_t a : *axes) {
    const auto axis = normalized_axis(a, data.dims.size());
    if (!axis) return {unknown_dims_like(data)};
    reduced[*axis] = true;
  }
  std::vector<dimension> dims;
  for (std::size_t d = 0; d < data.dims.size(); ++d) {
    if (!reduced[d]) {
      dims.push_back(data.dims[d]);
    } else if (keepdims) {
      dims.push_back(known(1));
    }
  }
  return {with_type_of(data, std::move(dims))};
}

std::vector<shape_info> layer_norm(const op_context& c) {
  const shape_info& x = c.shape(0);
  if (!x.rank_known) return {x, typed(dtype::float32), typed(dtype::float32)};
  const auto axis = normalized_axis(c.n.get<std::int64_t>("axis", -1), x.dims.size());
  if (!axis) return {x};
  std::vector<dimension> stats(x.dims.begin(), x.dims.begin() + static_cast<std::ptrdiff_t>(*axis));
  stats.resize(x.dims.size(), known(1));
  return {x, typed(dtype::float32, stats), typed(dtype::float32, stats)};
}

}  // namespace coolbench::engine::shape_rules
