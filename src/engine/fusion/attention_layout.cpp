// The attention layout pass: a coolbench.Attention whose q, k and v are
// views of other tensors (Transposes, Reshapes and Splits over one QKV
// projection, or over three) reads them in place, and one whose output is
// only transposed and reshaped writes the result in place (the "views" form
// of engine/fusion/attention.hpp). On GPT-2 small at 128 tokens that takes 4
// Transposes and a Split per layer out of the plan (docs/perf/engine.md).
//
// A view is a base value, an element offset and a stride per dimension. It
// is traced from the attention's input back through the ops that only
// re-index: Transpose permutes the strides, Reshape (and Squeeze, Unsqueeze,
// Flatten, Identity) keeps them where the new shape splits or merges
// dimensions that are contiguous among themselves, and a Split moves the
// offset. Any other op, or a reshape that would need a copy, ends the trace
// at its output, which is then read as it is.
#include <algorithm>
#include <array>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/fusion/attention.hpp"
#include "engine/fusion/fusion_graph.hpp"
#include "engine/fusion/passes.hpp"

namespace coolbench::engine::fusion_detail {
namespace {

using int_list = std::vector<std::int64_t>;

struct view {
  std::string base;
  std::int64_t offset = 0;
  shape_t shape;
  int_list strides;
};

bool is_onnx(const node& n, std::string_view op) { return n.domain.empty() && n.op_type == op; }

bool only_reindexes(const node& n) {
  return n.domain.empty() &&
         (n.op_type == "Reshape" || n.op_type == "Squeeze" || n.op_type == "Unsqueeze" ||
          n.op_type == "Flatten" || n.op_type == "Identity");
}

int_list contiguous_strides(const shape_t& shape) {
  int_list strides(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

/// `v` re-indexed to `shape` without moving an element, or nullopt when that
/// needs a copy: each run of old dimensions whose product is a run of new
/// ones must be contiguous among itself.
std::optional<view> reshaped(const view& v, const shape_t& shape) {
  // Size-1 dimensions carry no stride: drop them, re-add with any stride.
  shape_t old_shape;
  int_list old_strides;
  for (std::size_t i = 0; i < v.shape.size(); ++i) {
    if (v.shape[i] == 0) return std::nullopt;
    if (v.shape[i] != 1) {
      old_shape.push_back(v.shape[i]);
      old_strides.push_back(v.strides[i]);
    }
  }
  view out{v.base, v.offset, shape, int_list(shape.size(), 0)};
  std::size_t o = 0;
  std::size_t n = 0;
  while (n < shape.size() || o < old_shape.size()) {
    if (n < shape.size() && shape[n] == 1) {
      out.strides[n++] = 0;
      continue;
    }
    if (o >= old_shape.size() || n >= shape.size()) return std::nullopt;
    // The smallest runs [o, o_end) and [n, n_end) of equal products.
    std::size_t o_end = o + 1, n_end = n + 1;
    std::int64_t old_size = old_shape[o], new_size = shape[n];
    while (old_size != new_size) {
      if (old_size < new_size) {
        if (o_end >= old_shape.size()) return std::nullopt;
        old_size *= old_shape[o_end++];
      } else {
        if (n_end >= shape.size()) return std::nullopt;
        new_size *= shape[n_end++];
      }
    }
    for (std::size_t i = o; i + 1 < o_end; ++i) {
      if (old_strides[i] != old_strides[i + 1] * old_shape[i + 1]) return std::nullopt;
    }
    std::int64_t stride = old_strides[o_end - 1];
    for (std::size_t i = n_end; i-- > n;) {
      out.strides[i] = shape[i] == 1 ? 0 : stride;
      stride *= shape[i];
    }
    o = o_end;
    n = n_end;
  }
  return out;
}

class view_tracer {
 public:
  view_tracer(const graph& g, const graph_index& index, const fusion_context& context)
      : m_g(g), m_index(index), m_context(context) {}

  /// `value` as a view of the furthest tensor it re-indexes, or nullopt when
  /// not even its own shape is known.
  [[nodiscard]] std::optional<view> of(const std::string& value, int depth = 0) const {
    const auto own = static_shape(m_context, value);
    const auto at = m_index.producer(value);
    if (at && depth < 32) {
      const node& n = m_g.nodes[*at];
      if (is_onnx(n, "Transpose") && n.outputs.size() == 1) {
        if (auto in = of(n.inputs[0], depth + 1)) {
          auto perm = n.get<int_list>("perm", {});
          if (perm.empty()) {
            for (std::size_t i = in->shape.size(); i-- > 0;) {
              perm.push_back(static_cast<std::int64_t>(i));
            }
          }
          if (perm.size() == in->shape.size()) {
            view out{in->base, in->offset, {}, {}};
            bool valid = true;
            for (const auto p : perm) {
              if (p < 0 || p >= static_cast<std::int64_t>(in->shape.size())) {
                valid = false;
                break;
              }
              out.shape.push_back(in->shape[static_cast<std::size_t>(p)]);
              out.strides.push_back(in->strides[static_cast<std::size_t>(p)]);
            }
            if (valid) return out;
          }
        }
      } else if (only_reindexes(n) && own) {
        if (auto in = of(n.inputs[0], depth + 1)) {
          if (auto out = reshaped(*in, *own)) return out;
        }
      } else if (is_onnx(n, "Split") && own) {
        if (auto in = of(n.inputs[0], depth + 1)) {
          if (auto out = split_part(n, value, *in)) return out;
        }
      }
    }
    if (!own) return std::nullopt;
    return view{value, 0, *own, contiguous_strides(*own)};
  }

 private:
  /// Output `value` of Split `n` as a view of its input's view `in`.
  std::optional<view> split_part(const node& n, const std::string& value, const view& in) const {
    auto axis = n.get<std::int64_t>("axis", 0);
    const auto rank = static_cast<std::int64_t>(in.shape.size());
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return std::nullopt;
    const auto a = static_cast<std::size_t>(axis);
    std::int64_t start = 0;
    for (const auto& out : n.outputs) {
      const auto part = static_shape(m_context, out);
      if (!part || part->size() != in.shape.size()) return std::nullopt;
      if (out == value) {
        view v = in;
        v.offset += start * in.strides[a];
        v.shape[a] = (*part)[a];
        return v;
      }
      start += (*part)[a];
    }
    return std::nullopt;
  }

  const graph& m_g;
  const graph_index& m_index;
  const fusion_context& m_context;
};

/// The [offset, batch, head, row] strides of a [B, H, S, D] view whose rows
/// are contiguous; `full` is [B, H] of q: a dimension of 1 where q's is
/// larger is broadcast (stride 0). nullopt otherwise.
std::optional<int_list> attention_view(const view& v, const shape_t& want) {
  if (v.shape.size() != 4 || v.shape[3] != want[3] || v.shape[2] != want[2]) return std::nullopt;
  if (v.shape[3] > 1 && v.strides[3] != 1) return std::nullopt;
  int_list out{v.offset, 0, 0, v.strides[2]};
  for (std::size_t a = 0; a < 2; ++a) {
    if (v.shape[a] == want[a]) {
      out[a + 1] = want[a] == 1 ? 0 : v.strides[a];
    } else if (v.shape[a] != 1) {
      return std::nullopt;
    }
  }
  if (std::any_of(out.begin(), out.end(), [](std::int64_t s) { return s < 0; })) {
    return std::nullopt;
  }
  return out;
}

/// Where the output of attention `a` ([B, H, Sq, D]) can be written: the
/// value after its sole Transpose and Reshape-like readers, with the view
/// of the output inside it. nullopt when its output goes anywhere else.
struct output_target {
  std::string value;
  std::vector<std::size_t> absorbed;  // the Transpose and reshapes
  int_list strides;                   // [0, batch, head, row] into `value`
};

std::optional<output_target> written_in_place(const graph& g, const graph_index& index,
                                              const fusion_context& context, const node& a,
                                              const shape_t& out_shape) {
  const auto t_at = index.sole_reader(a.outputs[0]);
  if (!t_at || !is_onnx(g.nodes[*t_at], "Transpose")) return std::nullopt;
  const auto perm = g.nodes[*t_at].get<int_list>("perm", {});
  if (perm.size() != 4) return std::nullopt;
  output_target target;
  target.absorbed.push_back(*t_at);
  std::string value = g.nodes[*t_at].outputs[0];
  for (auto r_at = index.sole_reader(value); r_at && only_reindexes(g.nodes[*r_at]);
       r_at = index.sole_reader(value)) {
    target.absorbed.push_back(*r_at);
    value = g.nodes[*r_at].outputs[0];
  }
  const auto final_shape = static_shape(context, value);
  if (!final_shape) return std::nullopt;
  // The transposed output as a view of the final value, then un-permuted.
  shape_t transposed(4);
  for (std::size_t i = 0; i < 4; ++i) {
    if (perm[i] < 0 || perm[i] > 3) return std::nullopt;
    transposed[i] = out_shape[static_cast<std::size_t>(perm[i])];
  }
  const auto in_final =
      reshaped(view{value, 0, *final_shape, contiguous_strides(*final_shape)}, transposed);
  if (!in_final) return std::nullopt;
  int_list strides(4, 0);
  for (std::size_t i = 0; i < 4; ++i) {
    strides[static_cast<std::size_t>(perm[i])] = in_final->strides[i];
  }
  if (out_shape[3] > 1 && strides[3] != 1) return std::nullopt;
  target.value = value;
  target.strides = {0, strides[0], strides[1], strides[2]};
  return target;
}

}  // namespace

std::size_t fuse_attention_layout(graph& g, const fusion_context& context) {
  std::size_t made = 0;
  std::set<std::string> done;  // attentions looked at (by output name)
  for (bool again = true; again;) {
    again = false;
    const graph_index index(g);
    const view_tracer tracer(g, index, context);
    for (std::size_t i = 0; i < g.nodes.size() && !again; ++i) {
      const node& a = g.nodes[i];
      if (a.domain != k_fused_domain || a.op_type != "Attention" || a.has("views") ||
          a.inputs.size() < 3 || !done.insert(a.outputs[0]).second) {
        continue;
      }
      // The output is [B, H, Sq, D] like q (the attention pass may have
      // named it anew, so shape inference need not know it).
      const auto q_shape = static_shape(context, a.inputs[0]);
      if (!q_shape || q_shape->size() != 4) continue;
      const auto k = tracer.of(a.inputs[1]);
      if (!k || k->shape.size() != 4) continue;
      const shape_t q_want = *q_shape;
      const shape_t kv_want{(*q_shape)[0], (*q_shape)[1], k->shape[2], (*q_shape)[3]};
      std::array<std::optional<view>, 3> views{tracer.of(a.inputs[0]), k, tracer.of(a.inputs[2])};
      std::array<std::optional<int_list>, 3> strides;
      bool moved = false;
      for (std::size_t x = 0; x < 3; ++x) {
        const shape_t& want = x == 0 ? q_want : kv_want;
        if (views[x]) strides[x] = attention_view(*views[x], want);
        if (!strides[x]) {  // a view the kernels cannot read (rows not contiguous): the input
          const auto own = static_shape(context, a.inputs[x]);
          if (!own) break;
          views[x] = view{a.inputs[x], 0, *own, contiguous_strides(*own)};
          strides[x] = attention_view(*views[x], want);
          if (!strides[x]) break;
        }
        moved = moved || views[x]->base != a.inputs[x];
      }
      if (!strides[0] || !strides[1] || !strides[2]) continue;
      const auto target = written_in_place(g, index, context, a, *q_shape);
      if (!moved && !target) continue;
      node fused = a;
      fused.name = a.name + "/in_place";
      int_list all;
      for (std::size_t x = 0; x < 3; ++x) {
        fused.inputs[x] = views[x]->base;
        all.insert(all.end(), strides[x]->begin(), strides[x]->end());
      }
      std::set<std::size_t> removed{i};
      if (target) {
        fused.outputs = {target->value};
        all.insert(all.end(), target->strides.begin(), target->strides.end());
        removed.insert(target->absorbed.begin(), target->absorbed.end());
        fused.attributes["output_shape"] = *static_shape(context, target->value);
      } else {
        const int_list dense = contiguous_strides(*q_shape);
        all.insert(all.end(), {0, dense[0], dense[1], dense[2]});
        fused.attributes["output_shape"] = *q_shape;
      }
      fused.attributes["views"] = all;
      fused.attributes["shape"] =
          int_list{(*q_shape)[0], (*q_shape)[1], (*q_shape)[2], k->shape[2], (*q_shape)[3]};
      if (!target_runs(context, fused)) continue;
      replace_nodes(g, removed, std::move(fused));
      ++made;
      again = true;  // indices moved: index the graph again
    }
  }
  // The transposes, reshapes and splits nothing reads any more.
  if (made > 0) remove_dead_nodes(g, true);
  return made;
}

}  // namespace coolbench::engine::fusion_detail
