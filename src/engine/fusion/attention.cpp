// The attention fusion pass (attention.hpp): finds Softmax nodes and matches
// outwards, as PyTorch's exporters (eager GPT-2/BERT, the SDPA decomposition
// with the scale split between Q and Kᵀ and an IsNaN guard) and
// coolbench's own GPT-2 write attention. Pieces between the two MatMuls must
// have no other consumer; values read on the way in (a K transpose, a mask
// Where shared by the layers) are left to dead-node removal.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/backend.hpp"
#include "engine/fusion/attention.hpp"

namespace coolbench::engine {
namespace {

using int_list = std::vector<std::int64_t>;

// Producers and consumers of the values of one graph.
struct graph_index {
  explicit graph_index(const graph& model) : g(model) {
    for (std::size_t i = 0; i < model.nodes.size(); ++i) {
      for (const auto& out : model.nodes[i].outputs) producer[out] = i;
      for (const auto& in : model.nodes[i].inputs) {
        if (!in.empty()) ++uses[in];
      }
    }
    for (const auto& out : model.outputs) outputs.insert(out.name);
  }
  // The node making `value` when it has op_type and the default domain.
  [[nodiscard]] const node* made_by(const std::string& value, std::string_view op_type) const {
    const auto it = producer.find(value);
    if (it == producer.end()) return nullptr;
    const node& n = g.nodes[it->second];
    return n.domain.empty() && n.op_type == op_type ? &n : nullptr;
  }
  [[nodiscard]] int use_count(const std::string& value) const {
    const auto it = uses.find(value);
    return (it == uses.end() ? 0 : it->second) + (outputs.contains(value) ? 1 : 0);
  }
  [[nodiscard]] bool used_once(const std::string& value) const { return use_count(value) == 1; }

  const graph& g;
  std::map<std::string, std::size_t> producer;
  std::map<std::string, int> uses;
  std::set<std::string> outputs;
};

// Same rank and no dimension known to differ (or a rank unknown).
bool agree(const std::optional<shape_t>& a, const std::optional<shape_t>& b) {
  if (!a || !b) return true;
  if (a->size() != b->size()) return false;
  for (std::size_t i = 0; i < a->size(); ++i) {
    if ((*a)[i] >= 0 && (*b)[i] >= 0 && (*a)[i] != (*b)[i]) return false;
  }
  return true;
}

struct match {
  std::string q, k, v, bias, mask, output;
  std::string k_transposed;  // non-empty: k must be made from this [.., D, Sk] value
  std::string k_bshd;        // non-empty: k must be made from this [B, Sk, H, D] value
  double scale = 1;
  double mask_value = 0;
  bool mask_keeps = false, causal = false, zero_empty_rows = false;
  std::vector<const node*> pieces;  // removed once fused
};

struct matcher {
  const graph& g;
  const graph_index& index;
  const fusion_context& context;

  [[nodiscard]] std::optional<double> constant(const std::string& value) const {
    const auto it = g.initializers.find(value);
    return it == g.initializers.end() ? std::nullopt : scalar_value(it->second);
  }
  // The dimensions, -1 where unknown; nullopt when the rank is unknown.
  // Shape inference may not know every dimension of an export (a Reshape
  // from a runtime Shape): the kernel checks them when it runs.
  [[nodiscard]] std::optional<shape_t> dims(const std::string& value) const {
    const auto it = context.shapes.find(value);
    if (it == context.shapes.end() || !it->second.rank_known) return std::nullopt;
    shape_t d;
    for (const auto& dim : it->second.dims) d.push_back(dim.value);
    return d;
  }
  [[nodiscard]] std::optional<dtype> type(const std::string& value) const {
    const auto it = context.shapes.find(value);
    if (it == context.shapes.end() || !it->second.type_known) return std::nullopt;
    return it->second.type;
  }

  // x * c, c * x or x / c with c a one-element constant, used once: x, and
  // the factor folded into m.scale.
  std::string strip_scale(const std::string& value, match& m) const {
    std::string x = value;
    for (;;) {
      const node* mul = index.made_by(x, "Mul");
      const node* div = index.made_by(x, "Div");
      const node* n = mul != nullptr ? mul : div;
      if (n == nullptr || n->inputs.size() != 2 || !index.used_once(x)) return x;
      std::optional<double> c = constant(n->inputs[1]);
      std::string rest = n->inputs[0];
      if (!c && mul != nullptr) {
        c = constant(n->inputs[0]);
        rest = n->inputs[1];
      }
      if (!c || (div != nullptr && *c == 0)) return x;
      m.scale *= div != nullptr ? 1 / *c : *c;
      m.pieces.push_back(n);
      x = rest;
    }
  }

  bool match_key(const std::string& kt, match& m) const;
  bool match_mask(const std::string& scores_in, std::string& scores, match& m) const;
  bool match_tail(const node& softmax, match& m) const;
  std::optional<match> at(const node& softmax) const;
};

// Kᵀ as [.., D, Sk]: a Transpose of the last two axes, the GPT-2 eager
// export's [0, 2, 3, 1] of [B, Sk, H, D], the dynamo export's Reshape →
// Transpose [0, 2, 1] → Reshape, or any other value (transposed by a node
// the pass adds).
bool matcher::match_key(const std::string& kt, match& m) const {
  const auto kt_dims = dims(kt);
  if (kt_dims && kt_dims->size() != 4) return false;
  if (const node* t = index.made_by(kt, "Transpose")) {
    const auto perm = t->get<int_list>("perm", {});
    if (perm == int_list{0, 1, 3, 2}) {
      m.k = t->inputs[0];
      return true;
    }
    if (perm == int_list{0, 2, 3, 1}) {
      m.k_bshd = t->inputs[0];
      return true;
    }
  }
  if (const node* outer = index.made_by(kt, "Reshape")) {
    const node* t = index.made_by(outer->inputs[0], "Transpose");
    const node* inner = t != nullptr ? index.made_by(t->inputs[0], "Reshape") : nullptr;
    if (inner != nullptr && t->get<int_list>("perm", {}) == int_list{0, 2, 1}) {
      const auto k_dims = dims(inner->inputs[0]);
      const auto flat = dims(inner->outputs[0]);
      const auto known = [](const std::optional<shape_t>& d) {
        return d && std::all_of(d->begin(), d->end(), [](auto x) { return x >= 0; });
      };
      if (known(kt_dims) && known(k_dims) && known(flat) &&
          *k_dims == shape_t{(*kt_dims)[0], (*kt_dims)[1], (*kt_dims)[3], (*kt_dims)[2]} &&
          *flat == shape_t{(*kt_dims)[0] * (*kt_dims)[1], (*kt_dims)[3], (*kt_dims)[2]}) {
        m.k = inner->inputs[0];
        return true;
      }
    }
  }
  m.k_transposed = kt;
  return true;
}

// Softmax's input: the scores, plus an additive bias (Add) or a replacing
// mask (Where(mask, fill, scores) or Where(mask, scores, fill)).
bool matcher::match_mask(const std::string& scores_in, std::string& scores, match& m) const {
  scores = scores_in;
  if (const node* add = index.made_by(scores_in, "Add");
      add != nullptr && add->inputs.size() == 2 && index.used_once(scores_in)) {
    // The scores side has the output's shape and comes from the MatMul.
    for (int side = 0; side < 2; ++side) {
      const std::string& s = add->inputs[side];
      const std::string& b = add->inputs[1 - side];
      match probe;
      if (!agree(dims(s), dims(scores_in)) ||
          index.made_by(strip_scale(s, probe), "MatMul") == nullptr)
        continue;
      if (const node* w = index.made_by(b, "Where"); w != nullptr && w->inputs.size() == 3) {
        const auto if_true = constant(w->inputs[1]);
        const auto if_false = constant(w->inputs[2]);
        if (if_true == 0.0 && if_false && hides_like_replacement(*if_false)) {
          m.mask = w->inputs[0], m.mask_keeps = true, m.mask_value = *if_false;
        } else if (if_false == 0.0 && if_true && hides_like_replacement(*if_true)) {
          m.mask = w->inputs[0], m.mask_keeps = false, m.mask_value = *if_true;
        }
      }
      if (m.mask.empty()) m.bias = b;
      m.pieces.push_back(add);
      scores = s;
      return true;
    }
    return false;
  }
  if (const node* w = index.made_by(scores_in, "Where");
      w != nullptr && index.used_once(scores_in)) {
    const bool scores_if_false = constant(w->inputs[1]).has_value();
    const std::string& fill = w->inputs[scores_if_false ? 1 : 2];
    const std::string& s = w->inputs[scores_if_false ? 2 : 1];
    const auto value = constant(fill);
    if (!value || !agree(dims(s), dims(scores_in))) return false;
    m.mask = w->inputs[0], m.mask_keeps = !scores_if_false, m.mask_value = *value;
    m.pieces.push_back(w);
    scores = s;
  }
  return true;
}

// From Softmax on: the optional IsNaN guard (Where(IsNaN(p), 0, p)) and
// the MatMul with V.
bool matcher::match_tail(const node& softmax, match& m) const {
  std::string probs = softmax.outputs[0];
  if (index.use_count(probs) == 2) {
    const node* guard = nullptr;
    const node* isnan = nullptr;
    for (const node& n : g.nodes) {
      if (!n.domain.empty() || std::find(n.inputs.begin(), n.inputs.end(), probs) == n.inputs.end())
        continue;
      if (n.op_type == "IsNaN") isnan = &n;
      if (n.op_type == "Where") guard = &n;
    }
    if (isnan == nullptr || guard == nullptr || index.outputs.contains(probs) ||
        !index.used_once(isnan->outputs[0]) || guard->inputs.size() != 3 ||
        guard->inputs[0] != isnan->outputs[0] || constant(guard->inputs[1]) != 0.0 ||
        guard->inputs[2] != probs) {
      return false;
    }
    m.zero_empty_rows = true;
    m.pieces.push_back(isnan);
    m.pieces.push_back(guard);
    probs = guard->outputs[0];
  }
  if (!index.used_once(probs)) return false;
  for (const node& n : g.nodes) {
    if (n.domain.empty() && n.op_type == "MatMul" && n.inputs.size() == 2 && n.inputs[0] == probs) {
      m.v = n.inputs[1];
      m.output = n.outputs[0];
      m.pieces.push_back(&n);
      return true;
    }
  }
  return false;
}

std::optional<match> matcher::at(const node& softmax) const {
  match m;
  const auto scores_dims = dims(softmax.inputs[0]);
  if (scores_dims && scores_dims->size() != 4) return std::nullopt;
  const std::int64_t rank = 4;
  // Before opset 13 Softmax flattened from `axis` (default 1): the last axis only.
  const std::int64_t fallback = g.opset >= 13 ? -1 : 1;
  const std::int64_t axis = softmax.get<std::int64_t>("axis", fallback);
  if (axis != -1 && axis != rank - 1) return std::nullopt;
  m.pieces.push_back(&softmax);
  if (!match_tail(softmax, m)) return std::nullopt;
  std::string scores;
  if (!match_mask(softmax.inputs[0], scores, m)) return std::nullopt;
  scores = strip_scale(scores, m);
  const node* mm = index.made_by(scores, "MatMul");
  if (mm == nullptr || !index.used_once(scores)) return std::nullopt;
  m.pieces.push_back(mm);
  m.q = strip_scale(mm->inputs[0], m);
  if (!match_key(strip_scale(mm->inputs[1], m), m)) return std::nullopt;
  return m;
}

// Whether `value` broadcasts to `to` (right-aligned, 1 or equal; unknown
// dimensions pass: the kernel checks them).
bool broadcasts(const shape_t& value, const shape_t& to) {
  if (value.size() > to.size()) return false;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::int64_t d = value[value.size() - 1 - i], t = to[to.size() - 1 - i];
    if (d != 1 && d >= 0 && t >= 0 && d != t) return false;
  }
  return true;
}

// Masks and biases that are constants too large for the session to fold, evaluated once
// (the layers share one), by value name; nullopt: not a constant.
using evaluated_constants = std::map<std::string, std::optional<tensor>>;

// The largest mask or bias evaluated to see whether it is causal: 4 Mi elements, a causal mask
// for 2048 tokens (GPT-2's 1024 took 0.9 s of plan time on a 2-core CPU).
constexpr std::int64_t k_mask_max_elements = std::int64_t{1} << 22;

// What is known of the kernel's shapes agrees; a constant mask or bias
// recognised as causal or as hiding nothing is dropped. False: leave it.
bool check_shapes(const graph& g, const matcher& mt, match& m, evaluated_constants& constants) {
  const auto q = mt.dims(m.q), v = mt.dims(m.v), out = mt.dims(m.output);
  for (const auto& d : {q, v, out}) {
    if (d && d->size() != 4) return false;
  }
  if (!agree(q, out)) return false;
  const std::int64_t head_dim = q ? (*q)[3] : v ? (*v)[3] : -1;
  if (head_dim > k_attention_max_head_dim || (q && v && !agree(shape_t{(*q)[3]}, shape_t{(*v)[3]})))
    return false;
  if (!m.k.empty() && !agree(mt.dims(m.k), v)) return false;
  const auto type = mt.type(m.q);
  if (!type || !is_float(*type) || mt.type(m.v) != type) return false;
  shape_t scores{-1, -1, q ? (*q)[2] : -1, v ? (*v)[2] : -1};
  if (const auto s = mt.dims(m.pieces.front()->inputs[0])) scores = *s;
  for (std::string* extra : {&m.bias, &m.mask}) {
    if (extra->empty()) continue;
    const bool is_mask = extra == &m.mask;
    const auto t = mt.type(*extra);
    if (t && (is_mask ? *t != dtype::boolean : *t != *type)) return false;
    if (const auto d = mt.dims(*extra); d && !broadcasts(*d, scores)) return false;
    if (scores[2] < 0 || scores[3] < 0) continue;
    const tensor* value = nullptr;
    if (const auto it = g.initializers.find(*extra); it != g.initializers.end()) {
      value = &it->second;
    } else {
      auto [at, added] = constants.try_emplace(*extra);
      if (added) at->second = evaluate_constant(g, *extra, k_mask_max_elements);
      if (at->second) value = &*at->second;
    }
    if (value == nullptr) continue;
    const mask_shape kind = is_mask ? classify_mask(*value, m.mask_keeps, scores[2], scores[3])
                                    : classify_bias(*value, scores[2], scores[3]);
    if (kind == mask_shape::other) continue;
    m.causal = m.causal || kind == mask_shape::causal;
    extra->clear();
  }
  return true;
}

std::vector<std::optional<dtype>> types_of(const fusion_context& context, const node& n) {
  std::vector<std::optional<dtype>> types;
  for (const auto& in : n.inputs) {
    const auto it = in.empty() ? context.shapes.end() : context.shapes.find(in);
    types.push_back(it != context.shapes.end() && it->second.type_known
                        ? std::optional<dtype>(it->second.type)
                        : std::nullopt);
  }
  return types;
}

// The nodes that replace the match: a Transpose making K when the graph has
// only Kᵀ (or K as [B, Sk, H, D]), and the Attention node.
std::vector<node> fused_nodes(const match& m) {
  std::vector<node> made;
  std::string k = m.k;
  if (k.empty()) {
    node t;
    t.name = m.output + "/key";
    t.op_type = "Transpose";
    t.inputs = {m.k_bshd.empty() ? m.k_transposed : m.k_bshd};
    k = t.name;
    t.outputs = {k};
    t.attributes["perm"] = m.k_bshd.empty() ? int_list{0, 1, 3, 2} : int_list{0, 2, 1, 3};
    made.push_back(std::move(t));
  }
  node a;
  a.name = m.output + "/attention";
  a.op_type = "Attention";
  a.domain = std::string(k_fused_domain);
  a.inputs = {m.q, k, m.v, m.bias, m.mask};
  while (a.inputs.back().empty()) a.inputs.pop_back();
  a.outputs = {m.output};
  a.attributes["scale"] = static_cast<float>(m.scale);
  a.attributes["causal"] = std::int64_t{m.causal ? 1 : 0};
  if (!m.mask.empty()) {
    a.attributes["mask_value"] = static_cast<float>(m.mask_value);
    a.attributes["mask_keeps"] = std::int64_t{m.mask_keeps ? 1 : 0};
  }
  a.attributes["zero_empty_rows"] = std::int64_t{m.zero_empty_rows ? 1 : 0};
  made.push_back(std::move(a));
  return made;
}

bool target_runs(const fusion_context& context, const std::vector<node>& made) {
  // The made Transpose's input types are the graph's; its output's are K's.
  for (const node& n : made) {
    auto types = types_of(context, n);
    if (n.op_type == "Attention" && types.size() > 1) types[1] = types[2];
    if (context.target.refuses(n, types)) return false;
  }
  return true;
}

}  // namespace

std::size_t fuse_attention(graph& g, const fusion_context& context) {
  std::map<std::size_t, std::vector<node>> replacements;  // by the final MatMul's index
  std::set<std::size_t> removed;
  {
    const graph_index index(g);
    const matcher mt{g, index, context};
    evaluated_constants constants;
    for (const node& n : g.nodes) {
      if (!n.domain.empty() || n.op_type != "Softmax") continue;
      auto m = mt.at(n);
      if (!m || !check_shapes(g, mt, *m, constants)) continue;
      std::vector<node> made = fused_nodes(*m);
      if (!target_runs(context, made)) continue;
      std::set<std::size_t> pieces;
      for (const node* p : m->pieces) pieces.insert(static_cast<std::size_t>(p - g.nodes.data()));
      if (std::any_of(pieces.begin(), pieces.end(), [&](auto i) { return removed.contains(i); }))
        continue;
      removed.insert(pieces.begin(), pieces.end());
      replacements[index.producer.at(m->output)] = std::move(made);
    }
  }
  if (replacements.empty()) return 0;
  std::vector<node> nodes;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (auto it = replacements.find(i); it != replacements.end()) {
      for (node& n : it->second) nodes.push_back(std::move(n));
    } else if (!removed.contains(i)) {
      nodes.push_back(std::move(g.nodes[i]));
    }
  }
  g.nodes = std::move(nodes);
  // Initializers stay: a session's plan borrows the model's, and gives back
  // those no node reads any more once fusion is done (session.cpp).
  remove_dead_nodes(g, true);
  return replacements.size();
}

}  // namespace coolbench::engine
