// Shape rules of the ops that move, reshape, select or create data without
// arithmetic on it: Reshape, Transpose, Squeeze, Unsqueeze, Concat, Split,
// Slice, Gather, Shape, Size, ConstantOfShape, Constant, Expand, Range, Flatten.
#include "engine/shape_inference/rules.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace coolbench::engine::shape_rules {

namespace {

// Dimensions of a shape given as an input (Expand, ConstantOfShape): from
// its contents, or only the count when its own shape is known. A count
// beyond what contents track leaves the rank unknown: the length comes from
// the model, and a corrupt one must not size an allocation (the kernel
// checks the real tensor when the node runs).
std::optional<std::vector<dimension>> shape_operand(const op_context& c, std::size_t i) {
  if (const auto& content = c.content(i)) {
    std::vector<dimension> dims;
    for (const auto& e : *content) dims.push_back(to_dimension(e));
    return dims;
  }
  const shape_info& s = c.shape(i);
  if (s.rank_known && s.dims.size() == 1 && is_known(s.dims[0]) &&
      s.dims[0].value <= k_max_tracked_contents) {
    return std::vector<dimension>(static_cast<std::size_t>(s.dims[0].value));
  }
  return std::nullopt;
}

// Removes the dimensions both lists hold (the same number or the same
// symbol): what is left is what a Reshape's -1 has to account for.
void cancel_common(std::vector<dimension>& from, std::vector<dimension>& to) {
  for (auto it = to.begin(); it != to.end();) {
    const auto match = std::find_if(from.begin(), from.end(), [&](const dimension& d) {
      return is_known(*it) ? d.value == it->value : !it->symbol.empty() && d.symbol == it->symbol;
    });
    if (match == from.end()) {
      ++it;
      continue;
    }
    from.erase(match);
    it = to.erase(it);
  }
}

// The product of the dimensions when all are numbers and it fits in int64.
std::optional<std::int64_t> product_of_known(const std::vector<dimension>& dims) {
  std::int64_t product = 1;
  for (const auto& d : dims) {
    if (!is_known(d) || __builtin_mul_overflow(product, d.value, &product)) return std::nullopt;
  }
  return product;
}

}  // namespace

std::vector<shape_info> reshape(const op_context& c) {
  const shape_info& data = c.shape(0);
  const auto& content = c.content(1);
  if (!content) {
    const auto dims = shape_operand(c, 1);
    return {dims ? with_type_of(data, *dims) : rank_unknown(data)};
  }
  const bool allow_zero = c.n.get<std::int64_t>("allowzero", 0) != 0;
  std::vector<dimension> dims;
  std::optional<std::size_t> inferred;
  for (std::size_t d = 0; d < content->size(); ++d) {
    const symbolic_int& e = (*content)[d];
    if (e.value && *e.value == 0 && !allow_zero) {
      dims.push_back(data.rank_known && d < data.dims.size() ? data.dims[d] : dimension{});
    } else if (e.value && *e.value == -1) {
      inferred = d;
      dims.emplace_back();
    } else {
      dims.push_back(to_dimension(e));
    }
  }
  if (!data.rank_known) return {with_type_of(data, dims)};
  std::vector<dimension> rest_in = data.dims;
  std::vector<dimension> rest_out = dims;
  if (inferred) rest_out.erase(rest_out.begin() + static_cast<std::ptrdiff_t>(*inferred));
  cancel_common(rest_in, rest_out);
  const auto in_product = product_of_known(rest_in);
  const auto out_product = product_of_known(rest_out);
  const auto target = [&] { return shape_info{true, data.type, true, dims}.describe(); };
  if (inferred) {
    if (in_product && out_product && *out_product != 0) {
      if (*in_product % *out_product != 0) {
        inconsistent(c.n, "cannot reshape " + data.describe() + " to " + target() +
                              ": no size for the -1 dimension fits");
      }
      dims[*inferred] = known(*in_product / *out_product);
    } else if (rest_out.empty() && rest_in.size() == 1) {
      dims[*inferred] = rest_in[0];  // the one input dimension nothing else accounts for
    }
  } else if (in_product && out_product && *in_product != *out_product) {
    inconsistent(c.n, "cannot reshape " + data.describe() + " to " + target() +
                          " (the element counts differ)");
  }
  return {with_type_of(data, std::move(dims))};
}

std::vector<shape_info> transpose(const op_context& c) {
  const shape_info& data = c.shape(0);
  if (!data.rank_known) return {data};
  int_list reversed(data.dims.size());
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  const int_list perm = c.n.get<int_list>("perm", reversed);
  if (perm.size() != data.dims.size()) return {unknown_dims_like(data)};
  std::vector<dimension> dims;
  for (const std::int64_t p : perm) {
    const auto axis = normalized_axis(p, data.dims.size());
    if (!axis) return {unknown_dims_like(data)};
    dims.push_back(data.dims[*axis]);
  }
  return {with_type_of(data, std::move(dims))};
}

std::vector<shape_info> squeeze(const op_context& c) {
  const shape_info& data = c.shape(0);
  shape_info out = rank_unknown(data);
  bool given = false;
  const auto axes = axes_of(c, given);
  if (!data.rank_known || !axes) return {out};
  std::vector<bool> drop(data.dims.size(), false);
  if (axes->empty()) {
    for (std::size_t d = 0; d < data.dims.size(); ++d) {
      if (!is_known(data.dims[d])) return {out};  // it may or may not be 1
      drop[d] = data.dims[d].value == 1;
    }
  } else {
    for (const std::int64_t a : *axes) {
      const auto axis = normalized_axis(a, data.dims.size());
      if (!axis) return {out};
      drop[*axis] = true;
    }
  }
  out.rank_known = true;
  for (std::size_t d = 0; d < data.dims.size(); ++d) {
    if (!drop[d]) out.dims.push_back(data.dims[d]);
  }
  return {out};
}

std::vector<shape_info> unsqueeze(const op_context& c) {
  const shape_info& data = c.shape(0);
  shape_info out = rank_unknown(data);
  bool given = false;
  const auto axes = axes_of(c, given);
  if (!data.rank_known || !axes || !given) return {out};
  const std::size_t rank = data.dims.size() + axes->size();
  std::vector<bool> inserted(rank, false);
  for (const std::int64_t a : *axes) {
    const auto axis = normalized_axis(a, rank);
    if (!axis) return {out};
    inserted[*axis] = true;
  }
  out.rank_known = true;
  std::size_t next = 0;
  for (std::size_t d = 0; d < rank; ++d) {
    out.dims.push_back(inserted[d] || next >= data.dims.size() ? known(1) : data.dims[next++]);
  }
  return {out};
}

std::vector<shape_info> concat(const op_context& c) {
  shape_info out = c.shape(0);
  for (std::size_t i = 0; i < c.count(); ++i) {
    if (!c.shape(i).rank_known) return {rank_unknown(out)};
  }
  if (!out.rank_known) return {out};
  const std::size_t rank = out.dims.size();
  const auto axis = normalized_axis(c.n.get<std::int64_t>("axis"), rank);
  if (!axis) return {unknown_dims_like(out)};
  std::int64_t total = 0;
  for (std::size_t i = 0; i < c.count(); ++i) {
    const shape_info& s = c.shape(i);
    if (s.dims.size() != rank) {
      inconsistent(c.n, "input 0 is " + c.shape(0).describe() + " but input " + std::to_string(i) +
                            " is " + s.describe() + " (ranks differ)");
    }
    for (std::size_t d = 0; d < rank; ++d) {
      if (d == *axis) continue;
      dimension& merged = out.dims[d];
      const dimension& dim = s.dims[d];
      if (is_known(merged) && is_known(dim) && merged.value != dim.value) {
        inconsistent(c.n, "input 0 is " + c.shape(0).describe() + " but input " +
                              std::to_string(i) + " is " + s.describe() +
                              " (they must match except on axis " + std::to_string(*axis) + ")");
      }
      if (!is_known(merged) && (is_known(dim) || merged.symbol != dim.symbol)) {
        merged = is_known(dim) ? dim : dimension{};
      }
    }
    const dimension& along = s.dims[*axis];
    total = (total < 0 || !is_known(along)) ? -1 : total + along.value;
  }
  out.dims[*axis] = total >= 0 ? known(total) : dimension{};
  return {out};
}

std::vector<shape_info> split(const op_context& c) {
  const shape_info& data = c.shape(0);
  const std::size_t parts = c.n.outputs.size();
  std::vector<shape_info> outs(parts, rank_unknown(data));
  if (!data.rank_known) return outs;
  const auto axis = normalized_axis(c.n.get<std::int64_t>("axis", 0), data.dims.size());
  if (!axis) return {};
  std::optional<int_list> sizes;
  const dimension& dim = data.dims[*axis];
  if (c.present(1)) {
    sizes = c.ints(1);
  } else if (c.n.has("split")) {
    sizes = c.n.get<int_list>("split");
  } else if (is_known(dim) && parts > 0) {
    const auto count = static_cast<std::int64_t>(parts);
    const std::int64_t chunk =
        c.n.has("num_outputs") ? (dim.value + count - 1) / count : dim.value / count;
    sizes = int_list{};
    for (std::int64_t start = 0, i = 0; i < count; ++i, start += chunk) {
      sizes->push_back(std::clamp<std::int64_t>(dim.value - start, 0, chunk));
    }
  }
  for (std::size_t i = 0; i < parts; ++i) {
    outs[i].rank_known = true;
    outs[i].dims = data.dims;
    outs[i].dims[*axis] = sizes && sizes->size() == parts ? known((*sizes)[i]) : dimension{};
  }
  return outs;
}

std::int64_t slice_count(std::int64_t dim, std::int64_t start, std::int64_t end,
                         std::int64_t step) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<std::int64_t>(start, 0, dim);
    end = std::clamp<std::int64_t>(end, 0, dim);
    return end > start ? (end - start - 1) / step + 1 : 0;
  }
  // min/max, not std::clamp: on an empty axis the bounds cross (0 > -1),
  // where clamp is undefined; this is the kernel's arithmetic.
  start = std::min(std::max<std::int64_t>(start, 0), dim - 1);
  end = std::min(std::max<std::int64_t>(end, -1), dim - 1);
  if (start <= end) return 0;
  return step == std::numeric_limits<std::int64_t>::min() ? 1 : (start - end - 1) / -step + 1;
}

std::optional<slice_params> slice_params_of(const op_context& c, std::size_t rank) {
  slice_params p;
  if (!c.present(1) && c.n.has("starts")) {  // opset < 10
    p.starts = c.n.get<int_list>("starts");
    p.ends = c.n.get<int_list>("ends");
    if (c.n.has("axes")) p.axes = c.n.get<int_list>("axes");
  } else {
    const auto starts = c.ints(1);
    const auto ends = c.ints(2);
    if (!starts || !ends) return std::nullopt;
    p.starts = *starts;
    p.ends = *ends;
    if (c.present(3)) {
      const auto axes = c.ints(3);
      if (!axes) return std::nullopt;
      p.axes = *axes;
    }
    if (c.present(4)) {
      const auto steps = c.ints(4);
      if (!steps) return std::nullopt;
      p.steps = *steps;
    }
  }
  if (p.axes.empty()) {
    p.axes.resize(p.starts.size());
    std::iota(p.axes.begin(), p.axes.end(), 0);
  }
  if (p.steps.empty()) p.steps.assign(p.starts.size(), 1);
  if (p.ends.size() != p.starts.size() || p.axes.size() != p.starts.size() ||
      p.steps.size() != p.starts.size()) {
    return std::nullopt;
  }
  for (auto& a : p.axes) {
    const auto axis = normalized_axis(a, rank);
    if (!axis) return std::nullopt;
    a = static_cast<std::int64_t>(*axis);
  }
  if (std::find(p.steps.begin(), p.steps.end(), 0) != p.steps.end()) return std::nullopt;
  return p;
}

std::vector<shape_info> slice(const op_context& c) {
  const shape_info& data = c.shape(0);
  if (!data.rank_known) return {data};
  const auto p = slice_params_of(c, data.dims.size());
  if (!p) return {unknown_dims_like(data)};
  shape_info out = data;
  for (std::size_t i = 0; i < p->axes.size(); ++i) {
    dimension& dim = out.dims[static_cast<std::size_t>(p->axes[i])];
    dim = is_known(dim) ? known(slice_count(dim.value, p->starts[i], p->ends[i], p->steps[i]))
                        : dimension{};
  }
  return {out};
}

std::vector<shape_info> gather(const op_context& c) {
  const shape_info& data = c.shape(0);
  const shape_info& indices = c.shape(1);
  shape_info out = rank_unknown(data);
  if (!data.rank_known || !indices.rank_known) return {out};
  const auto axis = normalized_axis(c.n.get<std::int64_t>("axis", 0), data.dims.size());
  if (!axis) return {out};
  out.rank_known = true;
  out.dims.assign(data.dims.begin(), data.dims.begin() + static_cast<std::ptrdiff_t>(*axis));
  out.dims.insert(out.dims.end(), indices.dims.begin(), indices.dims.end());
  out.dims.insert(out.dims.end(), data.dims.begin() + static_cast<std::ptrdiff_t>(*axis) + 1,
                  data.dims.end());
  return {out};
}

std::pair<std::size_t, std::size_t> shape_range(const node& n, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  const auto bound = [r](std::int64_t v) {
    return std::clamp<std::int64_t>(v < 0 ? v + r : v, 0, r);
  };
  const std::int64_t start = bound(n.get<std::int64_t>("start", 0));
  const std::int64_t end = bound(n.get<std::int64_t>("end", r));
  return {static_cast<std::size_t>(start), static_cast<std::size_t>(std::max(start, end))};
}

std::vector<shape_info> shape_op(const op_context& c) {
  const shape_info& data = c.shape(0);
  if (!data.rank_known) return {typed(dtype::int64, {dimension{}})};
  const auto [start, end] = shape_range(c.n, data.dims.size());
  return {typed(dtype::int64, {known(static_cast<std::int64_t>(end - start))})};
}

std::vector<shape_info> size_op(const op_context&) { return {typed(dtype::int64, {})}; }

std::vector<shape_info> constant_of_shape(const op_context& c) {
  const dtype type = c.n.has("value") ? c.n.get<tensor>("value").type() : dtype::float32;
  const auto dims = shape_operand(c, 0);
  return {dims ? typed(type, *dims) : typed(type)};
}

std::vector<shape_info> constant(const op_context& c) {
  if (c.n.has("value")) return {of_tensor(c.n.get<tensor>("value"))};
  if (c.n.has("value_float")) return {typed(dtype::float32, {})};
  if (c.n.has("value_int")) return {typed(dtype::int64, {})};
  if (c.n.has("value_floats")) {
    const auto count = c.n.get<std::vector<float>>("value_floats").size();
    return {typed(dtype::float32, {known(static_cast<std::int64_t>(count))})};
  }
  if (c.n.has("value_ints")) {
    return {typed(dtype::int64,
                  {known(static_cast<std::int64_t>(c.n.get<int_list>("value_ints").size()))})};
  }
  return {};
}

std::vector<shape_info> expand(const op_context& c) {
  const shape_info& data = c.shape(0);
  const auto target = shape_operand(c, 1);
  if (!data.rank_known || !target) return {rank_unknown(data)};
  // A target dimension of 1 keeps the data's; broadcasting says the same.
  return {with_type_of(
      data,
      broadcast_dims(c.n, {data.dims, *target},
                     {data.describe(), shape_info{true, dtype::int64, true, *target}.describe()}))};
}

namespace {

std::optional<double> scalar_number(const tensor* t) {
  if (t == nullptr || t->size() != 1) return std::nullopt;
  switch (t->type()) {
    case dtype::float32: return t->data<float>()[0];
    case dtype::int64: return static_cast<double>(t->data<std::int64_t>()[0]);
    case dtype::int32: return t->data<std::int32_t>()[0];
    default: return std::nullopt;
  }
}

}  // namespace

std::vector<shape_info> range(const op_context& c) {
  shape_info out = c.shape(0);
  out.rank_known = true;
  out.dims = {dimension{}};
  const auto start = scalar_number(c.value.size() > 0 ? c.value[0] : nullptr);
  const auto limit = scalar_number(c.value.size() > 1 ? c.value[1] : nullptr);
  const auto delta = scalar_number(c.value.size() > 2 ? c.value[2] : nullptr);
  // Exact for the integer ranges shapes use; large or float ranges only
  // when the count is far from the precision of a double.
  if (start && limit && delta && *delta != 0 && std::isfinite(*start) && std::isfinite(*limit) &&
      std::isfinite(*delta)) {
    const double steps = std::ceil((*limit - *start) / *delta);
    if (steps < 0x1p52)
      out.dims[0] = known(std::max<std::int64_t>(static_cast<std::int64_t>(steps), 0));
  }
  // Range(0, n, 1) of a symbolic n, as exporters write positions and masks.
  const auto element = [&](std::size_t i) -> std::optional<symbolic_int> {
    const auto& content = c.content(i);
    if (!content || content->size() != 1) return std::nullopt;
    return content->front();
  };
  const auto first = element(0);
  const auto step = element(2);
  const auto end = element(1);
  if (first && first->value == 0 && step && step->value == 1 && end && !end->value) {
    out.dims[0] = dimension{-1, end->symbol};
  }
  return {out};
}

std::vector<shape_info> flatten(const op_context& c) {
  const shape_info& data = c.shape(0);
  if (!data.rank_known) return {with_type_of(data, {dimension{}, dimension{}})};
  const auto rank = static_cast<std::int64_t>(data.dims.size());
  std::int64_t axis = c.n.get<std::int64_t>("axis", 1);
  if (axis < -rank || axis > rank) return {with_type_of(data, {dimension{}, dimension{}})};
  if (axis < 0) axis += rank;
  const auto split_at = data.dims.begin() + axis;
  // A group of one dimension keeps it, symbol and all.
  const auto merged = [](std::vector<dimension> group) {
    if (group.size() == 1) return group[0];
    const auto product = product_of_known(group);
    return product ? known(*product) : dimension{};
  };
  return {with_type_of(
      data, {merged({data.dims.begin(), split_at}), merged({split_at, data.dims.end()})})};
}

}  // namespace coolbench::engine::shape_rules
