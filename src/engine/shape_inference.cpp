// Shape inference and constant evaluation in one walk (see
// shape_inference.hpp). Each operator the CPU backend runs has a rule, in
// shape_inference/<family>.cpp; a rule says only what it can derive and leaves
// the rest unknown. This file maps op types to the rules, follows the contents
// of small integer vectors, and walks the graph.
#include "engine/shape_inference.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "coolbench/core/error.hpp"
#include "coolbench/engine/model.hpp"
#include "engine/backend.hpp"
#include "engine/shape_inference/rules.hpp"

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

namespace shape_rules {
namespace {

// Sorted by op type. Every op the CPU backend runs should have a rule; one
// without a rule gets unknown outputs and is never folded.
constexpr std::pair<std::string_view, rule_fn> k_rules[] = {
    {"Abs", same_as_input},
    {"Add", broadcast_all},
    {"And", broadcast_all},
    {"AveragePool", pool},
    {"BatchNormalization", same_as_input},
    {"Cast", cast},
    {"CastLike", cast_like},
    {"Clip", same_as_input},
    {"Concat", concat},
    {"Constant", constant},
    {"ConstantOfShape", constant_of_shape},
    {"Conv", conv},
    {"CumSum", same_as_input},
    {"Div", broadcast_all},
    {"Dropout", dropout},
    {"Equal", compare},
    {"Erf", same_as_input},
    {"Exp", same_as_input},
    {"Expand", expand},
    {"Flatten", flatten},
    {"Gather", gather},
    {"GatherElements", gather_elements},
    {"GatherND", gather_nd},
    {"Gelu", same_as_input},
    {"Gemm", gemm},
    {"GlobalAveragePool", global_pool},
    {"GlobalMaxPool", global_pool},
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
    {"MaxPool", pool},
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

// A Constant given as value_int, value_ints, value_float or value_floats, as
// a tensor; nullopt for the other forms.
std::optional<tensor> list_constant(const node& n) {
  if (n.has("value_int")) {
    tensor t(dtype::int64, {});
    t.data<std::int64_t>()[0] = n.get<std::int64_t>("value_int");
    return t;
  }
  if (n.has("value_ints")) {
    const auto values = n.get<int_list>("value_ints");
    tensor t(dtype::int64, {static_cast<std::int64_t>(values.size())});
    std::copy(values.begin(), values.end(), t.data<std::int64_t>().begin());
    return t;
  }
  if (n.has("value_float")) {
    tensor t(dtype::float32, {});
    t.data<float>()[0] = n.get<float>("value_float");
    return t;
  }
  if (n.has("value_floats")) {
    const auto values = n.get<std::vector<float>>("value_floats");
    tensor t(dtype::float32, {static_cast<std::int64_t>(values.size())});
    std::copy(values.begin(), values.end(), t.data<float>().begin());
    return t;
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
    } else if (n.op_type == "Constant" && n.domain.empty() && n.outputs.size() == 1) {
      // value_int(s), value_float(s): the exporters' small constants (Expand's target).
      auto made = list_constant(n);
      if (!made) return false;
      results[0] = std::move(*made);
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
}  // namespace shape_rules

graph_analysis analyze_graph(const graph& g, const symbol_bindings& bound,
                             std::int64_t max_elements) {
  return shape_rules::analyzer(g, bound, max_elements).run();
}

}  // namespace coolbench::engine
