// The helpers the shape rules share: building shape_info values,
// broadcasting (the elementwise ops, MatMul's batch dimensions, Expand) and
// reading axes.
#include "engine/shape_inference/rules.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "coolbench/core/error.hpp"
#include "coolbench/engine/model.hpp"

namespace coolbench::engine::shape_rules {

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

void inconsistent(const node& n, const std::string& what) {
  throw model_error("inconsistent shapes in " + n.describe() + ": " + what +
                    "; fix the model or the bound dimensions");
}

std::optional<std::size_t> normalized_axis(std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

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

std::optional<int_list> axes_of(const op_context& c, bool& given) {
  given = true;
  if (c.n.has("axes")) return c.n.get<int_list>("axes");
  if (c.present(1)) return c.ints(1);
  given = false;
  return int_list{};
}

}  // namespace coolbench::engine::shape_rules
