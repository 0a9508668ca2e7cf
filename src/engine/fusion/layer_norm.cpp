// The LayerNorm pass: LayerNormalization over the last axis, as the
// opset-17 op or as the decomposition opset-14 exports write
// (ReduceMean, Sub, Pow 2, ReduceMean, Add epsilon, Sqrt, Div, Mul scale,
// Add bias), together with the Add of two same-shaped values that feeds it
// (a residual stream), becomes one FusedLayerNorm node. The sum is a second
// output when something else reads it.
#include "engine/fusion/fusion_graph.hpp"
#include "engine/fusion/passes.hpp"

namespace coolbench::engine::fusion_detail {
namespace {

struct norm_match {
  std::set<std::size_t> nodes;
  std::string x, scale, bias, y;
  float epsilon = 1e-5F;
};

bool vector_of(const fusion_context& context, const std::string& name, std::int64_t n) {
  const auto shape = static_shape(context, name);
  return shape && !shape->empty() && shape->back() == n && element_count(*shape) == n;
}

// The one node reading `value` with this op type (and no other reader).
std::optional<std::size_t> sole(const graph& g, const graph_index& index, const std::string& value,
                                const char* op) {
  const auto r = index.sole_reader(value);
  if (!r || g.nodes[*r].op_type != op || !g.nodes[*r].domain.empty()) return std::nullopt;
  return r;
}

// The other input of a two-input node reading `value`.
std::string other_input(const node& n, const std::string& value) {
  return n.inputs[0] == value ? n.inputs[1] : n.inputs[0];
}

bool reduces_last_axis(const graph& g, const fusion_context& context, const node& n) {
  if (n.op_type != "ReduceMean" || !n.domain.empty() || n.get<std::int64_t>("keepdims", 1) == 0) {
    return false;
  }
  std::vector<std::int64_t> axes = n.get<std::vector<std::int64_t>>("axes", {});
  if (n.inputs.size() > 1 && !n.inputs[1].empty()) {
    const auto it = g.initializers.find(n.inputs[1]);
    if (it == g.initializers.end() || it->second.type() != dtype::int64) return false;
    const auto values = it->second.data<std::int64_t>();
    axes.assign(values.begin(), values.end());
  }
  const auto shape = static_shape(context, n.inputs[0]);
  if (!shape || shape->empty() || axes.size() != 1) return false;
  const auto rank = static_cast<std::int64_t>(shape->size());
  return axes[0] == -1 || axes[0] == rank - 1;
}

std::optional<norm_match> match_op(const graph& g, const fusion_context& context, std::size_t i) {
  const node& n = g.nodes[i];
  if (n.op_type != "LayerNormalization" || !n.domain.empty() || n.inputs.size() < 2) {
    return std::nullopt;
  }
  for (std::size_t k = 1; k < n.outputs.size(); ++k) {
    if (!n.outputs[k].empty()) return std::nullopt;  // mean or inv_std wanted
  }
  const auto shape = static_shape(context, n.inputs[0]);
  if (!shape || shape->empty()) return std::nullopt;
  const auto axis = n.get<std::int64_t>("axis", -1);
  if (axis != -1 && axis != static_cast<std::int64_t>(shape->size()) - 1) return std::nullopt;
  const std::string bias = n.inputs.size() > 2 ? n.inputs[2] : "";
  if (!vector_of(context, n.inputs[1], shape->back()) ||
      (!bias.empty() && !vector_of(context, bias, shape->back()))) {
    return std::nullopt;
  }
  // Exporters write Scale and B in another float dtype than X at times (a
  // float16 model whose residual stream was cast to float32); the unfused op
  // takes that, the fused one reads all three in X's dtype.
  const auto x_type = type_of(context, n.inputs[0]);
  if (!x_type || type_of(context, n.inputs[1]) != x_type ||
      (!bias.empty() && type_of(context, bias) != x_type)) {
    return std::nullopt;
  }
  return norm_match{{i},  n.inputs[0],  n.inputs[1],
                    bias, n.outputs[0], n.get<float>("epsilon", 1e-5F)};
}

std::optional<norm_match> match_decomposed(const graph& g, const graph_index& index,
                                           const fusion_context& context, std::size_t i) {
  const node& mean = g.nodes[i];
  if (!reduces_last_axis(g, context, mean)) return std::nullopt;
  norm_match m;
  m.x = mean.inputs[0];
  const auto sub = sole(g, index, mean.outputs[0], "Sub");
  if (!sub || g.nodes[*sub].inputs[0] != m.x || g.nodes[*sub].inputs[1] != mean.outputs[0]) {
    return std::nullopt;
  }
  const std::string& centered = g.nodes[*sub].outputs[0];
  const auto& readers = index.readers(centered);
  if (readers.size() != 2 || index.is_graph_output(centered)) return std::nullopt;
  const std::size_t pow = g.nodes[readers[0]].op_type == "Pow" ? readers[0] : readers[1];
  const std::size_t div = pow == readers[0] ? readers[1] : readers[0];
  if (g.nodes[pow].op_type != "Pow" || g.nodes[pow].inputs[0] != centered ||
      scalar_constant(g, g.nodes[pow].inputs[1]) != 2.0) {
    return std::nullopt;
  }
  const auto variance = index.sole_reader(g.nodes[pow].outputs[0]);
  if (!variance || !reduces_last_axis(g, context, g.nodes[*variance])) return std::nullopt;
  const auto add_eps = sole(g, index, g.nodes[*variance].outputs[0], "Add");
  if (!add_eps) return std::nullopt;
  const auto epsilon =
      scalar_constant(g, other_input(g.nodes[*add_eps], g.nodes[*variance].outputs[0]));
  const auto sqrt = sole(g, index, g.nodes[*add_eps].outputs[0], "Sqrt");
  if (!epsilon || !sqrt || index.sole_reader(g.nodes[*sqrt].outputs[0]) != div) return std::nullopt;
  const node& d = g.nodes[div];
  if (d.op_type != "Div" || d.inputs[0] != centered || d.inputs[1] != g.nodes[*sqrt].outputs[0]) {
    return std::nullopt;
  }
  const auto mul = sole(g, index, d.outputs[0], "Mul");
  if (!mul) return std::nullopt;
  const auto add = sole(g, index, g.nodes[*mul].outputs[0], "Add");
  if (!add) return std::nullopt;
  const auto n = static_shape(context, m.x)->back();
  m.scale = other_input(g.nodes[*mul], d.outputs[0]);
  m.bias = other_input(g.nodes[*add], g.nodes[*mul].outputs[0]);
  if (!vector_of(context, m.scale, n) || !vector_of(context, m.bias, n) ||
      static_shape(context, g.nodes[*add].outputs[0]) != static_shape(context, m.x)) {
    return std::nullopt;
  }
  m.nodes = {i, *sub, pow, *variance, *add_eps, *sqrt, div, *mul, *add};
  m.y = g.nodes[*add].outputs[0];
  m.epsilon = static_cast<float>(*epsilon);
  return m;
}

bool fuse_one(graph& g, const fusion_context& context) {
  const graph_index index(g);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    auto m = match_op(g, context, i);
    if (!m) m = match_decomposed(g, index, context, i);
    if (!m) continue;
    const auto type = type_of(context, m->x);
    if (!type || !is_float(*type) || type_of(context, m->scale) != type ||
        (!m->bias.empty() && type_of(context, m->bias) != type)) {
      continue;
    }
    node fused = fused_node("FusedLayerNorm", g.nodes[*m->nodes.rbegin()]);
    fused.inputs = {m->x, "", m->scale, m->bias};
    fused.outputs = {m->y};
    fused.attributes["epsilon"] = m->epsilon;
    // The residual Add: both operands of the normalized shape.
    const auto add = index.producer(m->x);
    if (add && g.nodes[*add].op_type == "Add" && g.nodes[*add].domain.empty()) {
      const node& sum = g.nodes[*add];
      const auto shape = static_shape(context, m->x);
      if (static_shape(context, sum.inputs[0]) == shape &&
          static_shape(context, sum.inputs[1]) == shape &&
          type_of(context, sum.inputs[0]) == type && type_of(context, sum.inputs[1]) == type) {
        fused.inputs[0] = sum.inputs[0];
        fused.inputs[1] = sum.inputs[1];
        if (!index.only_read_by(m->x, m->nodes)) fused.outputs.push_back(m->x);
        m->nodes.insert(*add);
      }
    }
    if (!target_runs(context, fused)) continue;
    replace_nodes(g, m->nodes, std::move(fused));
    return true;
  }
  return false;
}

}  // namespace

std::size_t fuse_layer_norms(graph& g, const fusion_context& context) {
  std::size_t count = 0;
  while (fuse_one(g, context)) ++count;
  return count;
}

}  // namespace coolbench::engine::fusion_detail
