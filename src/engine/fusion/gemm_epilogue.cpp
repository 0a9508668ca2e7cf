// The GEMM epilogue pass: MatMul by a 2-D weight (any batch rank of the
// activation) or Gemm, plus a bias of N elements, then optionally a
// Reshape that keeps the last dimension and either an activation (Relu,
// GELU as one op or decomposed into elementwise nodes) or a residual Add of
// the output's shape, becomes one FusedGemm node (without a bias, only when
// such a tail follows) (cuBLASLt with a bias
// epilogue on CUDA). The activation is recognised by its values: the
// elementwise cone between the product and the candidate is compiled and
// compared with each activation's formula, so any operand order or
// equivalent decomposition an exporter writes is found.
#include <array>
#include <cmath>

#include "engine/fusion/fusion_graph.hpp"
#include "engine/fusion/passes.hpp"

namespace coolbench::engine::fusion_detail {
namespace {

constexpr std::size_t k_max_cone = 16;

bool bias_like(const graph& g, const std::string& name, std::int64_t n) {
  const auto it = g.initializers.find(name);
  // Rank 1 or 2 ([N], [1, N]): the sum then has the product's shape.
  if (it == g.initializers.end() || it->second.size() != n || it->second.rank() == 0 ||
      it->second.rank() > 2) {
    return false;
  }
  return it->second.shape().back() == n;
}

// The elementwise nodes from `root` back to `x`, with one-element constants
// as their only other leaves; nullopt when anything else feeds it.
std::optional<std::set<std::size_t>> univariate_cone(const graph& g, const graph_index& index,
                                                     const fusion_context& context,
                                                     std::size_t root, const std::string& x) {
  std::set<std::size_t> cone;
  std::vector<std::size_t> stack{root};
  while (!stack.empty()) {
    const std::size_t i = stack.back();
    stack.pop_back();
    if (!cone.insert(i).second) continue;
    if (cone.size() > k_max_cone || !ew_member_ok(g, context, g.nodes[i])) return std::nullopt;
    for (const auto& name : g.nodes[i].inputs) {
      if (name == x || scalar_constant(g, name)) continue;
      const auto p = index.producer(name);
      if (!p) return std::nullopt;
      stack.push_back(*p);
    }
  }
  for (const std::size_t i : cone) {
    if (i != root && !index.only_read_by(g.nodes[i].outputs[0], cone)) return std::nullopt;
  }
  if (!index.only_read_by(x, cone)) return std::nullopt;
  return cone;
}

double reference(const std::string& activation, double x) {
  if (activation == "relu") return x > 0 ? x : 0;
  if (activation == "gelu_erf") return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

// The op a cone must hold to be this activation: the erf and tanh GELUs
// differ by less than a 16-bit float's precision, so values alone cannot
// tell them apart there.
const char* key_op(const std::string& activation) {
  if (activation == "relu") return "Relu";
  return activation == "gelu_erf" ? "Erf" : "Tanh";
}

// Which activation the cone computes, compared in float32 without the
// graph dtype's rounding at points spread over where the activations differ.
// The tolerance allows for a 16-bit graph's constants (0.044715, sqrt(2/pi))
// rounded to its dtype: both off by a whole bfloat16 step in the worst
// direction move the tanh GELU by under 1e-3 (1 + |y|), half a step (correct
// rounding) by under 5e-4. It must stay below what another constant moves
// it by: 0.05 for 0.044715 moves it by 2.6e-3, and is no GELU.
std::optional<std::string> activation_of(const graph& g, const fusion_context& context,
                                         const std::set<std::size_t>& cone, dtype type) {
  auto compiled = ew_compile(g, context, std::vector<std::size_t>(cone.begin(), cone.end()));
  if (!compiled || compiled->inputs.size() != 1) return std::nullopt;
  for (auto& i : compiled->program.code) i.round = ew_round::none;
  const double tolerance = type == dtype::float32 ? 2e-6 : 1.2e-3;
  for (const std::string activation : {"relu", "gelu_tanh", "gelu_erf"}) {
    bool same = false;
    for (const std::size_t i : cone) {
      const node& n = g.nodes[i];
      const bool tanh_gelu = n.get<std::string>("approximate", "none") == "tanh";
      same = same || n.op_type == key_op(activation) ||
             (n.op_type == "Gelu" && activation == (tanh_gelu ? "gelu_tanh" : "gelu_erf"));
    }
    for (double x = -6.0; x <= 6.0 && same; x += 0.173) {
      const double want = reference(activation, x);
      const double got = ew_evaluate(compiled->program, {static_cast<float>(x)});
      same = std::abs(got - want) <= tolerance * (1 + std::abs(want));
    }
    if (same) return activation;
  }
  return std::nullopt;
}

struct tail {
  std::set<std::size_t> nodes;
  std::string output;
  std::string activation = "none";
  std::string residual;
};

// An activation or a residual Add reading `x` (N wide); nullopt for neither.
std::optional<tail> find_tail(const graph& g, const graph_index& index,
                              const fusion_context& context, const std::string& x) {
  // Candidate roots: elementwise nodes a few steps downstream of x, latest first.
  std::set<std::size_t> ahead;
  std::vector<std::string> frontier{x};
  for (int depth = 0; depth < 10 && !frontier.empty(); ++depth) {
    std::vector<std::string> next;
    for (const auto& value : frontier) {
      for (const std::size_t r : index.readers(value)) {
        if (ew_member_ok(g, context, g.nodes[r]) && ahead.insert(r).second) {
          next.push_back(g.nodes[r].outputs[0]);
        }
      }
    }
    frontier = std::move(next);
  }
  for (auto it = ahead.rbegin(); it != ahead.rend(); ++it) {
    const auto cone = univariate_cone(g, index, context, *it, x);
    if (!cone || static_shape(context, g.nodes[*it].outputs[0]) != static_shape(context, x)) {
      continue;
    }
    if (auto activation = activation_of(g, context, *cone, *type_of(context, x))) {
      return tail{*cone, g.nodes[*it].outputs[0], *activation, {}};
    }
  }
  const auto add = index.sole_reader(x);
  if (!add || g.nodes[*add].op_type != "Add" || !g.nodes[*add].domain.empty()) return std::nullopt;
  const node& n = g.nodes[*add];
  const std::string& other = n.inputs[0] == x ? n.inputs[1] : n.inputs[0];
  const auto shape = static_shape(context, x);
  if (other == x || !shape || static_shape(context, other) != shape ||
      type_of(context, other) != type_of(context, x)) {
    return std::nullopt;
  }
  return tail{{*add}, n.outputs[0], "none", other};
}

// The product at node i with its bias when it has one (bias "" when not);
// nullopt when it is no product the fused op runs.
std::optional<node> match_at(const graph& g, const graph_index& index,
                             const fusion_context& context, std::size_t i,
                             std::set<std::size_t>& nodes, std::int64_t& n) {
  const node& product = g.nodes[i];
  if (!product.domain.empty() || (product.op_type != "MatMul" && product.op_type != "Gemm")) {
    return std::nullopt;
  }
  const bool gemm = product.op_type == "Gemm";
  if (product.inputs.size() < 2 || product.outputs.size() != 1) return std::nullopt;
  // Gemm's A is 2-D by definition: its shape may be unknown (the fused op
  // takes M from the tensor); a MatMul's must be known.
  const auto a = static_shape(context, product.inputs[0]);
  const auto b = static_shape(context, product.inputs[1]);
  const auto type = type_of(context, product.inputs[0]);
  if (!b || !type || !is_float(*type) || b->size() != 2) return std::nullopt;
  if (!gemm && (!a || a->size() < 2 || a->size() > 8 || element_count(*a) == 0 ||
                !g.initializers.contains(product.inputs[1]))) {
    return std::nullopt;
  }
  if (gemm && a && (a->size() != 2 || element_count(*a) == 0)) return std::nullopt;
  const bool trans_a = gemm && product.get<std::int64_t>("transA", 0) != 0;
  const bool trans_b = gemm && product.get<std::int64_t>("transB", 0) != 0;
  const std::int64_t k = trans_b ? (*b)[1] : (*b)[0];
  n = trans_b ? (*b)[0] : (*b)[1];
  if (k == 0 || n == 0) return std::nullopt;
  nodes = {i};
  std::string out = product.outputs[0];
  std::string bias;
  if (gemm && product.inputs.size() > 2 && !product.inputs[2].empty()) {
    if (product.get<float>("beta", 1.0F) != 1.0F || !bias_like(g, product.inputs[2], n)) {
      return std::nullopt;
    }
    bias = product.inputs[2];
  } else if (const auto add = index.sole_reader(out);
             add && g.nodes[*add].op_type == "Add" && g.nodes[*add].domain.empty()) {
    const node& sum = g.nodes[*add];
    const std::string& other = sum.inputs[0] == out ? sum.inputs[1] : sum.inputs[0];
    if (bias_like(g, other, n) &&
        static_shape(context, sum.outputs[0]) == static_shape(context, out)) {
      bias = other;
      nodes.insert(*add);
      out = sum.outputs[0];
    }
  }
  node fused = fused_node("FusedGemm", product);
  fused.inputs = {product.inputs[0], product.inputs[1], bias};
  fused.outputs = {out};
  fused.attributes["transA"] = std::int64_t{trans_a};
  fused.attributes["transB"] = std::int64_t{trans_b};
  fused.attributes["alpha"] = gemm ? product.get<float>("alpha", 1.0F) : 1.0F;
  fused.attributes["activation"] = std::string("none");
  return fused;
}

bool fuse_one(graph& g, const fusion_context& context) {
  const graph_index index(g);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    std::set<std::size_t> nodes;
    std::int64_t n = 0;
    auto fused = match_at(g, index, context, i, nodes, n);
    if (!fused) continue;
    const std::string biased = fused->outputs[0];
    // A Reshape keeping the last dimension may sit between (GPT-2's Conv1D).
    std::optional<tail> end;
    if (const auto r = index.sole_reader(biased);
        r && g.nodes[*r].op_type == "Reshape" && g.nodes[*r].domain.empty()) {
      const auto shape = static_shape(context, g.nodes[*r].outputs[0]);
      if (shape && !shape->empty() && shape->back() == n) {
        end = find_tail(g, index, context, g.nodes[*r].outputs[0]);
        if (end) {
          end->nodes.insert(*r);
          fused->attributes["shape"] = *shape;
        }
      }
    } else {
      end = find_tail(g, index, context, biased);
    }
    // Without a bias, only a tail makes the fused node worth it.
    if (!end && fused->inputs[2].empty()) continue;
    if (end) {
      nodes.insert(end->nodes.begin(), end->nodes.end());
      fused->outputs = {end->output};
      fused->attributes["activation"] = end->activation;
      if (!end->residual.empty()) fused->inputs.push_back(end->residual);
    }
    if (!target_runs(context, *fused)) continue;
    replace_nodes(g, nodes, std::move(*fused));
    return true;
  }
  return false;
}

}  // namespace

std::size_t fuse_gemm_epilogues(graph& g, const fusion_context& context) {
  std::size_t count = 0;
  while (fuse_one(g, context)) ++count;
  return count;
}

}  // namespace coolbench::engine::fusion_detail
