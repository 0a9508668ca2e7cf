// Attention subgraphs as exporters write them, for the fusion tests (CPU)
// and the CUDA parity tests: q [B, H, Sq, D], k and v [B, H, Sk, D] as graph
// inputs, then Kᵀ, the scale, a mask, Softmax and the MatMul with V.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "coolbench/engine/graph.hpp"
#include "coolbench/engine/tensor.hpp"

namespace coolbench::engine::attention_test {

enum class mask_kind : std::uint8_t {
  none,
  causal_where,        // Where(future, lowest, scores): coolbench's GPT-2
  causal_add,          // Add(scores, Where(allowed, 0, -inf)) + IsNaN guard: the SDPA export
  bias,                // Add(scores, bias input [B, 1, 1, Sk]): BERT's padding mask
  causal_folded_bias,  // Add(scores, a folded [1, 1, Sq, Sk] bias of 0 and the dtype's lowest):
                       // the dynamo export's causal mask once its shape is bound and folded
};

struct attention_spec {
  dtype type = dtype::float32;
  std::int64_t batch = 1, heads = 2, sq = 5, sk = 5, head_dim = 8;
  mask_kind mask = mask_kind::none;
  bool split_scale = false;      // Mul on Q and on Kᵀ (SDPA) instead of Div on the scores
  bool causal_as_input = false;  // the causal mask a graph input (not folded)
  /// mask_kind::bias: the first half of every row's keys at the dtype's lowest value, as a
  /// left-padded batch's additive mask (HF's finfo.min): whole tiles of keys hidden by a
  /// finite value before any visible one (the test fills the input; the graph is the same).
  bool left_padded = false;
};

inline node make(std::string op, std::vector<std::string> in, std::vector<std::string> out,
                 std::map<std::string, attribute> attributes = {}) {
  node n;
  n.name = out[0];
  n.op_type = std::move(op);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.attributes = std::move(attributes);
  return n;
}

inline tensor float_scalar(dtype type, float v) {
  tensor t(type, {});
  if (type == dtype::float32) {
    t.data<float>()[0] = v;
  } else {
    const std::uint16_t bits = type == dtype::float16 ? float_to_half(v) : float_to_bfloat16(v);
    std::memcpy(t.raw().data(), &bits, 2);
  }
  return t;
}

/// true where key j is after query i + (sk - sq): the hidden positions.
inline tensor future_mask(std::int64_t sq, std::int64_t sk, bool hidden_value) {
  tensor t(dtype::boolean, {1, 1, sq, sk});
  auto v = t.data<bool>();
  for (std::int64_t i = 0; i < sq; ++i) {
    for (std::int64_t j = 0; j < sk; ++j) {
      v[static_cast<std::size_t>(i * sk + j)] = (j > i + sk - sq) == hidden_value;
    }
  }
  return t;
}

inline value_info input(std::string name, dtype type, const shape_t& shape) {
  value_info v{std::move(name), type, {}, true};
  for (const auto d : shape) v.shape.push_back(dimension{d, {}});
  return v;
}

/// Scores of q and kᵀ ([B, H, D, Sk]), the scale, the mask, Softmax and the
/// MatMul with v into `out`, appended to `g` (inputs and initializers added
/// as the spec's mask needs).
inline void append_attention(graph& g, const attention_spec& s, const std::string& q,
                             const std::string& kt, const std::string& v, const std::string& out) {
  const dtype t = s.type;
  const float root = std::sqrt(static_cast<float>(s.head_dim));
  std::string scores = "scores";
  if (s.split_scale) {
    g.initializers["quarter_root"] = float_scalar(t, 1 / std::sqrt(root));
    g.nodes.push_back(make("Mul", {q, "quarter_root"}, {"q_scaled"}));
    g.nodes.push_back(make("Mul", {kt, "quarter_root"}, {"kt_scaled"}));
    g.nodes.push_back(make("MatMul", {"q_scaled", "kt_scaled"}, {scores}));
  } else {
    g.initializers["root"] = float_scalar(t, root);
    g.nodes.push_back(make("MatMul", {q, kt}, {"raw_scores"}));
    g.nodes.push_back(make("Div", {"raw_scores", "root"}, {scores}));
  }
  std::string logits = scores;
  bool guard = false;
  if (s.mask == mask_kind::causal_where) {
    g.initializers["lowest"] = float_scalar(t, t == dtype::float16 ? -65504.0F : -3.4028235e38F);
    if (s.causal_as_input) {
      g.inputs.push_back(input("future", dtype::boolean, {1, 1, s.sq, s.sk}));
    } else {
      g.initializers["future"] = future_mask(s.sq, s.sk, true);
    }
    g.nodes.push_back(make("Where", {"future", "lowest", scores}, {"masked"}));
    logits = "masked";
  } else if (s.mask == mask_kind::causal_add) {
    g.initializers["zero"] = float_scalar(t, 0);
    g.initializers["minus_inf"] = float_scalar(t, -INFINITY);
    if (s.causal_as_input) {
      g.inputs.push_back(input("allowed", dtype::boolean, {1, 1, s.sq, s.sk}));
    } else {
      g.initializers["allowed"] = future_mask(s.sq, s.sk, false);
    }
    g.nodes.push_back(make("Where", {"allowed", "zero", "minus_inf"}, {"mask_bias"}));
    g.nodes.push_back(make("Add", {scores, "mask_bias"}, {"masked"}));
    logits = "masked";
    guard = true;
  } else if (s.mask == mask_kind::causal_folded_bias) {
    // float16's lowest is -65504: it cannot hold the -1e30 a float32 export fills with.
    const float lowest = t == dtype::float32   ? -3.4028235e38F
                         : t == dtype::float16 ? -65504.0F
                                               : -3.3895314e38F;
    const tensor future = future_mask(s.sq, s.sk, true);
    tensor bias(t, {1, 1, s.sq, s.sk});
    for (std::int64_t e = 0; e < bias.size(); ++e) {
      const tensor one =
          float_scalar(t, future.data<bool>()[static_cast<std::size_t>(e)] ? lowest : 0.0F);
      std::memcpy(bias.raw().data() + e * static_cast<std::int64_t>(one.raw().size()),
                  one.raw().data(), one.raw().size());
    }
    g.initializers["causal_bias"] = std::move(bias);
    g.nodes.push_back(make("Add", {scores, "causal_bias"}, {"masked"}));
    logits = "masked";
  } else if (s.mask == mask_kind::bias) {
    g.inputs.push_back(input("bias", t, {s.batch, 1, 1, s.sk}));
    g.nodes.push_back(make("Add", {"bias", scores}, {"masked"}));
    logits = "masked";
  }
  g.nodes.push_back(make("Softmax", {logits}, {"probs"}, {{"axis", std::int64_t{-1}}}));
  std::string probs = "probs";
  if (guard) {
    g.nodes.push_back(make("IsNaN", {"probs"}, {"nan"}));
    g.nodes.push_back(make("Where", {"nan", "zero", "probs"}, {"guarded"}));
    probs = "guarded";
  }
  g.nodes.push_back(make("MatMul", {probs, v}, {out}));
}

inline graph attention_graph(const attention_spec& s) {
  graph g;
  g.name = "attention";
  g.opset = 18;
  const dtype t = s.type;
  g.inputs = {input("q", t, {s.batch, s.heads, s.sq, s.head_dim}),
              input("k", t, {s.batch, s.heads, s.sk, s.head_dim}),
              input("v", t, {s.batch, s.heads, s.sk, s.head_dim})};
  g.outputs = {input("out", t, {s.batch, s.heads, s.sq, s.head_dim})};
  g.nodes.push_back(
      make("Transpose", {"k"}, {"kt"}, {{"perm", std::vector<std::int64_t>{0, 1, 3, 2}}}));
  append_attention(g, s, "q", "kt", "v", "out");
  return g;
}

inline tensor int64_list(const std::vector<std::int64_t>& values) {
  tensor t(dtype::int64, {static_cast<std::int64_t>(values.size())});
  for (std::size_t i = 0; i < values.size(); ++i) t.data<std::int64_t>()[i] = values[i];
  return t;
}

/// Self-attention over one QKV projection as GPT-2 writes it: x [B, S, 3·H·D]
/// split into q, k, v, each reshaped to [B, S, H, D] and transposed to heads
/// (k straight to [B, H, D, S]); the output transposed back and reshaped
/// to [B, S, H·D]. sk must equal sq.
/// From q_heads, k_heads and v_heads [B, S, H, D]: the head transposes, the attention and the
/// heads merged back into "out" [B, S, H·D] (by the initializer "merged_shape").
inline void attend_over_heads(graph& g, const attention_spec& s) {
  const auto perm = [](std::vector<std::int64_t> p) {
    return std::map<std::string, attribute>{{"perm", std::move(p)}};
  };
  g.nodes.push_back(make("Transpose", {"q_heads"}, {"q"}, perm({0, 2, 1, 3})));
  g.nodes.push_back(make("Transpose", {"k_heads"}, {"kt"}, perm({0, 2, 3, 1})));
  g.nodes.push_back(make("Transpose", {"v_heads"}, {"v"}, perm({0, 2, 1, 3})));
  append_attention(g, s, "q", "kt", "v", "context");
  g.nodes.push_back(make("Transpose", {"context"}, {"context_t"}, perm({0, 2, 1, 3})));
  g.nodes.push_back(make("Reshape", {"context_t", "merged_shape"}, {"out"}));
}

inline graph qkv_projection_graph(const attention_spec& s) {
  graph g;
  g.name = "attention over a QKV projection";
  g.opset = 18;
  const dtype t = s.type;
  const std::int64_t width = s.heads * s.head_dim;
  g.inputs = {input("x", t, {s.batch, s.sq, 3 * width})};
  g.outputs = {input("out", t, {s.batch, s.sq, width})};
  g.initializers["split_sizes"] = int64_list({width, width, width});
  g.initializers["heads_shape"] = int64_list({s.batch, s.sq, s.heads, s.head_dim});
  g.initializers["merged_shape"] = int64_list({s.batch, s.sq, width});
  g.nodes.push_back(
      make("Split", {"x", "split_sizes"}, {"xq", "xk", "xv"}, {{"axis", std::int64_t{2}}}));
  for (const char* part : {"q", "k", "v"}) {
    g.nodes.push_back(
        make("Reshape", {std::string("x") + part, "heads_shape"}, {std::string(part) + "_heads"}));
  }
  attend_over_heads(g, s);
  return g;
}

/// BERT's and ViT's form: Q, K and V each projected from h [B, S, W] by its own weight and
/// bias (MatMul by [W, W] + Add, or with `gemm_trans_b` a Gemm with transB over h as [B·S, W]
/// by a weight stored [W, W] transposed), split into heads, attention, heads merged.
/// Weights and biases are random from `seed`, scaled to keep unit variance.
inline graph three_projections_graph(const attention_spec& s, bool gemm_trans_b,
                                     unsigned seed = 5) {
  graph g;
  g.name = "attention over three projections";
  g.opset = 18;
  const dtype t = s.type;
  const std::int64_t width = s.heads * s.head_dim;
  g.inputs = {input("h", t, {s.batch, s.sq, width})};
  g.outputs = {input("out", t, {s.batch, s.sq, width})};
  g.initializers["heads_shape"] = int64_list({s.batch, s.sq, s.heads, s.head_dim});
  g.initializers["rows_shape"] = int64_list({s.batch * s.sq, width});
  g.initializers["merged_shape"] = int64_list({s.batch, s.sq, width});
  std::uint32_t state = seed;
  const auto next = [&] {  // uniform in [-1, 1)
    state = state * 1664525U + 1013904223U;
    return static_cast<float>(state >> 8U) / 8388608.0F - 1.0F;
  };
  const float scale = 1.7F / std::sqrt(static_cast<float>(width));
  if (gemm_trans_b) g.nodes.push_back(make("Reshape", {"h", "rows_shape"}, {"h_rows"}));
  for (const std::string part : {"q", "k", "v"}) {
    tensor w(t, {width, width}), b(t, {width});
    for (std::int64_t i = 0; i < w.size(); ++i) {
      const tensor one = float_scalar(t, scale * next());
      std::memcpy(w.raw().data() + i * static_cast<std::int64_t>(one.raw().size()),
                  one.raw().data(), one.raw().size());
    }
    for (std::int64_t i = 0; i < b.size(); ++i) {
      const tensor one = float_scalar(t, 0.1F * next());
      std::memcpy(b.raw().data() + i * static_cast<std::int64_t>(one.raw().size()),
                  one.raw().data(), one.raw().size());
    }
    g.initializers["w" + part] = std::move(w);
    g.initializers["b" + part] = std::move(b);
    if (gemm_trans_b) {
      g.nodes.push_back(make("Gemm", {"h_rows", "w" + part, "b" + part}, {"p" + part},
                             {{"transB", std::int64_t{1}}}));
    } else {
      g.nodes.push_back(make("MatMul", {"h", "w" + part}, {"m" + part}));
      g.nodes.push_back(make("Add", {"m" + part, "b" + part}, {"p" + part}));
    }
    g.nodes.push_back(make("Reshape", {"p" + part, "heads_shape"}, {part + "_heads"}));
  }
  attend_over_heads(g, s);
  return g;
}

}  // namespace coolbench::engine::attention_test
