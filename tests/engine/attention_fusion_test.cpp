// The attention fusion pass on the CPU: it fuses the attention of every
// transformer export in tests/data/models and of coolbench's GPT-2, the fused
// graph computes what the unfused one does (coolbench.Attention evaluated by
// a plain reference here; the CUDA kernels are checked against the CPU in
// cuda_attention_test), and patterns that are not attention are left alone.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <filesystem>

#include "coolbench/engine/model.hpp"
#include "coolbench/engine/passes.hpp"
#include "engine/attention_graphs.hpp"
#include "engine/backend.hpp"
#include "engine/fusion/attention.hpp"
#include "engine/fusion/fusion.hpp"
#include "engine/fusion/passes.hpp"

namespace coolbench::engine {
namespace {

using namespace attention_test;  // NOLINT(google-build-using-namespace)

// The CPU's ops plus coolbench.Attention and a plain coolbench.FusedGemm (bias, no activation,
// no residual, float32): a target the passes make nodes for.
class attention_target final : public backend {
 public:
  std::string_view name() const noexcept override { return "attention-target"; }
  std::string describe() const override { return "cpu + coolbench.Attention, FusedGemm"; }
  bool supports(const node& n) const override {
    if (n.domain != k_fused_domain) return m_cpu->supports(n);
    return n.op_type == "Attention" ||
           (n.op_type == "FusedGemm" && n.get<std::string>("activation", "none") == "none" &&
            n.inputs.size() <= 3 && n.get<std::int64_t>("transA", 0) == 0);
  }
  void run(const node& n, std::span<const tensor* const> in, std::span<tensor> out) override {
    if (n.domain == k_fused_domain && n.op_type == "FusedGemm") return gemm(n, in, out);
    if (n.domain == k_fused_domain) return reference(n, in, out);
    m_cpu->run(n, in, out);
  }

 private:
  // A [.., K] by B ([K, N], or [N, K] with transB), plus the bias, times alpha on the product.
  static void gemm(const node& n, std::span<const tensor* const> in, std::span<tensor> out) {
    const tensor &a = *in[0], &b = *in[1];
    const tensor* bias = in.size() > 2 ? in[2] : nullptr;
    const bool tb = n.get<std::int64_t>("transB", 0) != 0;
    const std::int64_t k = a.shape().back(), cols = tb ? b.shape()[0] : b.shape()[1];
    const std::int64_t rows = a.size() / k;
    shape_t shape(a.shape().begin(), a.shape().end() - 1);
    shape.push_back(cols);
    shape = n.get<std::vector<std::int64_t>>("shape", shape);
    tensor y(dtype::float32, shape);
    const float alpha = n.get<float>("alpha", 1.0F);
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c = 0; c < cols; ++c) {
        double acc = 0;
        for (std::int64_t i = 0; i < k; ++i) {
          const std::int64_t at = tb ? c * k + i : i * cols + c;
          acc += static_cast<double>(a.data<float>()[static_cast<std::size_t>(r * k + i)]) *
                 b.data<float>()[static_cast<std::size_t>(at)];
        }
        const float sum = static_cast<float>(acc) * alpha +
                          (bias != nullptr ? bias->data<float>()[static_cast<std::size_t>(c)] : 0);
        y.data<float>()[static_cast<std::size_t>(r * cols + c)] = sum;
      }
    }
    out[0] = std::move(y);
  }

  // The views form's view (attention.hpp): [B, H, length, D] of `x`, from
  // the four ints at `view`.
  static tensor gather(const tensor& x, const std::int64_t* view, std::int64_t batch,
                       std::int64_t heads, std::int64_t length, std::int64_t d) {
    tensor t(dtype::float32, {batch, heads, length, d});
    std::size_t at = 0;
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t h = 0; h < heads; ++h)
        for (std::int64_t i = 0; i < length; ++i)
          for (std::int64_t c = 0; c < d; ++c)
            t.data<float>()[at++] = x.data<float>()[static_cast<std::size_t>(
                view[0] + b * view[1] + h * view[2] + i * view[3] + c)];
    return t;
  }

  // coolbench.Attention in float32, the definition in attention.hpp written out.
  static void reference(const node& n, std::span<const tensor* const> in, std::span<tensor> out) {
    if (n.has("views")) {
      const auto& views = n.get<std::vector<std::int64_t>>("views");
      const auto& s = n.get<std::vector<std::int64_t>>("shape");  // B, H, Sq, Sk, D
      const tensor q = gather(*in[0], &views[0], s[0], s[1], s[2], s[4]);
      const tensor k = gather(*in[1], &views[4], s[0], s[1], s[3], s[4]);
      const tensor v = gather(*in[2], &views[8], s[0], s[1], s[3], s[4]);
      std::vector<const tensor*> dense = {&q, &k, &v};
      for (std::size_t i = 3; i < in.size(); ++i) dense.push_back(in[i]);
      node plain = n;
      plain.attributes.erase("views");
      std::vector<tensor> o(1);
      reference(plain, dense, o);
      tensor placed(dtype::float32, n.get<std::vector<std::int64_t>>("output_shape"));
      const std::int64_t* w = &views[12];
      std::size_t at = 0;
      for (std::int64_t b = 0; b < s[0]; ++b)
        for (std::int64_t h = 0; h < s[1]; ++h)
          for (std::int64_t i = 0; i < s[2]; ++i)
            for (std::int64_t c = 0; c < s[4]; ++c)
              placed.data<float>()[static_cast<std::size_t>(b * w[1] + h * w[2] + i * w[3] + c)] =
                  o[0].data<float>()[at++];
      out[0] = std::move(placed);
      return;
    }
    const tensor &q = *in[0], &k = *in[1], &v = *in[2];
    const tensor* bias = in.size() > 3 ? in[3] : nullptr;
    const tensor* mask = in.size() > 4 ? in[4] : nullptr;
    const auto& s = q.shape();
    const std::int64_t bh = s[0] * s[1], sq = s[2], d = s[3], sk = k.shape()[2];
    const auto scale = n.get<float>("scale");
    const bool causal = n.get<std::int64_t>("causal", 0) != 0;
    const bool keeps = n.get<std::int64_t>("mask_keeps", 0) != 0;
    const auto fill = n.get<float>("mask_value", 0.0F);
    const bool zero_rows = n.get<std::int64_t>("zero_empty_rows", 0) != 0;
    const auto at = [&](const tensor* t, std::int64_t b, std::int64_t h, std::int64_t i,
                        std::int64_t j) {
      const shape_t& ts = t->shape();
      const std::int64_t full[4] = {b, h, i, j};
      std::int64_t offset = 0;
      const std::size_t pad = 4 - ts.size();
      for (std::size_t a = 0; a < ts.size(); ++a)
        offset = offset * ts[a] + (ts[a] == 1 ? 0 : full[a + pad]);
      return static_cast<std::size_t>(offset);
    };
    tensor o(dtype::float32, s);
    for (std::int64_t p = 0; p < bh; ++p) {
      for (std::int64_t i = 0; i < sq; ++i) {
        std::vector<float> w(static_cast<std::size_t>(sk));
        float peak = -INFINITY;
        for (std::int64_t j = 0; j < sk; ++j) {
          float dot = 0;
          for (std::int64_t c = 0; c < d; ++c)
            dot += q.data<float>()[static_cast<std::size_t>((p * sq + i) * d + c)] *
                   k.data<float>()[static_cast<std::size_t>((p * sk + j) * d + c)];
          float x = dot * scale;
          const std::int64_t b = p / s[1], h = p % s[1];
          if (bias != nullptr) x += bias->data<float>()[at(bias, b, h, i, j)];
          if (mask != nullptr && mask->data<bool>()[at(mask, b, h, i, j)] != keeps) x = fill;
          if (causal && j > i + sk - sq) x = -INFINITY;
          w[static_cast<std::size_t>(j)] = x;
          peak = std::max(peak, x);
        }
        float total = 0;
        for (float& x : w) total += x = peak == -INFINITY ? 0 : std::exp(x - peak);
        for (std::int64_t c = 0; c < d; ++c) {
          float acc = 0;
          for (std::int64_t j = 0; j < sk; ++j)
            acc += w[static_cast<std::size_t>(j)] *
                   v.data<float>()[static_cast<std::size_t>((p * sk + j) * d + c)];
          o.data<float>()[static_cast<std::size_t>((p * sq + i) * d + c)] =
              total > 0 ? acc / total : (zero_rows ? 0.0F : NAN);
        }
      }
    }
    out[0] = std::move(o);
  }

  std::unique_ptr<backend> m_cpu = make_backend("cpu");
};

using values = std::map<std::string, tensor>;

values evaluate(const graph& g, const values& inputs) {
  attention_target target;
  values all = g.initializers;
  all.insert(inputs.begin(), inputs.end());
  for (const node& n : g.nodes) {
    std::vector<const tensor*> in;
    for (const auto& name : n.inputs) in.push_back(name.empty() ? nullptr : &all.at(name));
    std::vector<tensor> out(n.outputs.size());
    target.run(n, in, out);
    for (std::size_t i = 0; i < out.size(); ++i) all[n.outputs[i]] = std::move(out[i]);
  }
  return all;
}

// Folds for `bound`, then fuses; returns the rewrite count.
std::size_t specialize_and_fuse(graph& g, const symbol_bindings& bound) {
  fold_constants(g, bound);
  remove_dead_nodes(g);
  const auto shapes = infer_shapes(g, bound);
  attention_target target;
  return fuse_attention(g, fusion_context{shapes, target});
}

std::size_t count(const graph& g, std::string_view op) {
  return static_cast<std::size_t>(std::count_if(g.nodes.begin(), g.nodes.end(),
                                                [&](const node& n) { return n.op_type == op; }));
}

tensor random_input(const value_info& v, const symbol_bindings& bound, std::mt19937& rng) {
  shape_t shape;
  for (const auto& d : v.shape) shape.push_back(d.value >= 0 ? d.value : bound.at(d.symbol));
  tensor t(v.type, shape);
  if (v.type == dtype::int64) {
    // Token ids (every vocabulary here has more than 90), token types, or a
    // padding mask hiding the last 5 positions of the second row.
    std::uniform_int_distribution<std::int64_t> token(0, 90);
    auto x = t.data<std::int64_t>();
    for (std::size_t i = 0; i < x.size(); ++i) {
      const auto column = static_cast<std::int64_t>(i) % shape.back();
      const bool padded = shape.size() == 2 && shape[0] > 1 &&
                          static_cast<std::int64_t>(i) / shape.back() == 1 &&
                          column >= shape.back() - 5;
      if (v.name.find("mask") != std::string::npos) {
        x[i] = padded ? 0 : 1;
      } else {
        x[i] = v.name.find("type") != std::string::npos ? token(rng) % 2 : token(rng);
      }
    }
  } else if (v.type == dtype::boolean) {
    for (auto& x : t.data<bool>()) x = (rng() % 4) != 0;
  } else {
    std::normal_distribution<float> normal(0, 1);
    for (auto& x : t.data<float>()) x = normal(rng);
  }
  return t;
}

void expect_close(const tensor& got, const tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  double worst = 0;
  for (std::size_t i = 0; i < static_cast<std::size_t>(got.size()); ++i) {
    const double a = got.data<float>()[i], b = want.data<float>()[i];
    if (std::isnan(a) != std::isnan(b)) FAIL() << what << ": NaN at " << i;
    if (!std::isnan(a)) worst = std::max(worst, std::abs(a - b) / (1e-3 + std::abs(b)));
  }
  EXPECT_LT(worst, 1e-3) << what;
}

// Fuses `g` for `bound` and checks every output against the unfused graph.
void expect_fused_equal(graph g, const symbol_bindings& bound, std::size_t expected,
                        const std::string& what) {
  graph unfused = g;
  fold_constants(unfused, bound);
  std::mt19937 rng(11);
  values inputs;
  for (const auto& v : g.inputs) inputs[v.name] = random_input(v, bound, rng);
  const std::size_t softmaxes = count(unfused, "Softmax");
  EXPECT_EQ(specialize_and_fuse(g, bound), expected) << what;
  EXPECT_EQ(count(g, "Softmax"), softmaxes - expected) << what;
  EXPECT_EQ(count(g, "Attention"), expected) << what;
  const values want = evaluate(unfused, inputs);
  const values got = evaluate(g, inputs);
  for (const auto& out : g.outputs)
    expect_close(got.at(out.name), want.at(out.name), what + " " + out.name);
}

const std::filesystem::path k_models = COOLBENCH_TEST_MODELS;

struct export_case {
  const char* folder;
  symbol_bindings bound;
};

TEST(attention_fusion, fuses_every_transformer_export) {
  const symbol_bindings text{{"batch", 2}, {"sequence", 16}};
  const symbol_bindings past{{"batch", 2}, {"sequence", 4}, {"past_sequence", 8}};
  const std::vector<export_case> cases = {
      {"test_gpt2_torchscript_op18_nopast", text},
      {"test_gpt2_dynamo_op18_nopast", text},
      {"test_gpt2_torchscript_op18_past", past},
      {"test_gpt2_dynamo_op18_past", past},
      {"test_bert_torchscript_op14", text},
      {"test_bert_torchscript_op18", text},
      {"test_bert_dynamo_op18", text},
      {"test_distilbert_torchscript_op14", text},
      {"test_distilbert_torchscript_op18", text},
      {"test_distilbert_dynamo_op18", text},
      {"test_vit_torchscript_op18", {{"batch", 2}}},
      {"test_vit_dynamo_op18", {{"batch", 2}}},
      // One new token on a past: the decode form.
      {"test_gpt2_torchscript_op18_past", {{"batch", 2}, {"sequence", 1}, {"past_sequence", 8}}},
      {"test_gpt2_dynamo_op18_past", {{"batch", 2}, {"sequence", 1}, {"past_sequence", 8}}}};
  std::size_t fused = 0;
  for (const auto& c : cases) {
    const graph g = load_onnx(k_models / c.folder / "model.onnx");
    ASSERT_EQ(count(g, "Softmax"), 2U) << c.folder << ": two layers, one attention each";
    expect_fused_equal(g, c.bound, 2, c.folder);
    ++fused;
  }
  EXPECT_EQ(fused, 14U) << "the 12 transformer exports (ResNet has no attention), 2 as decode";
}

TEST(attention_fusion, recognises_folded_causal_masks) {
  graph g = load_onnx(k_models / "test_gpt2_dynamo_op18_past" / "model.onnx");
  ASSERT_EQ(specialize_and_fuse(g, {{"batch", 1}, {"sequence", 4}, {"past_sequence", 8}}), 2U);
  for (const node& n : g.nodes) {
    if (n.op_type != "Attention") continue;
    EXPECT_EQ(n.get<std::int64_t>("causal"), 1) << "lower triangle with offset 8";
    EXPECT_EQ(n.inputs.size(), 3U) << "the mask dropped for the causal flag";
    EXPECT_EQ(n.get<std::int64_t>("zero_empty_rows"), 1) << "the IsNaN guard";
  }
}

// Every GPT-2 export, without a past too: the causal mask becomes the flag, so the kernel
// reads no mask tensor.
TEST(attention_fusion, every_gpt2_export_attends_causally_without_a_mask_tensor) {
  for (const char* folder : {"test_gpt2_dynamo_op18_nopast", "test_gpt2_torchscript_op18_nopast",
                             "test_gpt2_torchscript_op18_past"}) {
    SCOPED_TRACE(folder);
    graph g = load_onnx(k_models / folder / "model.onnx");
    const bool past = std::string(folder).ends_with("_past");
    const symbol_bindings bound =
        past ? symbol_bindings{{"batch", 1}, {"sequence", 4}, {"past_sequence", 8}}
             : symbol_bindings{{"batch", 1}, {"sequence", 16}};
    ASSERT_EQ(specialize_and_fuse(g, bound), 2U);
    for (const node& n : g.nodes) {
      if (n.op_type != "Attention") continue;
      EXPECT_EQ(n.get<std::int64_t>("causal"), 1);
      EXPECT_EQ(n.inputs.size(), 3U) << "a mask or bias input is left";
    }
  }
}

// A causal mask folded into an additive bias: float32 and bfloat16 fill with about -3.4e38,
// float16 with its lowest, -65504 (the dynamo export of GPT-2 in float16 once its shapes are
// bound). Each becomes the causal flag and no mask input; float32 is also checked for values.
TEST(attention_fusion, a_folded_causal_bias_becomes_the_flag_in_every_float_type) {
  for (const dtype type : {dtype::float32, dtype::float16, dtype::bfloat16}) {
    for (const std::int64_t past : {0, 3}) {
      attention_spec s;
      s.type = type, s.sq = 5, s.sk = 5 + past, s.mask = mask_kind::causal_folded_bias;
      const std::string what = std::string(to_string(type)) + " past " + std::to_string(past);
      graph g = attention_graph(s);
      if (type == dtype::float32) expect_fused_equal(g, {}, 1, what);
      ASSERT_EQ(specialize_and_fuse(g, {}), 1U) << what;
      for (const node& n : g.nodes) {
        if (n.op_type != "Attention") continue;
        EXPECT_EQ(n.get<std::int64_t>("causal"), 1) << what;
        EXPECT_EQ(n.inputs.size(), 3U) << what << ": the bias is dropped for the flag";
      }
    }
  }
}

// BERT's and ViT's three projections of one activation: merged into one FusedGemm by the three
// weights side by side, the attention's views moved into its output; the same values as the
// unfused graph, for a MatMul by [K, N] weights and for a Gemm reading [N, K] ones transposed.
TEST(qkv_merge, three_projections_become_one_product_read_in_place) {
  for (const bool trans_b : {false, true}) {
    attention_spec s;
    s.batch = 2, s.heads = 3, s.sq = s.sk = 5, s.head_dim = 4, s.mask = mask_kind::causal_where;
    const std::string what = trans_b ? "Gemm transB" : "MatMul";
    const graph unfused = three_projections_graph(s, trans_b);
    graph g = unfused;
    fold_constants(g);
    remove_dead_nodes(g);
    const auto shapes = infer_shapes(g);
    attention_target target;
    const auto counts = fuse_for_backend(g, fusion_context{shapes, target});
    EXPECT_EQ(counts.count("qkv_merge") != 0 ? counts.at("qkv_merge") : 0, 1U) << what;
    EXPECT_EQ(count(g, "FusedGemm"), 1U) << what;
    for (const node& n : g.nodes) {
      if (n.op_type != "Attention") continue;
      EXPECT_TRUE(n.has("views")) << what;
      EXPECT_EQ(n.inputs[0], n.inputs[1]) << what;
      EXPECT_EQ(n.inputs[1], n.inputs[2]) << what;
    }
    std::mt19937 rng(3);
    values inputs;
    for (const auto& v : unfused.inputs) inputs[v.name] = random_input(v, {}, rng);
    expect_close(evaluate(g, inputs).at("out"), evaluate(unfused, inputs).at("out"), what);
  }
}

// A projection something else reads too stays its own product: no merge.
TEST(qkv_merge, a_projection_read_elsewhere_is_left_alone) {
  attention_spec s;
  s.batch = 1, s.heads = 2, s.sq = s.sk = 4, s.head_dim = 4;
  graph g = three_projections_graph(s, false);
  g.outputs.push_back(input("pk", dtype::float32, {1, 4, 8}));
  fold_constants(g);
  remove_dead_nodes(g);
  const auto shapes = infer_shapes(g);
  attention_target target;
  const auto counts = fuse_for_backend(g, fusion_context{shapes, target});
  EXPECT_EQ(counts.count("qkv_merge"), 0U);
  EXPECT_EQ(count(g, "FusedGemm"), 3U);
}

// A causal mask the graph computes from constants but too large to fold (300 x 300 > 64 Ki
// elements; GPT-2's dynamo export at 1024 tokens): evaluated by the pass, it becomes the flag.
TEST(attention_fusion, a_computed_causal_mask_too_large_to_fold_becomes_the_flag) {
  attention_spec s;
  s.sq = s.sk = 300, s.head_dim = 4, s.mask = mask_kind::causal_add;
  graph g = attention_graph(s);
  // allowed = Not(future), so the mask is a node's output, not an initializer.
  g.initializers["future"] = future_mask(s.sq, s.sk, true);
  g.initializers.erase("allowed");
  g.nodes.insert(g.nodes.begin(), make("Not", {"future"}, {"allowed"}));
  expect_fused_equal(g, {}, 1, "computed mask");
  ASSERT_EQ(specialize_and_fuse(g, {}), 1U);
  EXPECT_EQ(count(g, "Not"), 0U) << "the mask's computation is dead once the flag replaces it";
  for (const node& n : g.nodes) {
    if (n.op_type != "Attention") continue;
    EXPECT_EQ(n.get<std::int64_t>("causal"), 1);
    EXPECT_EQ(n.inputs.size(), 3U);
  }
  // From a graph input it is no constant: the mask stays.
  graph input_mask = attention_graph(s);
  input_mask.initializers.erase("allowed");
  input_mask.inputs.push_back(input("future", dtype::boolean, {1, 1, s.sq, s.sk}));
  input_mask.nodes.insert(input_mask.nodes.begin(), make("Not", {"future"}, {"allowed"}));
  ASSERT_EQ(specialize_and_fuse(input_mask, {}), 1U);
  for (const node& n : input_mask.nodes) {
    if (n.op_type == "Attention") {
      EXPECT_EQ(n.get<std::int64_t>("causal", 0), 0);
    }
  }
}

// float16's lowest counts as hiding only in the causal pattern: elsewhere a row can be hidden
// throughout, where -65504 (a uniform row) and hiding (an empty row) differ. A bias that is
// not quite the lowest is a real bias.
TEST(attention_fusion, a_float16_bias_at_its_lowest_stays_a_bias_unless_causal) {
  const auto half_bias = [](const std::vector<float>& elements) {
    tensor t(dtype::float16, {1, 1, 2, 2});
    for (std::size_t i = 0; i < elements.size(); ++i) {
      const std::uint16_t bits = float_to_half(elements[i]);
      std::memcpy(t.raw().data() + i * 2, &bits, 2);
    }
    return t;
  };
  EXPECT_EQ(classify_bias(half_bias({0, -65504, 0, 0}), 2, 2), mask_shape::causal);
  EXPECT_EQ(classify_bias(half_bias({0, 0, 0, 0}), 2, 2), mask_shape::none);
  EXPECT_EQ(classify_bias(half_bias({-65504, 0, 0, 0}), 2, 2), mask_shape::other);
  EXPECT_EQ(classify_bias(half_bias({-65504, -65504, 0, 0}), 2, 2), mask_shape::other);
  EXPECT_EQ(classify_bias(half_bias({0, -60000, 0, 0}), 2, 2), mask_shape::other);
}

// coolbench's GPT-2: 2 layers of width 64, 4 heads.
graph small_gpt2() {
  gpt2_config config;
  config.layers = 2;
  config.hidden = 64;
  config.heads = 4;
  config.vocab = 91;
  config.positions = 64;
  config.sequence = 16;
  return parse_onnx(make_gpt2_model(config), ".", "gpt2.onnx");
}

TEST(attention_fusion, fuses_coolbenchs_gpt2) {
  const graph g = small_gpt2();
  expect_fused_equal(g, {{"batch", 2}, {"sequence", 16}}, 2, "coolbench gpt2");
  graph folded = g;
  specialize_and_fuse(folded, {{"batch", 1}, {"sequence", 7}});
  for (const node& n : folded.nodes) {
    if (n.op_type == "Attention") {
      EXPECT_EQ(n.get<std::int64_t>("causal"), 1);
    }
  }
}

TEST(attention_fusion, fuses_each_mask_form) {
  for (const mask_kind mask :
       {mask_kind::none, mask_kind::causal_where, mask_kind::causal_add, mask_kind::bias}) {
    for (const bool as_input : {false, true}) {
      for (const bool split : {false, true}) {
        attention_spec s;
        s.sq = 3, s.sk = 6, s.mask = mask, s.causal_as_input = as_input, s.split_scale = split;
        const std::string what = "mask " + std::to_string(static_cast<int>(mask)) +
                                 (as_input ? " input" : "") + (split ? " split" : "");
        expect_fused_equal(attention_graph(s), {}, 1, what);
      }
    }
  }
}

// One query row after pasts of 0, 1, 2 and 37 keys at batch 3 x 5 heads,
// every mask form: the decode cases the CUDA tests run
// (cuda_attention_test's decode_over_past_lengths_and_batches) fuse.
TEST(attention_fusion, fuses_decode_steps_at_any_past) {
  for (const std::int64_t past : {0, 1, 2, 37}) {
    for (const mask_kind mask :
         {mask_kind::none, mask_kind::causal_where, mask_kind::causal_add, mask_kind::bias}) {
      attention_spec s;
      s.batch = 3, s.heads = 5, s.sq = 1, s.sk = 1 + past, s.head_dim = 40, s.mask = mask;
      s.causal_as_input = mask == mask_kind::causal_add;
      s.split_scale = mask == mask_kind::causal_add;
      expect_fused_equal(
          attention_graph(s), {}, 1,
          "past " + std::to_string(past) + " mask " + std::to_string(static_cast<int>(mask)));
    }
  }
}

TEST(attention_fusion, leaves_scores_used_twice) {
  graph g = attention_graph({});
  g.outputs.push_back(input("scores", dtype::float32, {1, 2, 5, 5}));
  EXPECT_EQ(specialize_and_fuse(g, {}), 0U);
  EXPECT_EQ(count(g, "Softmax"), 1U);
}

TEST(attention_fusion, leaves_softmax_on_another_axis) {
  graph g = attention_graph({});
  for (node& n : g.nodes) {
    if (n.op_type == "Softmax") n.attributes["axis"] = std::int64_t{2};
  }
  EXPECT_EQ(specialize_and_fuse(g, {}), 0U);
}

TEST(attention_fusion, leaves_a_scale_that_is_not_constant) {
  graph g = attention_graph({});
  g.initializers.erase("root");
  g.inputs.push_back(input("root", dtype::float32, {}));
  EXPECT_EQ(specialize_and_fuse(g, {}), 0U);
  EXPECT_EQ(count(g, "Softmax"), 1U);
}

TEST(attention_fusion, leaves_a_target_without_attention) {
  graph g = attention_graph({});
  const auto shapes = infer_shapes(g);
  const auto cpu = make_backend("cpu");
  EXPECT_EQ(fuse_attention(g, fusion_context{shapes, *cpu}), 0U);
  EXPECT_EQ(count(g, "Softmax"), 1U);
}

}  // namespace
}  // namespace coolbench::engine

namespace coolbench::engine {
namespace {

// The attention pass and the layout pass after it; returns the layout
// pass's rewrites. `g` is compared with its unfused self on random inputs.
std::size_t fuse_with_layout(graph& g, const symbol_bindings& bound, const std::string& what) {
  graph unfused = g;
  fold_constants(unfused, bound);
  fold_constants(g, bound);
  remove_dead_nodes(g);
  const auto shapes = infer_shapes(g, bound);
  attention_target target;
  const fusion_context context{shapes, target};
  static_cast<void>(fuse_attention(g, context));
  const std::size_t made = fusion_detail::fuse_attention_layout(g, context);
  std::mt19937 rng(23);
  values inputs;
  for (const auto& v : g.inputs) inputs[v.name] = random_input(v, bound, rng);
  const values want = evaluate(unfused, inputs);
  const values got = evaluate(g, inputs);
  for (const auto& out : g.outputs)
    expect_close(got.at(out.name), want.at(out.name), what + " " + out.name);
  return made;
}

TEST(attention_layout, reads_a_qkv_projection_in_place) {
  for (const mask_kind mask : {mask_kind::none, mask_kind::causal_where, mask_kind::causal_add}) {
    attention_spec s;
    s.batch = 2, s.heads = 3, s.sq = 5, s.sk = 5, s.head_dim = 4, s.mask = mask;
    s.split_scale = mask == mask_kind::causal_add;
    const std::string what = "mask " + std::to_string(static_cast<int>(mask));
    graph g = qkv_projection_graph(s);
    ASSERT_EQ(fuse_with_layout(g, {}, what), 1U) << what;
    EXPECT_EQ(count(g, "Transpose"), 0U) << what;
    EXPECT_EQ(count(g, "Split"), 0U) << what;
    EXPECT_EQ(count(g, "Reshape"), 0U) << what;
    ASSERT_EQ(count(g, "Attention"), 1U) << what;
    for (const node& n : g.nodes) {
      if (n.op_type != "Attention") continue;
      EXPECT_EQ(n.inputs, (std::vector<std::string>{"x", "x", "x"}));
      // x is [2, 5, 36]: batch stride 180, head stride 4, row stride 36;
      // out is [2, 5, 12]: 60, 4, 12.
      EXPECT_EQ(
          n.get<std::vector<std::int64_t>>("views"),
          (std::vector<std::int64_t>{0, 180, 4, 36, 12, 180, 4, 36, 24, 180, 4, 36, 0, 60, 4, 12}));
      EXPECT_EQ(n.outputs[0], "out");
    }
  }
}

// The shapes cuda_attention_test's views test adds: one query row, and a
// head dim of 96 over an odd head count, read and written in place.
TEST(attention_layout, reads_a_decode_step_and_head_dim_96_in_place) {
  for (const auto& [sq, heads, head_dim] :
       {std::array<std::int64_t, 3>{1, 5, 80}, std::array<std::int64_t, 3>{65, 5, 96}}) {
    attention_spec s;
    s.batch = 2, s.heads = heads, s.sq = sq, s.sk = sq, s.head_dim = head_dim;
    s.mask = mask_kind::causal_where;
    const std::string what = "sq " + std::to_string(sq) + " d " + std::to_string(head_dim);
    graph g = qkv_projection_graph(s);
    ASSERT_EQ(fuse_with_layout(g, {}, what), 1U) << what;
    EXPECT_EQ(count(g, "Transpose"), 0U) << what;
    EXPECT_EQ(count(g, "Split"), 0U) << what;
  }
}

std::string attention_output(const graph& g) {
  for (const node& n : g.nodes) {
    if (n.op_type == "Attention") return n.outputs[0];
  }
  return {};
}

TEST(attention_layout, keeps_what_something_else_reads) {
  attention_spec s;
  s.heads = 2, s.head_dim = 4;
  {  // the context in [B, H, S, D] is a graph output: read in place, written as it was
    graph g = qkv_projection_graph(s);
    g.outputs.push_back(input("context", dtype::float32, {1, 2, 5, 4}));
    EXPECT_EQ(fuse_with_layout(g, {}, "context read"), 1U);
    EXPECT_EQ(attention_output(g), "context");
    EXPECT_EQ(count(g, "Split"), 0U);
    EXPECT_EQ(count(g, "Transpose"), 1U);  // the output's
  }
  {  // the transposed context is read too: written there, its Reshape stays
    graph g = qkv_projection_graph(s);
    g.outputs.push_back(input("context_t", dtype::float32, {1, 5, 2, 4}));
    EXPECT_EQ(fuse_with_layout(g, {}, "context_t read"), 1U);
    EXPECT_EQ(attention_output(g), "context_t");
    EXPECT_EQ(count(g, "Transpose"), 0U);
    EXPECT_EQ(count(g, "Reshape"), 1U);
  }
  {  // q, k and v are graph inputs the attention reads as they are: nothing to do
    graph g = attention_graph(s);
    EXPECT_EQ(fuse_with_layout(g, {}, "plain"), 0U);
  }
  {  // v's rows are not contiguous in x (its last two axes swapped, H == D):
     // v is read as the attention's input is, q and k in place
    attention_spec square;
    square.heads = 4, square.head_dim = 4;
    graph g = qkv_projection_graph(square);
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
      if (g.nodes[i].outputs[0] != "v_heads") continue;
      g.nodes[i].outputs[0] = "v_unswapped";
      g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                     make("Transpose", {"v_unswapped"}, {"v_heads"},
                          {{"perm", std::vector<std::int64_t>{0, 1, 3, 2}}}));
      break;
    }
    EXPECT_EQ(fuse_with_layout(g, {}, "v swapped"), 1U);
    for (const node& n : g.nodes) {
      if (n.op_type == "Attention") {
        EXPECT_EQ(n.inputs[0], "x");
        EXPECT_EQ(n.inputs[1], "x");
        EXPECT_EQ(n.inputs[2], "v");
      }
    }
  }
}

TEST(attention_layout, reads_through_every_prefill_export) {
  const symbol_bindings text{{"batch", 2}, {"sequence", 16}};
  const std::vector<std::pair<const char*, symbol_bindings>> cases = {
      {"test_gpt2_torchscript_op18_nopast", text},
      {"test_gpt2_dynamo_op18_nopast", text},
      {"test_gpt2_torchscript_op18_past", {{"batch", 2}, {"sequence", 4}, {"past_sequence", 8}}},
      {"test_bert_torchscript_op14", text},
      {"test_bert_dynamo_op18", text},
      {"test_distilbert_torchscript_op18", text},
      {"test_vit_torchscript_op18", {{"batch", 2}}},
      {"test_vit_dynamo_op18", {{"batch", 2}}}};
  for (const auto& [folder, bound] : cases) {
    graph g = load_onnx(k_models / folder / "model.onnx");
    EXPECT_EQ(fuse_with_layout(g, bound, folder), 2U) << folder << ": both layers in place";
    // With a past, the split's k and v are also the presents: it stays.
    if (!std::string_view(folder).ends_with("_past")) {
      EXPECT_EQ(count(g, "Split"), 0U) << folder;
    }
  }
  // Decode: k and v are concatenated with the past, q is read in place.
  for (const char* folder : {"test_gpt2_torchscript_op18_past", "test_gpt2_dynamo_op18_past"}) {
    graph g = load_onnx(k_models / folder / "model.onnx");
    EXPECT_EQ(fuse_with_layout(g, {{"batch", 2}, {"sequence", 1}, {"past_sequence", 8}}, folder),
              2U)
        << folder << " decode";
  }
  graph g = small_gpt2();
  EXPECT_EQ(fuse_with_layout(g, {{"batch", 2}, {"sequence", 16}}, "coolbench gpt2"), 2U);
  EXPECT_EQ(count(g, "Split"), 0U);
  EXPECT_EQ(count(g, "Transpose"), 0U);
}

}  // namespace
}  // namespace coolbench::engine
