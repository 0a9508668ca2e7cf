// The QKV merge pass: an attention (views form) whose q, k and v are each the whole output of
// its own FusedGemm, the three by one activation with the same epilogue and weights of one
// shape, reads them from one FusedGemm by the three weights side by side instead. BERT and ViT
// export Q, K and V as three products; at batch 1 each is a few microseconds of launch and
// ramp for 1.2 MB of weights, and one product of three times the width costs about one of
// them (GPT-2 exports them as one already).
//
// The merged product's weight is the three concatenated along N ([K, 3N], or [3N, K] read
// transposed) and its bias likewise; its output [.., 3N] is a new value. The attention's views
// move into it: a stride that steps whole rows of N steps whole rows of 3N, the offset moves
// by the part's first column; the columns a view reads stay within the part.
#include <array>
#include <cstring>
#include <type_traits>
#include <variant>

#include "engine/fusion/attention.hpp"
#include "engine/fusion/fusion_graph.hpp"
#include "engine/fusion/passes.hpp"

namespace coolbench::engine::fusion_detail {
namespace {

using int_list = std::vector<std::int64_t>;

bool is_fused(const node& n, std::string_view op) {
  return n.domain == k_fused_domain && n.op_type == op;
}

// Two attribute values equal (a tensor attribute never is: FusedGemm has none).
bool same_attribute(const attribute& x, const attribute& y) {
  if (x.index() != y.index() || std::holds_alternative<tensor>(x)) return false;
  return std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, tensor>) {
          return false;
        } else {
          return v == std::get<T>(y);
        }
      },
      x);
}

// The product making an attention input: a FusedGemm whose only reader is the attention (once),
// with a 2-D weight initializer and at most a bias (no residual, no padded weight).
const node* sole_product(const graph& g, const graph_index& index, const node& attention,
                         const std::string& value) {
  const auto p = index.producer(value);
  if (!p || index.is_graph_output(value)) return nullptr;
  const node& n = g.nodes[*p];
  if (!is_fused(n, "FusedGemm") || n.outputs.size() != 1 || n.inputs.size() < 2 ||
      n.inputs.size() > 3 || n.get<std::int64_t>("b_columns", 0) != 0) {
    return nullptr;
  }
  const auto& readers = index.readers(value);
  if (readers.size() != 1 || &g.nodes[readers[0]] != &attention) return nullptr;
  const auto w = g.initializers.find(n.inputs[1]);
  if (w == g.initializers.end() || w->second.rank() != 2) return nullptr;
  return &n;
}

// The three products agree in all but their weights' N and their biases.
bool alike(const graph& g, const std::array<const node*, 3>& p) {
  const node& first = *p[0];
  const tensor& w0 = g.initializers.at(first.inputs[1]);
  const bool trans_b = first.get<std::int64_t>("transB", 0) != 0;
  const bool biased = first.inputs.size() > 2 && !first.inputs[2].empty();
  for (const node* n : p) {
    if (n->inputs[0] != first.inputs[0] || n->attributes.size() != first.attributes.size())
      return false;
    for (const auto& [name, value] : first.attributes) {
      const auto it = n->attributes.find(name);
      if (it == n->attributes.end() || (name != "shape" && !same_attribute(it->second, value)))
        return false;
    }
    const tensor& w = g.initializers.at(n->inputs[1]);
    if (w.type() != w0.type() || w.shape() != w0.shape()) return false;
    if ((n->inputs.size() > 2 && !n->inputs[2].empty()) != biased) return false;
    if (biased) {
      const auto b = g.initializers.find(n->inputs[2]);
      if (b == g.initializers.end() || b->second.type() != w0.type() ||
          b->second.size() != (trans_b ? w.shape()[0] : w.shape()[1])) {
        return false;
      }
    }
  }
  // Each output [.., N] as the product makes it (a "shape" only regroups the rows).
  for (const node* n : p) {
    if (n->has("shape") &&
        n->get<int_list>("shape").back() != (trans_b ? w0.shape()[0] : w0.shape()[1]))
      return false;
  }
  return true;
}

// The three parts side by side: each of `blocks` blocks of the output holds block b of every
// part in turn. A weight [K, N] gives K blocks of one row ([K, 3N]); a weight read transposed
// [N, K] and a bias [N] give one block, the whole part ([3N, K], [3N]).
tensor side_by_side(const std::array<const tensor*, 3>& parts, std::int64_t blocks, shape_t shape) {
  tensor out(parts[0]->type(), std::move(shape));
  const std::size_t block = parts[0]->raw().size() / static_cast<std::size_t>(blocks);
  for (std::size_t b = 0; b < static_cast<std::size_t>(blocks); ++b) {
    for (std::size_t part = 0; part < 3; ++part) {
      std::memcpy(out.raw().data() + (b * 3 + part) * block, parts[part]->raw().data() + b * block,
                  block);
    }
  }
  return out;
}

// One input's view [offset, batch, head, row strides] over a [.., n] output, moved into the
// [.., 3n] output at column `first`; nullopt when a stride neither steps whole rows nor stays
// within one (then the view cannot move). `extent` is each stride's count: batch, heads, rows;
// a view reads `depth` contiguous columns at each position.
std::optional<int_list> moved_view(const int_list& v, const std::array<std::int64_t, 3>& extent,
                                   std::int64_t depth, std::int64_t n, std::int64_t first) {
  int_list out(4);
  std::int64_t column_reach = v[0] % n + depth;  // one past the last column read, in the part
  out[0] = (v[0] / n) * 3 * n + first + v[0] % n;
  for (std::size_t s = 1; s < 4; ++s) {
    const std::int64_t stride = v[s], count = extent[s - 1];
    if (count <= 1) {
      out[s] = stride;
    } else if (stride % n == 0) {
      out[s] = stride / n * 3 * n;
    } else if (stride < n) {
      out[s] = stride;
      column_reach += (count - 1) * stride;
    } else {
      return std::nullopt;
    }
  }
  if (column_reach > n) return std::nullopt;
  return out;
}

bool merge_one(graph& g, const fusion_context& context) {
  const graph_index index(g);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const node& a = g.nodes[i];
    if (!is_fused(a, "Attention") || !a.has("views") || a.inputs.size() < 3) continue;
    if (a.inputs[0] == a.inputs[1] || a.inputs[1] == a.inputs[2] || a.inputs[0] == a.inputs[2])
      continue;
    std::array<const node*, 3> p{};
    bool found = true;
    for (std::size_t x = 0; x < 3; ++x) {
      p[x] = sole_product(g, index, a, a.inputs[x]);
      found = found && p[x] != nullptr;
    }
    if (!found || !alike(g, p)) continue;
    const auto& views = a.get<int_list>("views");
    const auto& shape = a.get<int_list>("shape");  // B, H, Sq, Sk, D
    if (views.size() != 16 || shape.size() != 5) continue;
    const bool trans_b = p[0]->get<std::int64_t>("transB", 0) != 0;
    const tensor& w0 = g.initializers.at(p[0]->inputs[1]);
    const std::int64_t n = trans_b ? w0.shape()[0] : w0.shape()[1];
    int_list moved = views;
    bool movable = true;
    for (std::size_t x = 0; x < 3 && movable; ++x) {
      const std::int64_t rows = x == 0 ? shape[2] : shape[3];
      const int_list view(views.begin() + static_cast<std::ptrdiff_t>(4 * x),
                          views.begin() + static_cast<std::ptrdiff_t>(4 * x + 4));
      const auto m = moved_view(view, {shape[0], shape[1], rows}, shape[4], n,
                                static_cast<std::int64_t>(x) * n);
      movable = m.has_value();
      if (movable)
        std::copy(m->begin(), m->end(), moved.begin() + static_cast<std::ptrdiff_t>(4 * x));
    }
    if (!movable) continue;

    node merged = *p[0];
    merged.name = p[0]->name + "/qkv";
    // Named after the merged output, unique per attention (biases are often one shared value).
    const std::string output = a.inputs[0] + "/qkv";
    const std::string weight = output + "/weight";
    const bool biased = merged.inputs.size() > 2 && !merged.inputs[2].empty();
    const std::string bias = biased ? output + "/bias" : std::string();
    merged.inputs[1] = weight;
    if (biased) merged.inputs[2] = bias;
    if (merged.has("shape")) {
      int_list s = merged.get<int_list>("shape");
      s.back() = 3 * n;
      merged.attributes["shape"] = s;
    }
    merged.outputs = {output};
    node attention = a;
    attention.inputs[0] = attention.inputs[1] = attention.inputs[2] = output;
    attention.attributes["views"] = moved;
    if (!target_runs(context, merged) || !target_runs(context, attention)) continue;
    // The new names must be free (a graph merged twice, or a model that uses them).
    if (g.initializers.contains(weight) || (biased && g.initializers.contains(bias)) ||
        index.producer(output))
      continue;
    // Only now the copies: a few MB a layer.
    const auto parts = [&](std::size_t input) {
      std::array<const tensor*, 3> t{};
      for (std::size_t x = 0; x < 3; ++x) t[x] = &g.initializers.at(p[x]->inputs[input]);
      return t;
    };
    const shape_t& ws = w0.shape();
    g.initializers.emplace(weight, trans_b ? side_by_side(parts(1), 1, {3 * ws[0], ws[1]})
                                           : side_by_side(parts(1), ws[0], {ws[0], 3 * ws[1]}));
    if (biased) g.initializers.emplace(bias, side_by_side(parts(2), 1, {3 * n}));
    std::set<std::size_t> removed;
    for (const node* x : p) removed.insert(static_cast<std::size_t>(x - g.nodes.data()));
    g.nodes[i] = std::move(attention);
    replace_nodes(g, removed, std::move(merged));
    return true;
  }
  return false;
}

}  // namespace

std::size_t merge_qkv_products(graph& g, const fusion_context& context) {
  std::size_t merged = 0;
  while (merge_one(g, context)) ++merged;
  return merged;
}

}  // namespace coolbench::engine::fusion_detail
