// The fusion passes on the CPU: each pass rewrites the patterns it should and
// leaves the others alone, on small graphs and on the exported models of
// tests/data/models. The target is a test backend that runs the fused ops on
// the host (plain loops, independent of the CUDA kernels) and everything
// else on the CPU backend, so each fused graph's outputs are also compared
// with the unfused graph's: a pass that wires a pattern wrongly fails here.
#include <gtest/gtest.h>

#include <cmath>

#include "coolbench/engine/session.hpp"
#include "engine/fusion/elementwise_program.hpp"
#include "engine/fusion_cases.hpp"

namespace coolbench::engine {
namespace {

using namespace fusion_cases;  // NOLINT(google-build-using-namespace): the cases' vocabulary

// Strides of `shape` broadcast to `out` (numpy rules), 0 where broadcast.
std::vector<std::int64_t> broadcast_strides(const shape_t& shape, const shape_t& out) {
  std::vector<std::int64_t> strides(out.size(), 0);
  std::int64_t step = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    strides[out.size() - shape.size() + d] = shape[d] == 1 ? 0 : step;
    step *= shape[d];
  }
  return strides;
}

void host_elementwise(const node& n, std::span<const tensor* const> in, std::span<tensor> out,
                      const shape_t& shape) {
  const ew_program program = ew_from_attributes(n);
  tensor y(static_cast<dtype>(n.get<std::int64_t>("output_type")), shape);
  std::vector<std::vector<std::int64_t>> strides;
  for (const tensor* t : in) strides.push_back(broadcast_strides(t->shape(), shape));
  std::vector<float> values(in.size());
  for (std::int64_t i = 0; i < y.size(); ++i) {
    for (std::size_t k = 0; k < in.size(); ++k) {
      std::int64_t rest = i, offset = 0;
      for (std::size_t d = shape.size(); d-- > 0;) {
        offset += (rest % shape[d]) * strides[k][d];
        rest /= shape[d];
      }
      values[k] = get(*in[k], static_cast<std::size_t>(offset));
    }
    set(y, static_cast<std::size_t>(i), ew_evaluate(program, values));
  }
  out[0] = std::move(y);
}

void host_gemm(const node& n, std::span<const tensor* const> in, std::span<tensor> out) {
  const tensor& a = *in[0];
  const tensor& b = *in[1];
  const bool ta = n.get<std::int64_t>("transA", 0) != 0;
  const bool tb = n.get<std::int64_t>("transB", 0) != 0;
  const std::int64_t k = ta ? a.shape()[0] : a.shape().back();
  // b_columns: B is padded to rows of b.shape()[1]; its first columns are read.
  const std::int64_t b_columns = n.get<std::int64_t>("b_columns", 0);
  const std::int64_t m = a.size() / k;
  const std::int64_t cols = b_columns != 0 ? b_columns : tb ? b.shape()[0] : b.shape()[1];
  const std::int64_t ldb = tb ? k : b.shape()[1];
  shape_t shape(a.shape().begin(), a.shape().end() - 1);
  if (ta) shape = {m};
  shape.push_back(cols);
  tensor y(a.type(), n.get<std::vector<std::int64_t>>("shape", shape));
  const std::string activation = n.get<std::string>("activation");
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      double acc = 0;
      for (std::int64_t l = 0; l < k; ++l) {
        acc += static_cast<double>(get(a, static_cast<std::size_t>(ta ? l * m + i : i * k + l))) *
               get(b, static_cast<std::size_t>(tb ? j * ldb + l : l * ldb + j));
      }
      const auto at = static_cast<std::size_t>(i * cols + j);
      auto v = static_cast<float>(acc * n.get<float>("alpha", 1.0F)) +
               (in[2] != nullptr ? get(*in[2], static_cast<std::size_t>(j)) : 0.0F);
      if (in.size() > 3 && in[3] != nullptr) v += get(*in[3], at);
      if (activation == "relu") v = std::max(v, 0.0F);
      if (activation == "gelu_erf") v = ew_apply(ew_op::gelu_erf, v, 0, 0);
      if (activation == "gelu_tanh") v = ew_apply(ew_op::gelu_tanh, v, 0, 0);
      set(y, at, v);
    }
  }
  out[0] = std::move(y);
}

void host_layer_norm(const node& n, std::span<const tensor* const> in, std::span<tensor> out) {
  const tensor& a = *in[0];
  const std::int64_t cols = a.shape().back();
  tensor y(a.type(), a.shape());
  tensor sum(a.type(), a.shape());
  for (std::int64_t i = 0; i < a.size(); ++i) {
    const auto at = static_cast<std::size_t>(i);
    set(sum, at, get(a, at) + (in[1] != nullptr ? get(*in[1], at) : 0.0F));
  }
  for (std::int64_t r = 0; r < a.size() / cols; ++r) {
    double mean = 0, var = 0;
    for (std::int64_t j = 0; j < cols; ++j)
      mean += get(sum, static_cast<std::size_t>(r * cols + j));
    mean /= static_cast<double>(cols);
    for (std::int64_t j = 0; j < cols; ++j) {
      const double d = get(sum, static_cast<std::size_t>(r * cols + j)) - mean;
      var += d * d;
    }
    const double inv = 1 / std::sqrt(var / static_cast<double>(cols) + n.get<float>("epsilon"));
    for (std::int64_t j = 0; j < cols; ++j) {
      const auto at = static_cast<std::size_t>(r * cols + j);
      const double v = (get(sum, at) - mean) * inv * get(*in[2], static_cast<std::size_t>(j)) +
                       (in[3] != nullptr ? get(*in[3], static_cast<std::size_t>(j)) : 0.0F);
      set(y, at, static_cast<float>(v));
    }
  }
  out[0] = std::move(y);
  if (out.size() > 1) out[1] = std::move(sum);
}

// The CPU backend plus the fused ops on the host; `refuse_fused` makes it a
// target that runs none of them.
class host_fused_backend final : public backend {
 public:
  explicit host_fused_backend(bool refuse_fused = false)
      : m_cpu(make_backend("cpu")), m_refuse(refuse_fused) {}
  std::string_view name() const noexcept override { return "host-fused"; }
  std::string describe() const override { return "host-fused"; }
  bool supports(const node& n) const override {
    if (n.domain != k_fused_domain) return m_cpu->supports(n);
    return !m_refuse && (n.op_type == "FusedGemm" || n.op_type == "FusedLayerNorm" ||
                         n.op_type == "FusedElementwise");
  }
  void run(const node& n, std::span<const tensor* const> in, std::span<tensor> out) override {
    if (n.domain != k_fused_domain) return m_cpu->run(n, in, out);
    ++m_fused_runs;
    if (n.op_type == "FusedGemm") return host_gemm(n, in, out);
    if (n.op_type == "FusedLayerNorm") return host_layer_norm(n, in, out);
    host_elementwise(n, in, out, n.get<std::vector<std::int64_t>>("shape"));
  }
  std::size_t fused_runs() const { return m_fused_runs; }

 private:
  std::unique_ptr<backend> m_cpu;
  bool m_refuse;
  std::size_t m_fused_runs = 0;
};

void expect_close(const std::map<std::string, tensor>& got,
                  const std::map<std::string, tensor>& want, double rtol, double atol) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, w] : want) {
    const tensor& g = got.at(name);
    ASSERT_EQ(g.shape(), w.shape()) << name;
    ASSERT_EQ(g.type(), w.type()) << name;
    for (std::size_t i = 0; i < static_cast<std::size_t>(w.size()); ++i) {
      const double a = get(g, i), b = get(w, i);
      ASSERT_TRUE(std::abs(a - b) <= atol + rtol * std::abs(b))
          << name << "[" << i << "]: fused " << a << ", unfused " << b;
    }
  }
}

// Fuses a copy of `g` for the host target, checks the counts, and compares
// the fused graph's outputs with the unfused graph's on the CPU.
graph fuse_and_compare(const graph& g, const std::map<std::string, tensor>& inputs,
                       const std::map<std::string, std::size_t>& expected_counts,
                       double rtol = 1e-5, double atol = 1e-5) {
  graph fused = g;
  host_fused_backend target;
  EXPECT_EQ(specialize_and_fuse(fused, target), expected_counts);
  const auto cpu = make_backend("cpu");
  const auto want = run_graph(g, *cpu, inputs);
  const auto got = run_graph(fused, target, inputs);
  expect_close(got, want, rtol, atol);
  return fused;
}

TEST(FusionGemm, BiasAndEachActivationBecomeOneNode) {
  for (const std::string tail :
       {"none", "relu", "gelu", "gelu_tanh_op", "gelu_new", "gelu_erf_parts", "residual"}) {
    SCOPED_TRACE(tail);
    const graph g = gemm_graph(dtype::float32, {2, 3, 8}, 12, tail);
    std::map<std::string, tensor> inputs{{"x", random_tensor(dtype::float32, {2, 3, 8}, 1)}};
    if (tail == "residual") inputs["r"] = random_tensor(dtype::float32, {2, 3, 12}, 2);
    const graph fused = fuse_and_compare(g, inputs, {{"gemm_epilogue", 1}}, 1e-4, 1e-5);
    ASSERT_EQ(fused.nodes.size(), 1U);
    const node& n = fused.nodes[0];
    EXPECT_EQ(n.op_type, "FusedGemm");
    EXPECT_EQ(n.domain, k_fused_domain);
    EXPECT_EQ(n.outputs, std::vector<std::string>{g.outputs[0].name});
    const std::map<std::string, std::string> activation = {
        {"none", "none"},          {"relu", "relu"},
        {"gelu", "gelu_erf"},      {"gelu_tanh_op", "gelu_tanh"},
        {"gelu_new", "gelu_tanh"}, {"gelu_erf_parts", "gelu_erf"},
        {"residual", "none"}};
    EXPECT_EQ(n.get<std::string>("activation"), activation.at(tail));
    EXPECT_EQ(n.inputs.size(), tail == "residual" ? 4U : 3U);
  }
}

TEST(FusionPatterns, SixteenBitGraphsFuseAndComputeTheSame) {
  // The host target computes each fused op in float32 and rounds once; the
  // unfused graph rounds at every node: a few 16-bit steps apart.
  for (const dtype type : {dtype::float16, dtype::bfloat16}) {
    SCOPED_TRACE(std::string(to_string(type)));
    const double tol = type == dtype::float16 ? 1e-2 : 3e-2;
    const std::map<std::string, std::string> activation = {
        {"relu", "relu"},          {"gelu", "gelu_erf"},           {"gelu_tanh_op", "gelu_tanh"},
        {"gelu_new", "gelu_tanh"}, {"gelu_erf_parts", "gelu_erf"}, {"residual", "none"}};
    for (const auto& [tail, kind] : activation) {
      SCOPED_TRACE(tail);
      std::map<std::string, tensor> inputs{{"x", random_tensor(type, {3, 16}, 1)}};
      if (tail == "residual") inputs["r"] = random_tensor(type, {3, 8}, 2);
      const graph fused = fuse_and_compare(gemm_graph(type, {3, 16}, 8, tail), inputs,
                                           {{"gemm_epilogue", 1}}, tol, tol);
      EXPECT_EQ(fused.nodes.at(0).get<std::string>("activation"), kind);
    }
    for (const bool decomposed : {false, true}) {
      const graph g = layer_norm_graph(type, {4, 40}, decomposed, true, true);
      fuse_and_compare(
          g, {{"a", random_tensor(type, {4, 40}, 3)}, {"b", random_tensor(type, {4, 40}, 4)}},
          {{"layer_norm", 1}}, tol, tol);
    }
  }
}

TEST(FusionGemm, GemmWithBiasInput) {
  // N = 6 float32 columns are 24 bytes a row: the weight is padded as well.
  const graph g = gemm_graph(dtype::float32, {5, 8}, 6, "relu", /*gemm_op=*/true);
  const graph fused = fuse_and_compare(g, {{"x", random_tensor(dtype::float32, {5, 8}, 3)}},
                                       {{"aligned_weights", 1}, {"gemm_epilogue", 1}}, 1e-4, 1e-5);
  ASSERT_EQ(fused.nodes.size(), 1U);
  EXPECT_EQ(fused.nodes[0].get<std::string>("activation"), "relu");
  EXPECT_EQ(fused.nodes[0].get<std::int64_t>("b_columns", 0), 6);
}

TEST(FusionGemm, NearGeluStaysElementwise) {
  // 0.05 for 0.044715 is no GELU, in any dtype (in bfloat16 0.05 is some
  // twenty steps from 0.044715): the GEMM takes the bias only, and the
  // elementwise pass the eight nodes after it.
  for (const dtype type : {dtype::float32, dtype::float16, dtype::bfloat16}) {
    SCOPED_TRACE(std::string(to_string(type)));
    const double tol = type == dtype::float32 ? 1e-4 : type == dtype::float16 ? 1e-2 : 3e-2;
    const graph g = gemm_graph(type, {4, 8}, 8, "almost_gelu");
    const graph fused = fuse_and_compare(g, {{"x", random_tensor(type, {4, 8}, 4)}},
                                         {{"gemm_epilogue", 1}, {"elementwise", 1}}, tol,
                                         type == dtype::float32 ? 1e-5 : tol);
    ASSERT_EQ(fused.nodes.size(), 2U);
    EXPECT_EQ(fused.nodes[0].get<std::string>("activation"), "none");
  }
}

// x[2, 3, k] times a [k, n] weight w (transposed: [n, k] with Gemm transB),
// nothing after.
graph bare_product(dtype type, std::int64_t k, std::int64_t n, bool gemm_trans_b = false) {
  graph g;
  g.name = "bare_product";
  g.opset = 20;
  g.inputs = {declared("x", type, gemm_trans_b ? shape_t{6, k} : shape_t{2, 3, k})};
  g.initializers["w"] = random_tensor(type, gemm_trans_b ? shape_t{n, k} : shape_t{k, n}, 5, 0.3F);
  if (gemm_trans_b) {
    g.nodes.push_back(make_node("Gemm", {"x", "w"}, {"y"}, {{"transB", std::int64_t{1}}}));
  } else {
    g.nodes.push_back(make_node("MatMul", {"x", "w"}, {"y"}));
  }
  g.outputs = {declared("y", type, gemm_trans_b ? shape_t{6, n} : shape_t{2, 3, n})};
  return g;
}

TEST(FusionAlignedWeights, AWeightReadWithoutABiasIsPaddedTransposed) {
  // MatMul(x, w), w [8, 13]: copied as [16, 8], w's columns as rows, zero rows after 13, and
  // read with transB (so that the backend may write Y's unaligned rows in row phases).
  for (const dtype type : {dtype::float32, dtype::float16, dtype::bfloat16}) {
    SCOPED_TRACE(std::string(to_string(type)));
    const double tol = type == dtype::float32 ? 1e-5 : type == dtype::float16 ? 1e-2 : 3e-2;
    const graph g = bare_product(type, 8, 13);
    const graph fused = fuse_and_compare(g, {{"x", random_tensor(type, {2, 3, 8}, 1)}},
                                         {{"aligned_weights", 1}}, tol, tol);
    ASSERT_EQ(fused.nodes.size(), 1U);
    const node& n = fused.nodes[0];
    EXPECT_EQ(n.op_type, "FusedGemm");
    EXPECT_EQ(n.get<std::int64_t>("b_columns", 0), 13);
    EXPECT_EQ(n.get<std::int64_t>("transB", 0), 1);
    EXPECT_EQ(n.outputs, std::vector<std::string>{"y"});
    ASSERT_EQ(n.inputs.at(1), "w/aligned_t");
    EXPECT_FALSE(fused.initializers.contains("w/aligned"));
    // 16 rows (a multiple of 16 bytes in every dtype) of K = 8, zeros after row 13.
    const tensor& padded = fused.initializers.at("w/aligned_t");
    ASSERT_EQ(padded.shape(), (shape_t{16, 8}));
    const tensor& w = g.initializers.at("w");
    for (std::size_t c = 0; c < 16; ++c) {
      for (std::size_t r = 0; r < 8; ++r) {
        const float want = c < 13 ? get(w, r * 13 + c) : 0.0F;
        ASSERT_EQ(get(padded, c * 8 + r), want) << c << ", " << r;
      }
    }
    // The original is read by nothing: the session's plan drops it.
    for (const node& x : fused.nodes)
      EXPECT_EQ(std::count(x.inputs.begin(), x.inputs.end(), "w"), 0);
  }
}

TEST(FusionAlignedWeights, AWeightReadWithABiasKeepsItsRowsPaddedWithZeros) {
  // MatMul + bias as one FusedGemm: the bias of N values is read per column, so the product
  // computes N columns either way and B stays [K, N], its rows padded to 16 columns.
  for (const dtype type : {dtype::float32, dtype::float16, dtype::bfloat16}) {
    SCOPED_TRACE(std::string(to_string(type)));
    const double tol = type == dtype::float32 ? 1e-4 : type == dtype::float16 ? 1e-2 : 3e-2;
    const graph g = gemm_graph(type, {2, 3, 8}, 13, "none");
    const graph fused = fuse_and_compare(g, {{"x", random_tensor(type, {2, 3, 8}, 1)}},
                                         {{"gemm_epilogue", 1}, {"aligned_weights", 1}}, tol, tol);
    ASSERT_EQ(fused.nodes.size(), 1U);
    const node& n = fused.nodes[0];
    EXPECT_EQ(n.get<std::int64_t>("b_columns", 0), 13);
    EXPECT_EQ(n.get<std::int64_t>("transB", 0), 0);
    ASSERT_EQ(n.inputs.at(1), "w/aligned");
    EXPECT_FALSE(fused.initializers.contains("w/aligned_t"));
    const tensor& padded = fused.initializers.at("w/aligned");
    ASSERT_EQ(padded.shape(), (shape_t{8, 16}));
    const tensor& w = g.initializers.at("w");
    for (std::size_t r = 0; r < 8; ++r) {
      for (std::size_t c = 0; c < 16; ++c) {
        const float want = c < 13 ? get(w, r * 13 + c) : 0.0F;
        ASSERT_EQ(get(padded, r * 16 + c), want) << r << ", " << c;
      }
    }
  }
}

TEST(FusionAlignedWeights, EveryReaderOfTheWeightTakesThePaddedCopy) {
  graph g = bare_product(dtype::float16, 8, 13);
  g.inputs.push_back(declared("x2", dtype::float16, {4, 8}));
  g.nodes.push_back(make_node("MatMul", {"x2", "w"}, {"y2"}));
  g.outputs.push_back(declared("y2", dtype::float16, {4, 13}));
  const graph fused = fuse_and_compare(g,
                                       {{"x", random_tensor(dtype::float16, {2, 3, 8}, 1)},
                                        {"x2", random_tensor(dtype::float16, {4, 8}, 2)}},
                                       {{"aligned_weights", 2}}, 1e-2, 1e-2);
  ASSERT_EQ(count_ops(fused, "FusedGemm"), 2U);
  for (const node& n : fused.nodes) EXPECT_EQ(n.inputs.at(1), "w/aligned_t");
}

TEST(FusionAlignedWeights, ATransposedWeightGetsZeroRowsUpToAnAlignedN) {
  // The built-in GPT-2's lm_head: Gemm(x, wte, transB), wte [50257, 768].
  for (const dtype type : {dtype::float32, dtype::float16, dtype::bfloat16}) {
    SCOPED_TRACE(std::string(to_string(type)));
    const double tol = type == dtype::float32 ? 1e-5 : type == dtype::float16 ? 1e-2 : 3e-2;
    const graph g = bare_product(type, 8, 13, true);
    const graph fused = fuse_and_compare(g, {{"x", random_tensor(type, {6, 8}, 1)}},
                                         {{"aligned_weights", 1}}, tol, tol);
    ASSERT_EQ(fused.nodes.size(), 1U);
    const node& n = fused.nodes[0];
    EXPECT_EQ(n.op_type, "FusedGemm");
    EXPECT_EQ(n.get<std::int64_t>("b_columns", 0), 13);
    EXPECT_EQ(n.get<std::int64_t>("transB", 0), 1);
    ASSERT_EQ(n.inputs.at(1), "w/aligned");
    // float32 steps of 4, 16-bit steps of 8: 16 rows either way, zeros after row 13.
    const tensor& padded = fused.initializers.at("w/aligned");
    ASSERT_EQ(padded.shape(), (shape_t{16, 8}));
    const tensor& w = g.initializers.at("w");
    for (std::size_t r = 0; r < 16; ++r) {
      for (std::size_t c = 0; c < 8; ++c) {
        ASSERT_EQ(get(padded, r * 8 + c), r < 13 ? get(w, r * 8 + c) : 0.0F) << r << ", " << c;
      }
    }
  }
}

TEST(FusionAlignedWeights, AWeightAnotherOpReadsIsPaddedForTheProductsAndKept) {
  // A tied embedding: the Gather reads wte's rows, the lm_head its transpose.
  graph g = bare_product(dtype::float16, 8, 13, true);
  g.inputs.push_back(declared("ids", dtype::int64, {3}));
  g.nodes.push_back(make_node("Gather", {"w", "ids"}, {"e"}));
  g.outputs.push_back(declared("e", dtype::float16, {3, 8}));
  tensor ids(dtype::int64, {3});
  for (std::int64_t i = 0; i < 3; ++i) ids.data<std::int64_t>()[i] = (i * 5 + 2) % 13;
  const graph fused =
      fuse_and_compare(g, {{"x", random_tensor(dtype::float16, {6, 8}, 1)}, {"ids", ids}},
                       {{"aligned_weights", 1}}, 1e-2, 1e-2);
  EXPECT_EQ(count_ops(fused, "FusedGemm"), 1U);
  ASSERT_EQ(count_ops(fused, "Gather"), 1U);
  for (const node& n : fused.nodes) {
    EXPECT_EQ(n.inputs.at(0) == "w" || n.inputs.at(1) == "w/aligned", true) << n.op_type;
  }
  EXPECT_TRUE(fused.initializers.contains("w"));
  EXPECT_TRUE(fused.initializers.contains("w/aligned"));
}

// x[2, 3, k] times Transpose(w), w [n, k]: the dynamo export's tied LM head.
// An initializer w of up to k_fold_max_elements is transposed at plan time
// (folded); a larger one, or w as an input, is transposed on every run.
graph product_of_transpose(dtype type, std::int64_t k, std::int64_t n, bool w_input) {
  graph g;
  g.name = "product_of_transpose";
  g.opset = 20;
  g.inputs = {declared("x", type, {2, 3, k})};
  if (w_input) {
    g.inputs.push_back(declared("w", type, {n, k}));
  } else {
    g.initializers["w"] = random_tensor(type, {n, k}, 5, 0.1F);
  }
  g.nodes.push_back(
      make_node("Transpose", {"w"}, {"wt"}, {{"perm", std::vector<std::int64_t>{1, 0}}}));
  g.nodes.push_back(make_node("MatMul", {"x", "wt"}, {"y"}));
  g.outputs = {declared("y", type, {2, 3, n})};
  return g;
}

TEST(FusionProductTranspose, AProductReadsATransposedWeightInPlace) {
  for (const dtype type : {dtype::float32, dtype::float16, dtype::bfloat16}) {
    SCOPED_TRACE(std::string(to_string(type)));
    const double tol = type == dtype::float32 ? 1e-5 : type == dtype::float16 ? 1e-2 : 3e-2;
    // B an input of 16 rows (aligned): the product reads it transposed.
    const graph fused = fuse_and_compare(
        product_of_transpose(type, 8, 16, true),
        {{"x", random_tensor(type, {2, 3, 8}, 1)}, {"w", random_tensor(type, {16, 8}, 2)}},
        {{"product_transpose", 1}}, tol, tol);
    ASSERT_EQ(fused.nodes.size(), 1U);  // the Transpose is gone
    EXPECT_EQ(fused.nodes[0].op_type, "FusedGemm");
    EXPECT_EQ(fused.nodes[0].get<std::int64_t>("transB", 0), 1);
    EXPECT_EQ(fused.nodes[0].inputs.at(1), "w");
    // A weight too large to fold, N = 1001: then padded with zero rows, as GPT-2's 50257.
    const graph padded = fuse_and_compare(
        product_of_transpose(type, 128, 1001, false), {{"x", random_tensor(type, {2, 3, 128}, 1)}},
        {{"aligned_weights", 1}, {"product_transpose", 1}}, tol, tol);
    ASSERT_EQ(padded.nodes.size(), 1U);
    EXPECT_EQ(padded.nodes[0].inputs.at(1), "w/aligned");
    EXPECT_EQ(padded.nodes[0].get<std::int64_t>("b_columns", 0), 1001);
  }
}

TEST(FusionProductTranspose, KeepsATransposeOthersReadAndLeavesOtherPermutations) {
  host_fused_backend target;
  // The transpose is an output too: the product reads w, the Transpose stays.
  graph shared = product_of_transpose(dtype::float16, 8, 16, true);
  shared.outputs.push_back(declared("wt", dtype::float16, {8, 16}));
  EXPECT_EQ(specialize_and_fuse(shared, target).count("product_transpose"), 1U);
  EXPECT_EQ(count_ops(shared, "Transpose"), 1U);
  // A batched B transposed on its last two axes is no 2-D weight: left as it is.
  graph batched;
  batched.name = "batched";
  batched.opset = 20;
  batched.inputs = {declared("x", dtype::float16, {2, 3, 8})};
  batched.initializers["w"] = random_tensor(dtype::float16, {2, 16, 8}, 5, 0.3F);
  batched.nodes.push_back(
      make_node("Transpose", {"w"}, {"wt"}, {{"perm", std::vector<std::int64_t>{0, 2, 1}}}));
  batched.nodes.push_back(make_node("MatMul", {"x", "wt"}, {"y"}));
  batched.outputs = {declared("y", dtype::float16, {2, 3, 16})};
  EXPECT_EQ(specialize_and_fuse(batched, target).count("product_transpose"), 0U);
}

TEST(FusionAlignedWeights, LeavesWeightsItCannotPad) {
  host_fused_backend target;
  // Aligned rows already (16 halves = 32 bytes).
  graph aligned = bare_product(dtype::float16, 8, 16);
  EXPECT_TRUE(specialize_and_fuse(aligned, target).empty());
  // A's rows unaligned (K = 7): the product would stay unaligned.
  graph odd_k = bare_product(dtype::float16, 7, 13);
  EXPECT_TRUE(specialize_and_fuse(odd_k, target).empty());
  // The weight is also a graph output: it must stay as it is, and is not copied.
  graph output = bare_product(dtype::float16, 8, 13);
  output.outputs.push_back(declared("w", dtype::float16, {8, 13}));
  EXPECT_TRUE(specialize_and_fuse(output, target).empty());
  // Transposed B ([N, K]) with N aligned, K not: A's rows are unaligned.
  graph trans_b = bare_product(dtype::float16, 13, 8, true);
  EXPECT_TRUE(specialize_and_fuse(trans_b, target).empty());
  // A target that refuses the fused op: nothing.
  host_fused_backend refusing(true);
  graph refused = bare_product(dtype::float16, 8, 13);
  EXPECT_TRUE(specialize_and_fuse(refused, refusing).empty());
}

TEST(FusionGemm, LeavesProductsItCannotFuse) {
  // The biased value read twice: the Add stays (the activation with it).
  graph shared = gemm_graph(dtype::float32, {4, 8}, 8, "relu");
  shared.outputs.push_back(declared("p", dtype::float32, {4, 8}));
  host_fused_backend target;
  graph g1 = shared;
  // The Add and Relu after it are an elementwise program of their own.
  EXPECT_EQ(specialize_and_fuse(g1, target),
            (std::map<std::string, std::size_t>{{"elementwise", 1}}));
  EXPECT_EQ(count_ops(g1, "MatMul"), 1U);
  // A weight that is no initializer: nothing.
  graph dynamic = gemm_graph(dtype::float32, {4, 8}, 8, "none");
  dynamic.inputs.push_back(declared("w", dtype::float32, {8, 8}));
  dynamic.initializers.erase("w");
  EXPECT_TRUE(specialize_and_fuse(dynamic, target).empty());
  EXPECT_EQ(count_ops(dynamic, "MatMul"), 1U);
  // A target that refuses the fused ops: nothing.
  host_fused_backend refusing(true);
  graph g2 = gemm_graph(dtype::float32, {4, 8}, 8, "gelu_new");
  EXPECT_TRUE(specialize_and_fuse(g2, refusing).empty());
  EXPECT_EQ(g2.nodes.size(), 10U);
}

TEST(FusionLayerNorm, OpAndDecompositionWithResidual) {
  for (const bool decomposed : {false, true}) {
    for (const bool residual : {false, true}) {
      for (const bool sum_out : {false, true}) {
        if (sum_out && !residual) continue;
        SCOPED_TRACE(std::to_string(decomposed) + std::to_string(residual) +
                     std::to_string(sum_out));
        const graph g = layer_norm_graph(dtype::float32, {3, 5, 24}, decomposed, residual, sum_out);
        std::map<std::string, tensor> inputs{{"a", random_tensor(dtype::float32, {3, 5, 24}, 5)}};
        if (residual) inputs["b"] = random_tensor(dtype::float32, {3, 5, 24}, 6);
        const graph fused = fuse_and_compare(g, inputs, {{"layer_norm", 1}}, 1e-4, 1e-5);
        ASSERT_EQ(fused.nodes.size(), 1U);
        EXPECT_EQ(fused.nodes[0].op_type, "FusedLayerNorm");
        EXPECT_EQ(fused.nodes[0].outputs.size(), sum_out ? 2U : 1U);
        EXPECT_EQ(fused.nodes[0].inputs[1].empty(), !residual);
      }
    }
  }
}

TEST(FusionLayerNorm, LeavesOtherAxesAndForms) {
  host_fused_backend target;
  graph axis = layer_norm_graph(dtype::float32, {4, 6}, false, false, false);
  axis.nodes[0].attributes["axis"] = std::int64_t{0};
  axis.initializers["scale"] = random_tensor(dtype::float32, {4, 6}, 1);
  axis.initializers["bias"] = random_tensor(dtype::float32, {4, 6}, 2);
  EXPECT_TRUE(specialize_and_fuse(axis, target).empty());
  // Pow 3 is no variance: the decomposition stays (its elementwise parts fuse).
  graph cube = layer_norm_graph(dtype::float32, {4, 6}, true, false, false);
  cube.initializers["two"] = scalar(dtype::float32, 3.0F);
  const auto counts = specialize_and_fuse(cube, target);
  EXPECT_FALSE(counts.contains("layer_norm"));
  EXPECT_EQ(count_ops(cube, "ReduceMean"), 2U);
}

TEST(FusionElementwise, TreeWithBroadcastsBecomesOneProgram) {
  for (const dtype type : {dtype::float32, dtype::float16, dtype::bfloat16}) {
    const graph g = elementwise_graph(type, {3, 4, 10});
    const std::map<std::string, tensor> inputs{{"x", random_tensor(type, {3, 4, 10}, 7)},
                                               {"c", random_tensor(type, {10}, 8)},
                                               {"mask", random_tensor(dtype::boolean, {10}, 9)}};
    // The program rounds each value to its dtype as the nodes do: the same
    // up to a last-place difference of the math library's tanh.
    const double rtol = type == dtype::float32 ? 1e-6 : type == dtype::float16 ? 1e-3 : 8e-3;
    const graph fused = fuse_and_compare(g, inputs, {{"elementwise", 1}}, rtol, 1e-6);
    ASSERT_EQ(fused.nodes.size(), 1U);
    EXPECT_EQ(fused.nodes[0].inputs.size(), 3U);  // x, c, mask; the constants are immediate
  }
}

TEST(FusionElementwise, OneElementConstantsKeepTheirRank) {
  // x [4] + c [1, 1] is [1, 4]: the constant becomes an immediate, the shape stays.
  graph g;
  g.name = "rank";
  g.opset = 17;
  g.inputs = {declared("x", dtype::float32, {4})};
  g.initializers["c"] = tensor(dtype::float32, {1, 1});
  g.initializers["c"].data<float>()[0] = 0.25F;
  g.nodes.push_back(make_node("Add", {"x", "c"}, {"t"}));
  g.nodes.push_back(make_node("Tanh", {"t"}, {"y"}));
  g.outputs = {declared("y", dtype::float32, {1, 4})};
  const graph fused = fuse_and_compare(g, {{"x", random_tensor(dtype::float32, {4}, 3)}},
                                       {{"elementwise", 1}}, 1e-6, 1e-6);
  EXPECT_EQ(fused.nodes[0].get<std::vector<std::int64_t>>("shape"),
            (std::vector<std::int64_t>{1, 4}));
}

TEST(FusionElementwise, LongChainsReuseRegisters) {
  // 40 nodes, each reading the previous value and x: two registers live at
  // a time plus a constant; one program of 40 + 3 instructions.
  graph g;
  g.name = "long";
  g.opset = 17;
  g.inputs = {declared("x", dtype::float32, {2, 9})};
  g.initializers["k"] = scalar(dtype::float32, 0.7F);
  std::string last = "x";
  for (int i = 0; i < 40; ++i) {
    const std::string out = "v" + std::to_string(i);
    if (i % 3 == 0) g.nodes.push_back(make_node("Mul", {last, "k"}, {out}));
    if (i % 3 == 1) g.nodes.push_back(make_node("Add", {last, "x"}, {out}));
    if (i % 3 == 2) g.nodes.push_back(make_node("Tanh", {last}, {out}));
    last = out;
  }
  g.outputs = {declared(last, dtype::float32, {2, 9})};
  const graph fused = fuse_and_compare(g, {{"x", random_tensor(dtype::float32, {2, 9}, 5)}},
                                       {{"elementwise", 1}}, 1e-5, 1e-6);
  const ew_program program = ew_from_attributes(fused.nodes.at(0));
  int highest = 0;
  for (const auto& i : program.code) highest = std::max<int>(highest, i.dst);
  EXPECT_LE(highest, 3);
  // Past the 48 instructions a program holds, the tree is not fused whole.
  graph longer = g;
  for (int i = 40; i < 60; ++i) {
    const std::string out = "v" + std::to_string(i);
    longer.nodes.push_back(make_node("Tanh", {last}, {out}));
    last = out;
  }
  longer.outputs = {declared(last, dtype::float32, {2, 9})};
  host_fused_backend target;
  specialize_and_fuse(longer, target);
  EXPECT_GT(longer.nodes.size(), 1U);
  for (const auto& n : longer.nodes) {
    if (n.domain == k_fused_domain) {
      EXPECT_LE(ew_from_attributes(n).code.size(), 48U);
    }
  }
}

TEST(FusionElementwise, StopsAtSharedValuesAndRuntimeExponents) {
  host_fused_backend target;
  graph g;
  g.name = "negative";
  g.opset = 17;
  g.inputs = {declared("x", dtype::float32, {4, 4}), declared("e", dtype::float32, {4, 4})};
  g.initializers["two"] = scalar(dtype::float32, 2.0F);
  g.nodes.push_back(make_node("Tanh", {"x"}, {"t"}));  // read twice: by Mul and the output
  g.nodes.push_back(make_node("Mul", {"t", "two"}, {"u"}));
  g.nodes.push_back(make_node("Pow", {"u", "e"}, {"p"}));  // runtime exponent
  g.nodes.push_back(make_node("Exp", {"p"}, {"y"}));
  g.outputs = {declared("y", dtype::float32, {4, 4}), declared("t", dtype::float32, {4, 4})};
  const graph original = g;
  const auto counts = specialize_and_fuse(g, target);
  // Only Tanh→Mul could join, but Tanh's output is a graph output: Mul, Pow
  // and Exp stay single nodes, so nothing is fused.
  EXPECT_TRUE(counts.empty());
  EXPECT_EQ(g.nodes.size(), original.nodes.size());
  // Integers are not computed in float32 programs.
  graph ints;
  ints.name = "ints";
  ints.opset = 17;
  ints.inputs = {declared("i", dtype::int64, {4})};
  ints.initializers["k"] = tensor(dtype::int64, {});
  ints.nodes.push_back(make_node("Add", {"i", "k"}, {"j"}));
  ints.nodes.push_back(make_node("Mul", {"j", "k"}, {"y"}));
  ints.outputs = {declared("y", dtype::int64, {4})};
  EXPECT_TRUE(specialize_and_fuse(ints, target).empty());
}

TEST(FusionModels, EachExportFusesWhatItHoldsAndComputesTheSame) {
  // Per model: the rewrites per pass. Two layers each: per layer BERT has
  // six biased products (Q, K, V, attention output + residual, intermediate
  // + GELU, output + residual) and two LayerNorms, plus the embeddings'
  // LayerNorm and the pooler; GPT-2 four products (QKV, projection, MLP +
  // GELU, MLP projection) and two LayerNorms plus the final one; ResNet the
  // residual Add + Relu of its four blocks and the classifier. Where shape
  // inference leaves the attention's shapes unknown (GPT-2 without a past:
  // a Split by a sizes input), the projection fuses with its bias only; the
  // dynamo exports write some products without a bias, fused only with a
  // tail.
  const std::map<std::string, std::map<std::string, std::size_t>> expected = {
      {"bert_dynamo_op18", {{"elementwise", 1}, {"gemm_epilogue", 12}, {"layer_norm", 5}}},
      {"bert_torchscript_op14", {{"elementwise", 3}, {"gemm_epilogue", 13}, {"layer_norm", 5}}},
      {"bert_torchscript_op18", {{"elementwise", 3}, {"gemm_epilogue", 13}, {"layer_norm", 5}}},
      {"distilbert_dynamo_op18", {{"gemm_epilogue", 12}, {"layer_norm", 5}}},
      {"distilbert_torchscript_op14",
       {{"elementwise", 2}, {"gemm_epilogue", 12}, {"layer_norm", 5}}},
      {"distilbert_torchscript_op18",
       {{"elementwise", 2}, {"gemm_epilogue", 12}, {"layer_norm", 5}}},
      {"gpt2_dynamo_op18_nopast",
       {{"aligned_weights", 1}, {"gemm_epilogue", 6}, {"layer_norm", 5}}},
      {"gpt2_torchscript_op18_nopast",
       {{"aligned_weights", 1}, {"gemm_epilogue", 8}, {"layer_norm", 5}}},
      {"gpt2_dynamo_op18_past", {{"aligned_weights", 1}, {"gemm_epilogue", 6}, {"layer_norm", 5}}},
      {"gpt2_torchscript_op18_past",
       {{"aligned_weights", 1}, {"gemm_epilogue", 8}, {"layer_norm", 5}}},
      {"resnet_dynamo_op18", {{"elementwise", 4}, {"gemm_epilogue", 1}}},
      {"resnet_torchscript_op14", {{"elementwise", 4}, {"gemm_epilogue", 1}}},
      {"resnet_torchscript_op18", {{"elementwise", 4}, {"gemm_epilogue", 1}}},
      // Its classifier is a Gemm by a [10, 32] weight, transB, without a bias: padded to 12 rows.
      {"vit_dynamo_op18", {{"aligned_weights", 1}, {"gemm_epilogue", 12}, {"layer_norm", 5}}},
      {"vit_torchscript_op18", {{"gemm_epilogue", 13}, {"layer_norm", 5}}},
  };
  for (const auto& c : model_cases()) {
    SCOPED_TRACE(c.folder);
    const graph g = load_onnx(model_path(c));
    graph reference = g;
    fold_constants(reference, c.bound);
    remove_dead_nodes(reference);
    graph fused = g;
    host_fused_backend target;
    const auto counts = specialize_and_fuse(fused, target, c.bound);
    EXPECT_EQ(counts, expected.at(c.folder));
    const auto inputs = model_inputs(g, c.bound);
    const auto cpu = make_backend("cpu");
    const auto want = run_graph(reference, *cpu, inputs);
    const auto got = run_graph(fused, target, inputs);
    EXPECT_GT(target.fused_runs(), 0U);
    expect_close(got, want, 1e-4, 1e-5);
  }
}

// A plan is fused, planned into an arena and recorded as a CUDA graph only
// when every value's shape is static: each export, its dims bound, must get
// there (the batch of every export, and each sequence, bound as a session
// would be asked).
TEST(FusionModels, EveryExportIsStaticOnceItsDimsAreBound) {
  for (const auto& c : model_cases()) {
    SCOPED_TRACE(c.folder);
    session s = session::load(model_path(c), session_options{c.bound});
    const graph g = load_onnx(model_path(c));
    for (const auto& [name, value] : model_inputs(g, c.bound)) s.set_input(name, value);
    s.run();
    EXPECT_TRUE(s.execution().static_shapes) << s.execution().dynamic_value;
  }
}

}  // namespace
}  // namespace coolbench::engine
