// Shape inference and constant evaluation in one walk (see
// shape_inference.hpp). Each operator the CPU backend runs has a rule below;
// a rule says only what it can derive and leaves the rest unknown.
#include "engine/shape_inference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <string_view>
#include <utility>
#include <variant>

#include "coolbench/engine/model.hpp"
#include "engine/backend.hpp"

namespace coolbench::engine {

bool shape_info::is_static() const noexcept {
  return rank_known &&
         std::all_of(dims.begin(), dims.end(), [](const dimension& d) { return d.value >= 0; });
}

shape_t shape_info::static_shape() const {
  if (!is_static()) throw invalid_argument("shape " + describe() + " is not fully known");
  shape_t shape;
  for (const auto& d : dims) shape.push_back(d.value);
  return shape;
}

std::string shape_info::describe() const {
  if (!rank_known) return "unknown rank";
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const auto& d = dims[i];
    text += (i == 0 ? "" : ", ") + (d.value >= 0       ? std::to_string(d.value)
                                    : d.symbol.empty() ? std::string("?")
                                                       : d.symbol);
  }
  return text + "]";
}

namespace {

using int_list = std::vector<std::int64_t>;

// One element of a small integer tensor (a shape being built by Shape →
// Gather → Concat): a number, a symbol, or neither. Lets Reshape and Expand
// get symbolic output shapes while the symbols are still unbound.
struct symbolic_int {
  std::optional<std::int64_t> value;
  std::string symbol;
};
using symbolic_ints = std::vector<symbolic_int>;

// Contents longer than this are not tracked: shapes have a handful of elements.
constexpr std::int64_t k_max_tracked_contents = 64;

dimension known(std::int64_t value) { return dimension{value, {}}; }
bool is_known(const dimension& d) { return d.value >= 0; }

shape_info typed(dtype type) {
  shape_info s;
  s.type_known = true;
  s.type = type;
  return s;
}

shape_info typed(dtype type, std::vector<dimension> dims) {
  shape_info s = typed(type);
  s.rank_known = true;
  s.dims = std::move(dims);
  return s;
}

shape_info with_type_of(const shape_info& source, std::vector<dimension> dims) {
  shape_info s = source;
  s.rank_known = true;
  s.dims = std::move(dims);
  return s;
}

shape_info unknown_dims_like(const shape_info& source) {
  shape_info s = source;
  for (auto& d : s.dims) d = dimension{};
  return s;
}

shape_info rank_unknown(const shape_info& source) {
  shape_info s = source;
  s.rank_known = false;
  s.dims.clear();
  return s;
}

shape_info of_tensor(const tensor& t) {
  std::vector<dimension> dims;
  for (const std::int64_t d : t.shape()) dims.push_back(known(d));
  return typed(t.type(), std::move(dims));
}

dimension to_dimension(const symbolic_int& element) {
  if (element.value) return *element.value >= 0 ? known(*element.value) : dimension{};
  return dimension{-1, element.symbol};
}

symbolic_int to_symbolic(const dimension& d) {
  if (is_known(d)) return {d.value, {}};
  return {std::nullopt, d.symbol};
}

[[noreturn]] void inconsistent(const node& n, const std::string& what) {
  throw model_error("inconsistent shapes in " + n.describe() + ": " + what +
                    "; fix the model or the bound dimensions");
}

std::optional<std::size_t> normalized_axis(std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

// What a rule sees of one node: per input its inferred shape, its value when
// known before run time, and its contents as symbolic integers.
struct op_context {
  const node& n;
  std::vector<shape_info> in;
  std::vector<const tensor*> value;
  std::vector<std::optional<symbolic_ints>> contents;

  [[nodiscard]] std::size_t count() const { return in.size(); }
  [[nodiscard]] bool present(std::size_t i) const {
    return i < n.inputs.size() && !n.inputs[i].empty();
  }
  [[nodiscard]] const shape_info& shape(std::size_t i) const {
    static const shape_info k_unknown;
    return i < in.size() ? in[i] : k_unknown;
  }
  /// The input's integers when it is a known int32/int64 tensor.
  [[nodiscard]] std::optional<int_list> ints(std::size_t i) const {
    if (i >= value.size() || value[i] == nullptr) return std::nullopt;
    const tensor& t = *value[i];
    if (t.type() == dtype::int64) {
      const auto v = t.data<std::int64_t>();
      return int_list(v.begin(), v.end());
    }
    if (t.type() == dtype::int32) {
      const auto v = t.data<std::int32_t>();
      return int_list(v.begin(), v.end());
    }
    return std::nullopt;
  }
  [[nodiscard]] const std::optional<symbolic_ints>& content(std::size_t i) const {
    static const std::optional<symbolic_ints> k_none;
    return i < contents.size() ? contents[i] : k_none;
  }
};

using rule_fn = std::vector<shape_info> (*)(const op_context&);

// ---------------------------------------------------------------------------
// Broadcasting, shared by the elementwise ops, MatMul's batch dimensions and
// Expand. `shown` is what a message prints for each operand.

std::vector<dimension> broadcast_dims(const node& n, const std::vector<std::vector<dimension>>& ops,
                                      const std::vector<std::string>& shown) {
  std::size_t rank = 0;
  for (const auto& dims : ops) rank = std::max(rank, dims.size());
  std::vector<dimension> result(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    std::optional<std::size_t> fixed_from;  // the operand with a number other than 1 here
    std::vector<std::string> open_symbols;  // of the operands not known here ("" unknown)
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const std::size_t lead = rank - ops[i].size();
      if (d < lead) continue;  // missing dimensions count as 1
      const dimension& dim = ops[i][d - lead];
      if (!is_known(dim)) {
        open_symbols.push_back(dim.symbol);
        continue;
      }
      if (dim.value == 1) continue;
      if (fixed_from) {
        const auto& other = ops[*fixed_from];
        const std::int64_t seen = other[d - (rank - other.size())].value;
        if (seen != dim.value) {
          inconsistent(n, shown[*fixed_from] + " and " + shown[i] + " do not broadcast (" +
                              std::to_string(seen) + " against " + std::to_string(dim.value) +
                              " in dimension " + std::to_string(d) + " of the result)");
        }
      }
      fixed_from = i;
    }
    if (fixed_from) {
      const auto& from = ops[*fixed_from];
      result[d] = from[d - (rank - from.size())];
    } else if (open_symbols.empty()) {
      result[d] = known(1);
    } else if (!open_symbols[0].empty() &&
               std::all_of(open_symbols.begin(), open_symbols.end(),
                           [&](const std::string& s) { return s == open_symbols[0]; })) {
      result[d] = dimension{-1, open_symbols[0]};
    }  // else unknown: an unknown dimension may be 1 or not
  }
  return result;
}

shape_info broadcast(const op_context& c, std::size_t first, std::size_t type_from) {
  shape_info out = c.shape(type_from);
  std::vector<std::vector<dimension>> ops;
  std::vector<std::string> shown;
  for (std::size_t i = first; i < c.count(); ++i) {
    if (!c.shape(i).rank_known) return rank_unknown(out);
    ops.push_back(c.shape(i).dims);
    shown.push_back(c.shape(i).describe());
  }
  out.rank_known = true;
  out.dims = broadcast_dims(c.n, ops, shown);
  return out;
}

// ---------------------------------------------------------------------------
// Rules.

std::vector<shape_info> same_as_input(const op_context& c) { return {c.shape(0)}; }

std::vector<shape_info> same_as_input_bool(const op_context& c) {
  shape_info s = c.shape(0);
  s.type_known = true;
  s.type = dtype::boolean;
  return {s};
}

std::vector<shape_info> broadcast_all(const op_context& c) { return {broadcast(c, 0, 0)}; }

std::vector<shape_info> compare(const op_context& c) {
  shape_info s = broadcast(c, 0, 0);
  s.type_known = true;
  s.type = dtype::boolean;
  return {s};
}

std::vector<shape_info> where(const op_context& c) { return {broadcast(c, 0, 1)}; }

std::vector<shape_info> dropout(const op_context& c) {
  return {c.shape(0), same_as_input_bool(c)[0]};
}

std::optional<dtype> onnx_dtype(std::int64_t code) {
  switch (code) {
    case 1: return dtype::float32;
    case 10: return dtype::float16;
    case 7: return dtype::int64;
    case 6: return dtype::int32;
    case 9: return dtype::boolean;
    default: return std::nullopt;
  }
}

std::vector<shape_info> cast(const op_context& c) {
  shape_info s = c.shape(0);
  const auto target = onnx_dtype(c.n.get<std::int64_t>("to"));
  s.type_known = target.has_value();
  s.type = target.value_or(dtype::float32);
  return {s};
}

std::vector<shape_info> matmul(const op_context& c) {
  const shape_info& a = c.shape(0);
  const shape_info& b = c.shape(1);
  shape_info out = rank_unknown(a);
  if (!a.rank_known || !b.rank_known || a.dims.empty() || b.dims.empty()) return {out};
  std::vector<dimension> ad = a.dims;
  std::vector<dimension> bd = b.dims;
  if (ad.size() == 1) ad.insert(ad.begin(), known(1));
  if (bd.size() == 1) bd.push_back(known(1));
  const dimension& k_a = ad.back();
  const dimension& k_b = bd[bd.size() - 2];
  if (is_known(k_a) && is_known(k_b) && k_a.value != k_b.value) {
    inconsistent(c.n, "A's last dimension (" + std::to_string(k_a.value) + ") differs from B's " +
                          (b.dims.size() == 1 ? "only" : "second-to-last") + " dimension (" +
                          std::to_string(k_b.value) + "): A is " + a.describe() + ", B is " +
                          b.describe());
  }
  const std::vector<std::vector<dimension>> batches = {{ad.begin(), ad.end() - 2},
                                                       {bd.begin(), bd.end() - 2}};
  out.rank_known = true;
  out.dims = broadcast_dims(c.n, batches, {"A " + a.describe(), "B " + b.describe()});
  if (a.dims.size() != 1) out.dims.push_back(ad[ad.size() - 2]);
  if (b.dims.size() != 1) out.dims.push_back(bd.back());
  return {out};
}

std::vector<shape_info> gemm(const op_context& c) {
  const shape_info& a = c.shape(0);
  const shape_info& b = c.shape(1);
  std::vector<dimension> dims(2);
  if (a.rank_known && b.rank_known && a.dims.size() == 2 && b.dims.size() == 2) {
    const bool trans_a = c.n.get<std::int64_t>("transA", 0) != 0;
    const bool trans_b = c.n.get<std::int64_t>("transB", 0) != 0;
    const dimension& k_a = a.dims[trans_a ? 0 : 1];
    const dimension& k_b = b.dims[trans_b ? 1 : 0];
    if (is_known(k_a) && is_known(k_b) && k_a.value != k_b.value) {
      inconsistent(c.n, "op(A) has " + std::to_string(k_a.value) + " columns but op(B) has " +
                            std::to_string(k_b.value) + " rows: A is " + a.describe() + ", B is " +
                            b.describe());
    }
    dims = {a.dims[trans_a ? 1 : 0], b.dims[trans_b ? 0 : 1]};
  }
  return {with_type_of(a, std::move(dims))};
}

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

// Squeeze/Unsqueeze/Reduce axes: the attribute (older opsets) or input 1.
// nullopt when input 1 is given but not known before run time.
std::optional<int_list> axes_of(const op_context& c, bool& given) {
  given = true;
  if (c.n.has("axes")) return c.n.get<int_list>("axes");
  if (c.present(1)) return c.ints(1);
  given = false;
  return int_list{};
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
    outs[i].dims = data.dims;
    outs[i].dims[*axis] = sizes && sizes->size() == parts ? known((*sizes)[i]) : dimension{};
  }
  return outs;
}

// Elements a Slice keeps of a dimension of `dim`, as the kernel counts them.
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

struct slice_params {
  int_list starts, ends, axes, steps;
};

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

// Opset 15's start/end of Shape: negative counts from the back, then clamp.
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

std::optional<double> scalar_number(const tensor* t) {
  if (t == nullptr || t->size() != 1) return std::nullopt;
  switch (t->type()) {
    case dtype::float32: return t->data<float>()[0];
    case dtype::int64: return static_cast<double>(t->data<std::int64_t>()[0]);
    case dtype::int32: return t->data<std::int32_t>()[0];
    default: return std::nullopt;
  }
}

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

// Sorted by op type. Every op the CPU backend runs should have a rule; one
// without a rule gets unknown outputs and is never folded.
constexpr std::pair<std::string_view, rule_fn> k_rules[] = {
    {"Abs", same_as_input},
    {"Add", broadcast_all},
    {"And", broadcast_all},
    {"Cast", cast},
    {"Clip", same_as_input},
    {"Concat", concat},
    {"Constant", constant},
    {"ConstantOfShape", constant_of_shape},
    {"CumSum", same_as_input},
    {"Div", broadcast_all},
    {"Dropout", dropout},
    {"Equal", compare},
    {"Erf", same_as_input},
    {"Exp", same_as_input},
    {"Expand", expand},
    {"Flatten", flatten},
    {"Gather", gather},
    {"Gelu", same_as_input},
    {"Gemm", gemm},
    {"Greater", compare},
    {"GreaterOrEqual", compare},
    {"Identity", same_as_input},
    {"IsNaN", same_as_input_bool},
    {"LayerNormalization", layer_norm},
    {"Less", compare},
    {"LessOrEqual", compare},
    {"Log", same_as_input},
    {"LogSoftmax", same_as_input},
    {"MatMul", matmul},
    {"Max", broadcast_all},
    {"Min", broadcast_all},
    {"Mul", broadcast_all},
    {"Neg", same_as_input},
    {"Not", same_as_input},
    {"Or", broadcast_all},
    {"Pow", broadcast_all},
    {"Range", range},
    {"Reciprocal", same_as_input},
    {"ReduceMax", reduce},
    {"ReduceMean", reduce},
    {"ReduceSum", reduce},
    {"Relu", same_as_input},
    {"Reshape", reshape},
    {"Shape", shape_op},
    {"Sigmoid", same_as_input},
    {"Size", size_op},
    {"Slice", slice},
    {"Softmax", same_as_input},
    {"Split", split},
    {"Sqrt", same_as_input},
    {"Squeeze", squeeze},
    {"Sub", broadcast_all},
    {"Tanh", same_as_input},
    {"Transpose", transpose},
    {"Trilu", same_as_input},
    {"Unsqueeze", unsqueeze},
    {"Where", where},
    {"Xor", broadcast_all},
};

static_assert(std::is_sorted(std::begin(k_rules), std::end(k_rules),
                             [](const auto& a, const auto& b) { return a.first < b.first; }),
              "find_rule searches k_rules by op type");

rule_fn find_rule(const node& n) {
  if (!n.domain.empty()) return nullptr;
  const auto it =
      std::lower_bound(std::begin(k_rules), std::end(k_rules), n.op_type,
                       [](const auto& e, const std::string& op) { return e.first < op; });
  return it != std::end(k_rules) && it->first == n.op_type ? it->second : nullptr;
}

// ---------------------------------------------------------------------------
// Contents: what a node's output holds, element by element, when it is a
// small integer vector built from shapes.

std::optional<symbolic_ints> contents_of(const tensor& t) {
  if (t.rank() > 1 || t.size() > k_max_tracked_contents) return std::nullopt;
  symbolic_ints result;
  if (t.type() == dtype::int64) {
    for (const std::int64_t v : t.data<std::int64_t>()) result.push_back({v, {}});
  } else if (t.type() == dtype::int32) {
    for (const std::int32_t v : t.data<std::int32_t>()) result.push_back({v, {}});
  } else {
    return std::nullopt;
  }
  return result;
}

std::optional<symbolic_ints> propagate_contents(const op_context& c) {
  const std::string& op = c.n.op_type;
  if (!c.n.domain.empty()) return std::nullopt;
  if (op == "Shape") {
    const shape_info& data = c.shape(0);
    if (!data.rank_known) return std::nullopt;
    const auto [start, end] = shape_range(c.n, data.dims.size());
    symbolic_ints result;
    for (std::size_t d = start; d < end; ++d) result.push_back(to_symbolic(data.dims[d]));
    return result;
  }
  const auto is_int = [](const shape_info& s) {
    return s.type_known && (s.type == dtype::int64 || s.type == dtype::int32);
  };
  if (op == "Identity" || op == "Squeeze" || op == "Unsqueeze" ||
      (op == "Cast" && is_int(c.shape(0)) && is_int(cast(c)[0]))) {
    return c.content(0);  // the same elements (a scalar becomes a 1-vector)
  }
  if (op == "Concat") {
    symbolic_ints result;
    for (std::size_t i = 0; i < c.count(); ++i) {
      if (!c.content(i) || c.shape(i).dims.size() > 1) return std::nullopt;
      result.insert(result.end(), c.content(i)->begin(), c.content(i)->end());
    }
    return result;
  }
  if (op == "Gather" && c.content(0) && c.shape(0).dims.size() == 1) {
    const auto indices = c.ints(1);
    if (!indices) return std::nullopt;
    const auto length = static_cast<std::int64_t>(c.content(0)->size());
    symbolic_ints result;
    for (std::int64_t i : *indices) {
      if (i < -length || i >= length) return std::nullopt;
      result.push_back((*c.content(0))[static_cast<std::size_t>(i < 0 ? i + length : i)]);
    }
    return result;
  }
  if (op == "Slice" && c.content(0) && c.shape(0).dims.size() == 1) {
    const auto p = slice_params_of(c, 1);
    if (!p || p->starts.size() != 1) return std::nullopt;
    const auto length = static_cast<std::int64_t>(c.content(0)->size());
    std::int64_t start = p->starts[0];
    const std::int64_t step = p->steps[0];
    const std::int64_t count = slice_count(length, start, p->ends[0], step);
    if (start < 0) start += length;
    start = step > 0 ? std::clamp<std::int64_t>(start, 0, length)
                     : std::min(std::max<std::int64_t>(start, 0), length - 1);
    symbolic_ints result;
    for (std::int64_t i = 0; i < count; ++i) {
      result.push_back((*c.content(0))[static_cast<std::size_t>(start + i * step)]);
    }
    return result;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// The walk.

class analyzer {
 public:
  analyzer(const graph& g, const symbol_bindings& bound, std::int64_t max_elements)
      : m_graph(g), m_max_elements(max_elements), m_cpu(make_backend("cpu")) {
    for (const auto& input : g.inputs) {
      shape_info s = typed(input.type);
      s.rank_known = input.has_shape;
      for (const auto& d : input.shape) {
        const auto it = d.value < 0 && !d.symbol.empty() ? bound.find(d.symbol) : bound.end();
        s.dims.push_back(it != bound.end() ? known(it->second) : d);
      }
      m_result.shapes[input.name] = std::move(s);
    }
    for (const auto& [name, value] : g.initializers) {
      m_result.shapes[name] = of_tensor(value);
      m_values[name] = &value;
      if (auto c = contents_of(value)) m_contents[name] = std::move(*c);
    }
  }

  graph_analysis run() {
    m_result.node_folded.assign(m_graph.nodes.size(), false);
    for (std::size_t i = 0; i < m_graph.nodes.size(); ++i) visit(i);
    return std::move(m_result);
  }

 private:
  void visit(std::size_t index) {
    const node& n = m_graph.nodes[index];
    op_context c{n, {}, {}, {}};
    for (const auto& name : n.inputs) {
      const auto shape = name.empty() ? m_result.shapes.end() : m_result.shapes.find(name);
      c.in.push_back(shape == m_result.shapes.end() ? shape_info{} : shape->second);
      const auto value = name.empty() ? m_values.end() : m_values.find(name);
      c.value.push_back(value == m_values.end() ? nullptr : value->second);
      const auto content = name.empty() ? m_contents.end() : m_contents.find(name);
      c.contents.push_back(content == m_contents.end() ? std::nullopt
                                                       : std::optional(content->second));
    }
    std::vector<shape_info> outs;
    if (const rule_fn rule = find_rule(n)) {
      try {
        outs = rule(c);
      } catch (const model_error&) {
        throw;
      } catch (const invalid_argument&) {
        // A mistyped attribute: the kernel reports it when the node runs.
        outs.clear();
      }
    }
    outs.resize(n.outputs.size());
    for (std::size_t o = 0; o < n.outputs.size(); ++o) {
      if (!n.outputs[o].empty()) m_result.shapes[n.outputs[o]] = outs[o];
    }
    if (!evaluate(n, index, c, outs) && !n.outputs.empty() && !n.outputs[0].empty()) {
      if (auto contents = propagate_contents(c)) {
        materialize(n, index, *contents);
        m_contents[n.outputs[0]] = std::move(*contents);
      }
    }
  }

  // Folds a node whose output elements are all known numbers although its
  // input is not: Gather(Shape(x), 1) when only x's second dimension is bound.
  void materialize(const node& n, std::size_t index, const symbolic_ints& contents) {
    const shape_info& out = m_result.shapes[n.outputs[0]];
    if (n.outputs.size() != 1 || !out.is_static() || !out.type_known ||
        (out.type != dtype::int64 && out.type != dtype::int32) ||
        element_count(out.static_shape()) != static_cast<std::int64_t>(contents.size()) ||
        static_cast<std::int64_t>(contents.size()) > m_max_elements ||
        !std::all_of(contents.begin(), contents.end(), [](const auto& e) { return e.value; })) {
      return;
    }
    tensor value(out.type, out.static_shape());
    for (std::size_t i = 0; i < contents.size(); ++i) {
      if (out.type == dtype::int64) {
        value.data<std::int64_t>()[i] = *contents[i].value;
      } else {
        value.data<std::int32_t>()[i] = static_cast<std::int32_t>(*contents[i].value);
      }
    }
    const auto [it, inserted] = m_result.folded.insert_or_assign(n.outputs[0], std::move(value));
    m_values[n.outputs[0]] = &it->second;
    m_result.node_folded[index] = true;
  }

  // Computes the node's outputs now when that is possible and small.
  bool evaluate(const node& n, std::size_t index, const op_context& c,
                const std::vector<shape_info>& outs) {
    std::vector<tensor> results(n.outputs.size());
    const auto value_attribute = n.attributes.find("value");
    if (n.op_type == "Constant" && n.domain.empty() && n.outputs.size() == 1 &&
        value_attribute != n.attributes.end() &&
        std::holds_alternative<tensor>(value_attribute->second)) {
      // Known without copying: large constants are read in place, and only
      // small ones become folded values.
      const tensor& value = std::get<tensor>(value_attribute->second);
      m_values[n.outputs[0]] = &value;
      if (auto contents = contents_of(value)) m_contents[n.outputs[0]] = std::move(*contents);
      if (value.size() > m_max_elements) return true;
      results[0] = value;
    } else if (n.domain.empty() && (n.op_type == "Shape" || n.op_type == "Size") &&
               c.shape(0).rank_known && !n.outputs.empty()) {
      const shape_info& data = c.shape(0);
      const auto [start, end] = n.op_type == "Shape" ? shape_range(n, data.dims.size())
                                                     : std::pair{std::size_t{0}, data.dims.size()};
      int_list dims;
      for (std::size_t d = start; d < end; ++d) {
        if (!is_known(data.dims[d])) return false;
        dims.push_back(data.dims[d].value);
      }
      if (n.op_type == "Shape") {
        results[0] = tensor(dtype::int64, {static_cast<std::int64_t>(dims.size())});
        std::copy(dims.begin(), dims.end(), results[0].data<std::int64_t>().begin());
      } else {
        results[0] = tensor(dtype::int64, {});
        results[0].data<std::int64_t>()[0] = element_count(dims);
      }
    } else {
      if (!m_cpu->supports(n) || n.inputs.empty()) return false;
      for (std::size_t i = 0; i < n.inputs.size(); ++i) {
        if (!n.inputs[i].empty() && c.value[i] == nullptr) return false;
      }
      for (std::size_t o = 0; o < n.outputs.size(); ++o) {
        if (n.outputs[o].empty()) continue;
        if (!outs[o].is_static() || element_count(outs[o].static_shape()) > m_max_elements) {
          return false;
        }
      }
      try {
        m_cpu->run(n, c.value, results);
      } catch (const invalid_argument&) {
        return false;  // left for run time, where the same kernel says what is wrong
      }
    }
    for (const tensor& t : results) {
      if (t.size() > m_max_elements) return false;
    }
    for (std::size_t o = 0; o < n.outputs.size(); ++o) {
      const std::string& name = n.outputs[o];
      if (name.empty()) continue;
      m_result.shapes[name] = of_tensor(results[o]);
      if (auto contents = contents_of(results[o])) m_contents[name] = std::move(*contents);
      const auto [it, inserted] = m_result.folded.insert_or_assign(name, std::move(results[o]));
      m_values[name] = &it->second;
    }
    m_result.node_folded[index] = true;
    return true;
  }

  const graph& m_graph;
  std::int64_t m_max_elements;
  std::unique_ptr<backend> m_cpu;
  graph_analysis m_result;
  std::map<std::string, const tensor*> m_values;  // initializers, constants, folded values
  std::map<std::string, symbolic_ints> m_contents;
};

}  // namespace

graph_analysis analyze_graph(const graph& g, const symbol_bindings& bound,
                             std::int64_t max_elements) {
  return analyzer(g, bound, max_elements).run();
}

}  // namespace coolbench::engine
