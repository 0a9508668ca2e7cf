// What the shape rules share: the symbolic integers that carry a shape
// through Shape → Gather → Concat, the view a rule has of its node
// (op_context), the helpers that build shape_info values, and every op
// family's rules. shape_inference.cpp maps op types to the rules and walks the
// graph; each family's rules live in the file of its name here, as the CPU
// backend's kernels do (elementwise, matmul, reduce, shape_ops).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "coolbench/engine/graph.hpp"
#include "coolbench/engine/passes.hpp"
#include "coolbench/engine/tensor.hpp"

namespace coolbench::engine::shape_rules {

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

// ---------------------------------------------------------------------------
// Building shape_info values (common.cpp).

[[nodiscard]] dimension known(std::int64_t value);
[[nodiscard]] bool is_known(const dimension& d);
/// Type known, rank unknown.
[[nodiscard]] shape_info typed(dtype type);
[[nodiscard]] shape_info typed(dtype type, std::vector<dimension> dims);
/// `source`'s type with the given dimensions.
[[nodiscard]] shape_info with_type_of(const shape_info& source, std::vector<dimension> dims);
/// `source`'s type and rank, every dimension unknown.
[[nodiscard]] shape_info unknown_dims_like(const shape_info& source);
/// `source`'s type, rank unknown.
[[nodiscard]] shape_info rank_unknown(const shape_info& source);
[[nodiscard]] shape_info of_tensor(const tensor& t);
[[nodiscard]] dimension to_dimension(const symbolic_int& element);
[[nodiscard]] symbolic_int to_symbolic(const dimension& d);
/// Throws model_error naming the node and what does not fit.
[[noreturn]] void inconsistent(const node& n, const std::string& what);
/// `axis` in [0, rank), or nullopt outside ONNX's [-rank, rank - 1].
[[nodiscard]] std::optional<std::size_t> normalized_axis(std::int64_t axis, std::size_t rank);

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
// Helpers more than one family uses (common.cpp).

/// Multidirectional broadcasting of `ops` (numpy's rule); `shown` is what a
/// message prints for each operand. Throws model_error when they do not fit.
[[nodiscard]] std::vector<dimension> broadcast_dims(const node& n,
                                                    const std::vector<std::vector<dimension>>& ops,
                                                    const std::vector<std::string>& shown);
/// Inputs `first`.. broadcast together, with input `type_from`'s type.
[[nodiscard]] shape_info broadcast(const op_context& c, std::size_t first, std::size_t type_from);
/// Squeeze/Unsqueeze/Reduce axes: the attribute (older opsets) or input 1;
/// `given` says whether either was there. nullopt when input 1 is given but
/// not known before run time.
[[nodiscard]] std::optional<int_list> axes_of(const op_context& c, bool& given);

// ---------------------------------------------------------------------------
// The rules, by op family. Each returns one shape_info per output it can say
// something about.

// elementwise.cpp
[[nodiscard]] std::vector<shape_info> same_as_input(const op_context& c);
[[nodiscard]] std::vector<shape_info> same_as_input_bool(const op_context& c);
[[nodiscard]] std::vector<shape_info> broadcast_all(const op_context& c);
[[nodiscard]] std::vector<shape_info> compare(const op_context& c);
[[nodiscard]] std::vector<shape_info> where(const op_context& c);
[[nodiscard]] std::vector<shape_info> dropout(const op_context& c);
[[nodiscard]] std::vector<shape_info> cast(const op_context& c);
[[nodiscard]] std::vector<shape_info> cast_like(const op_context& c);

// matmul.cpp
[[nodiscard]] std::vector<shape_info> matmul(const op_context& c);
[[nodiscard]] std::vector<shape_info> gemm(const op_context& c);

// reduce.cpp
[[nodiscard]] std::vector<shape_info> reduce(const op_context& c);
[[nodiscard]] std::vector<shape_info> layer_norm(const op_context& c);

// nn.cpp
[[nodiscard]] std::vector<shape_info> conv(const op_context& c);
[[nodiscard]] std::vector<shape_info> pool(const op_context& c);
[[nodiscard]] std::vector<shape_info> global_pool(const op_context& c);
[[nodiscard]] std::vector<shape_info> gather_elements(const op_context& c);
[[nodiscard]] std::vector<shape_info> gather_nd(const op_context& c);

// shape_ops.cpp
[[nodiscard]] std::vector<shape_info> reshape(const op_context& c);
[[nodiscard]] std::vector<shape_info> transpose(const op_context& c);
[[nodiscard]] std::vector<shape_info> squeeze(const op_context& c);
[[nodiscard]] std::vector<shape_info> unsqueeze(const op_context& c);
[[nodiscard]] std::vector<shape_info> concat(const op_context& c);
[[nodiscard]] std::vector<shape_info> split(const op_context& c);
[[nodiscard]] std::vector<shape_info> slice(const op_context& c);
[[nodiscard]] std::vector<shape_info> gather(const op_context& c);
[[nodiscard]] std::vector<shape_info> shape_op(const op_context& c);
[[nodiscard]] std::vector<shape_info> size_op(const op_context& c);
[[nodiscard]] std::vector<shape_info> constant_of_shape(const op_context& c);
[[nodiscard]] std::vector<shape_info> constant(const op_context& c);
[[nodiscard]] std::vector<shape_info> expand(const op_context& c);
[[nodiscard]] std::vector<shape_info> range(const op_context& c);
[[nodiscard]] std::vector<shape_info> flatten(const op_context& c);

// Slice's and Shape's arithmetic, which the contents of a shape vector
// follow too (shape_ops.cpp).

/// Elements a Slice keeps of a dimension of `dim`, as the kernel counts them.
[[nodiscard]] std::int64_t slice_count(std::int64_t dim, std::int64_t start, std::int64_t end,
                                       std::int64_t step);

struct slice_params {
  int_list starts, ends, axes, steps;
};

/// A Slice's starts/ends/axes/steps with axes normalized for `rank`; nullopt
/// when they are not known before run time or do not fit.
[[nodiscard]] std::optional<slice_params> slice_params_of(const op_context& c, std::size_t rank);

/// Opset 15's start/end of Shape: negative counts from the back, then clamp.
[[nodiscard]] std::pair<std::size_t, std::size_t> shape_range(const node& n, std::size_t rank);

}  // namespace coolbench::engine::shape_rules
