// Shape rules of the convolutional-network ops: Conv, MaxPool, AveragePool
// (the window geometry the kernels use, engine/window.hpp), the global pools,
// BatchNormalization; and GatherElements (the indices' shape).
#include <string>
#include <utility>
#include <vector>

#include "coolbench/core/error.hpp"
#include "engine/shape_inference/rules.hpp"
#include "engine/window.hpp"

namespace coolbench::engine::shape_rules {
namespace {

// [N, channels, output sizes]: each spatial size from the input's when that
// is known, unknown otherwise.
shape_info windowed(const op_context& c, const dimension& channels,
                    const std::vector<std::int64_t>& kernel) {
  const shape_info& x = c.shape(0);
  if (!x.rank_known) return rank_unknown(x);
  if (x.dims.size() < 3) {
    inconsistent(c.n, "expected X of rank >= 3 ([N, C, spatial...]), got " + x.describe());
  }
  const std::size_t spatial = x.dims.size() - 2;
  std::vector<dimension> dims = {x.dims[0], channels};
  try {
    const window_attributes a = read_window_attributes(c.n, spatial, kernel);
    for (std::size_t d = 0; d < spatial; ++d) {
      const dimension& in = x.dims[d + 2];
      dims.push_back(is_known(in) ? known(resolve_window_axis(c.n, a, d, in.value).out)
                                  : dimension{});
    }
  } catch (const invalid_argument& e) {
    inconsistent(c.n, e.what());
  }
  return with_type_of(x, std::move(dims));
}

}  // namespace

std::vector<shape_info> conv(const op_context& c) {
  const shape_info& x = c.shape(0);
  const shape_info& w = c.shape(1);
  if (!x.rank_known) return {rank_unknown(x)};
  std::vector<std::int64_t> kernel;
  dimension maps;
  if (w.rank_known && w.dims.size() == x.dims.size()) {
    maps = w.dims[0];
    for (std::size_t d = 2; d < w.dims.size(); ++d) {
      if (!is_known(w.dims[d])) {
        kernel.clear();
        break;
      }
      kernel.push_back(w.dims[d].value);
    }
  }
  if (kernel.empty() && !c.n.has("kernel_shape")) return {unknown_dims_like(x)};
  return {windowed(c, maps, kernel)};
}

std::vector<shape_info> pool(const op_context& c) {
  const shape_info& x = c.shape(0);
  if (!x.rank_known || x.dims.size() < 2) return {x};
  return {windowed(c, x.dims[1], {})};
}

std::vector<shape_info> global_pool(const op_context& c) {
  const shape_info& x = c.shape(0);
  if (!x.rank_known || x.dims.size() < 2) return {x};
  std::vector<dimension> dims(x.dims.size(), known(1));
  dims[0] = x.dims[0];
  dims[1] = x.dims[1];
  return {with_type_of(x, std::move(dims))};
}

std::vector<shape_info> gather_elements(const op_context& c) {
  const shape_info& indices = c.shape(1);
  if (!indices.rank_known) return {rank_unknown(c.shape(0))};
  return {with_type_of(c.shape(0), indices.dims)};
}

// GatherND: indices [..., q] pick slices of data past its batch dims: the
// output is indices' leading dims, then data's dims after the batch dims and
// the q indexed ones. The last index dim must be a known number.
std::vector<shape_info> gather_nd(const op_context& c) {
  const shape_info& data = c.shape(0);
  const shape_info& indices = c.shape(1);
  if (!data.rank_known || !indices.rank_known || indices.dims.empty() ||
      !is_known(indices.dims.back())) {
    return {rank_unknown(data)};
  }
  const auto batch = static_cast<std::size_t>(c.n.get<std::int64_t>("batch_dims", 0));
  const auto q = static_cast<std::size_t>(indices.dims.back().value);
  if (batch + q > data.dims.size()) {
    inconsistent(c.n, "indices " + indices.describe() + " with batch_dims " +
                          std::to_string(batch) + " index past the rank of data " +
                          data.describe());
  }
  std::vector<dimension> dims(indices.dims.begin(), indices.dims.end() - 1);
  dims.insert(dims.end(), data.dims.begin() + static_cast<std::ptrdiff_t>(batch + q),
              data.dims.end());
  return {with_type_of(data, std::move(dims))};
}

}  // namespace coolbench::engine::shape_rules
