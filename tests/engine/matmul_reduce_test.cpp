#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "coolbench/core/error.hpp"
#include "coolbench/engine/graph.hpp"
#include "coolbench/engine/tensor.hpp"
#include "engine/backends/cpu/matmul.hpp"
#include "engine/backends/cpu/reduce.hpp"

namespace coolbench::engine::cpu {
namespace {

tensor make_f32(shape_t shape, const std::vector<float>& values) {
  tensor t(dtype::float32, std::move(shape));
  EXPECT_EQ(static_cast<std::size_t>(t.size()), values.size());
  std::copy(values.begin(), values.end(), t.data<float>().begin());
  return t;
}

tensor make_f16(shape_t shape, const std::vector<float>& values) {
  tensor t(dtype::float16, std::move(shape));
  std::vector<std::uint16_t> bits;
  for (const float v : values) bits.push_back(float_to_half(v));
  std::memcpy(t.raw().data(), bits.data(), bits.size() * sizeof(std::uint16_t));
  return t;
}

tensor make_i64(const std::vector<std::int64_t>& values) {
  tensor t(dtype::int64, shape_t{static_cast<std::int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.data<std::int64_t>().begin());
  return t;
}

std::vector<float> values_of(const tensor& t) {
  if (t.type() == dtype::float32) {
    const auto d = t.data<float>();
    return {d.begin(), d.end()};
  }
  std::vector<std::uint16_t> bits(static_cast<std::size_t>(t.size()));
  std::memcpy(bits.data(), t.raw().data(), bits.size() * sizeof(std::uint16_t));
  std::vector<float> result;
  for (const std::uint16_t b : bits) result.push_back(half_to_float(b));
  return result;
}

std::vector<float> random_values(std::size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  std::vector<float> result(count);
  for (float& v : result) v = dist(rng);
  return result;
}

node make_node(const std::string& op_type, std::map<std::string, attribute> attributes = {}) {
  node n;
  n.name = "test_" + op_type;
  n.op_type = op_type;
  n.inputs = {"x"};
  n.outputs = {"y"};
  n.attributes = std::move(attributes);
  return n;
}

kernel_fn find_kernel(const std::string& op_type) {
  for (const auto table : {matmul_kernels(), reduce_kernels()}) {
    for (const kernel_entry& entry : table) {
      if (entry.op_type == op_type) return entry.run;
    }
  }
  ADD_FAILURE() << "no kernel for " << op_type;
  return nullptr;
}

std::vector<tensor> run(const node& n, const std::vector<const tensor*>& inputs,
                        std::size_t output_count = 1) {
  std::vector<tensor> outputs(output_count);
  find_kernel(n.op_type)(n, inputs, outputs);
  return outputs;
}

void expect_near_all(const std::vector<float>& actual, const std::vector<float>& expected,
                     float tolerance = 1e-4F) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], tolerance) << "at " << i;
  }
}

// ---- MatMul ---------------------------------------------------------------

TEST(MatMul, TwoDimensional) {
  const tensor a = make_f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const tensor b = make_f32({3, 2}, {7, 8, 9, 10, 11, 12});
  const auto out = run(make_node("MatMul"), {&a, &b});
  EXPECT_EQ(out[0].shape(), (shape_t{2, 2}));
  expect_near_all(values_of(out[0]), {58, 64, 139, 154});
}

TEST(MatMul, BatchedWithBroadcasting) {
  const std::vector<float> av = random_values(2 * 3 * 4, 1);
  const std::vector<float> bv = random_values(5 * 4 * 2, 2);
  const tensor a = make_f32({2, 1, 3, 4}, av);
  const tensor b = make_f32({5, 4, 2}, bv);
  const auto out = run(make_node("MatMul"), {&a, &b});
  ASSERT_EQ(out[0].shape(), (shape_t{2, 5, 3, 2}));
  std::vector<float> expected;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 5; ++j) {
      for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 2; ++c) {
          float sum = 0;
          for (int k = 0; k < 4; ++k) sum += av[i * 12 + r * 4 + k] * bv[j * 8 + k * 2 + c];
          expected.push_back(sum);
        }
      }
    }
  }
  expect_near_all(values_of(out[0]), expected);
}

TEST(MatMul, OneDimensionalOperands) {
  const tensor v = make_f32({3}, {1, 2, 3});
  const tensor m = make_f32({3, 2}, {1, 2, 3, 4, 5, 6});
  const tensor mt = make_f32({2, 3}, {1, 3, 5, 2, 4, 6});

  const auto vm = run(make_node("MatMul"), {&v, &m});
  EXPECT_EQ(vm[0].shape(), (shape_t{2}));
  expect_near_all(values_of(vm[0]), {22, 28});

  const auto mv = run(make_node("MatMul"), {&mt, &v});
  EXPECT_EQ(mv[0].shape(), (shape_t{2}));
  expect_near_all(values_of(mv[0]), {22, 28});

  const auto dot = run(make_node("MatMul"), {&v, &v});
  EXPECT_EQ(dot[0].shape(), shape_t{});
  expect_near_all(values_of(dot[0]), {14});

  // A 1-D operand against a batched one broadcasts over the batch.
  const tensor batched = make_f32({2, 3, 1}, {1, 2, 3, 4, 5, 6});
  const auto vb = run(make_node("MatMul"), {&v, &batched});
  EXPECT_EQ(vb[0].shape(), (shape_t{2, 1}));
  expect_near_all(values_of(vb[0]), {14, 32});
}

TEST(MatMul, Float16ComputesInFloat32) {
  const tensor a = make_f16({2, 2}, {1, 2, 3, 4});
  const tensor b = make_f16({2, 2}, {0.5F, 1, 1.5F, 2});
  const auto out = run(make_node("MatMul"), {&a, &b});
  EXPECT_EQ(out[0].type(), dtype::float16);
  expect_near_all(values_of(out[0]), {3.5F, 5, 7.5F, 11}, 1e-3F);
}

TEST(MatMul, ShapeMismatchNamesTheNode) {
  const tensor a = make_f32({2, 3}, random_values(6, 3));
  const tensor b = make_f32({4, 2}, random_values(8, 4));
  try {
    (void)run(make_node("MatMul"), {&a, &b});
    FAIL() << "expected invalid_argument";
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("test_MatMul"), std::string::npos) << e.what();
  }
  const tensor c = make_f32({2, 3, 4}, random_values(24, 5));
  const tensor d = make_f32({3, 4, 2}, random_values(24, 6));
  EXPECT_THROW((void)run(make_node("MatMul"), {&c, &d}), invalid_argument);
}

// ---- Gemm -----------------------------------------------------------------

struct gemm_case {
  bool trans_a;
  bool trans_b;
  shape_t c_shape;
};

class GemmTest : public ::testing::TestWithParam<gemm_case> {};

TEST_P(GemmTest, MatchesNaiveLoop) {
  const gemm_case& p = GetParam();
  constexpr std::int64_t m = 3;
  constexpr std::int64_t k = 5;
  constexpr std::int64_t n_cols = 4;
  const float alpha = 0.75F;
  const float beta = 1.5F;
  const std::vector<float> av = random_values(m * k, 10);
  const std::vector<float> bv = random_values(k * n_cols, 11);
  const std::vector<float> cv =
      random_values(static_cast<std::size_t>(element_count(p.c_shape)), 12);
  const tensor a = make_f32(p.trans_a ? shape_t{k, m} : shape_t{m, k}, av);
  const tensor b = make_f32(p.trans_b ? shape_t{n_cols, k} : shape_t{k, n_cols}, bv);
  const tensor c = make_f32(p.c_shape, cv);
  const node n = make_node("Gemm", {{"alpha", alpha},
                                    {"beta", beta},
                                    {"transA", std::int64_t{p.trans_a ? 1 : 0}},
                                    {"transB", std::int64_t{p.trans_b ? 1 : 0}}});
  const auto out = run(n, {&a, &b, &c});
  ASSERT_EQ(out[0].shape(), (shape_t{m, n_cols}));

  // C's index under unidirectional broadcasting to [m, n].
  shape_t cs = p.c_shape;
  while (cs.size() < 2) cs.insert(cs.begin(), 1);
  std::vector<float> expected;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n_cols; ++j) {
      float sum = 0;
      for (std::int64_t l = 0; l < k; ++l) {
        const float x = p.trans_a ? av[l * m + i] : av[i * k + l];
        const float y = p.trans_b ? bv[j * k + l] : bv[l * n_cols + j];
        sum += x * y;
      }
      const float cval = cv[(cs[0] == 1 ? 0 : i) * cs[1] + (cs[1] == 1 ? 0 : j)];
      expected.push_back(alpha * sum + beta * cval);
    }
  }
  expect_near_all(values_of(out[0]), expected);
}

INSTANTIATE_TEST_SUITE_P(TransAndBroadcast, GemmTest,
                         ::testing::Values(gemm_case{false, false, {3, 4}},
                                           gemm_case{true, false, {4}},
                                           gemm_case{false, true, {3, 1}},
                                           gemm_case{true, true, {1, 4}},
                                           gemm_case{true, true, {}}));

TEST(Gemm, WithoutC) {
  const tensor a = make_f32({2, 2}, {1, 2, 3, 4});
  const tensor b = make_f32({2, 2}, {1, 0, 0, 1});
  const auto out = run(make_node("Gemm", {{"alpha", 2.0F}}), {&a, &b, nullptr});
  expect_near_all(values_of(out[0]), {2, 4, 6, 8});
  const auto two_inputs = run(make_node("Gemm"), {&a, &b});
  expect_near_all(values_of(two_inputs[0]), {1, 2, 3, 4});
}

TEST(Gemm, RejectsMismatches) {
  const tensor a = make_f32({2, 3}, random_values(6, 20));
  const tensor b = make_f32({2, 3}, random_values(6, 21));
  EXPECT_THROW((void)run(make_node("Gemm"), {&a, &b}), invalid_argument);
  const auto ok = run(make_node("Gemm", {{"transB", std::int64_t{1}}}), {&a, &b});
  EXPECT_EQ(ok[0].shape(), (shape_t{2, 2}));
  const tensor c = make_f32({3}, random_values(3, 22));
  try {
    (void)run(make_node("Gemm", {{"transB", std::int64_t{1}}}), {&a, &b, &c});
    FAIL() << "expected invalid_argument";
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("test_Gemm"), std::string::npos) << e.what();
  }
}

// ---- Reductions -----------------------------------------------------------

// [2, 3, 2] holding 0..11.
tensor iota_tensor() {
  std::vector<float> v(12);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return make_f32({2, 3, 2}, v);
}

TEST(Reduce, SumAxesAttributeKeepdims) {
  const tensor x = iota_tensor();
  const auto kept = run(make_node("ReduceSum", {{"axes", std::vector<std::int64_t>{1}}}), {&x});
  EXPECT_EQ(kept[0].shape(), (shape_t{2, 1, 2}));
  expect_near_all(values_of(kept[0]), {6, 9, 24, 27});

  const auto dropped = run(make_node("ReduceSum", {{"axes", std::vector<std::int64_t>{1}},
                                                   {"keepdims", std::int64_t{0}}}),
                           {&x});
  EXPECT_EQ(dropped[0].shape(), (shape_t{2, 2}));
  expect_near_all(values_of(dropped[0]), {6, 9, 24, 27});
}

TEST(Reduce, AxesInputAndNegativeAxes) {
  const tensor x = iota_tensor();
  const tensor axes = make_i64({-1, 0});
  const auto out = run(make_node("ReduceMean", {{"keepdims", std::int64_t{0}}}), {&x, &axes});
  EXPECT_EQ(out[0].shape(), (shape_t{3}));
  // Means of {0,1,6,7}, {2,3,8,9}, {4,5,10,11}.
  expect_near_all(values_of(out[0]), {3.5F, 5.5F, 7.5F});

  const auto attr = run(make_node("ReduceMean", {{"axes", std::vector<std::int64_t>{0, -1}},
                                                 {"keepdims", std::int64_t{0}}}),
                        {&x});
  expect_near_all(values_of(attr[0]), values_of(out[0]));
}

TEST(Reduce, MaxAndEmptyAxes) {
  const tensor x = iota_tensor();
  const auto all = run(make_node("ReduceMax"), {&x});
  EXPECT_EQ(all[0].shape(), (shape_t{1, 1, 1}));
  expect_near_all(values_of(all[0]), {11});

  const auto scalar = run(make_node("ReduceMax", {{"keepdims", std::int64_t{0}}}), {&x, nullptr});
  EXPECT_EQ(scalar[0].shape(), shape_t{});
  expect_near_all(values_of(scalar[0]), {11});

  const tensor no_axes = make_i64({});
  const auto noop =
      run(make_node("ReduceSum", {{"noop_with_empty_axes", std::int64_t{1}}}), {&x, &no_axes});
  EXPECT_EQ(noop[0].shape(), x.shape());
  expect_near_all(values_of(noop[0]), values_of(x));

  const auto middle = run(make_node("ReduceMax", {{"axes", std::vector<std::int64_t>{-2}}}), {&x});
  EXPECT_EQ(middle[0].shape(), (shape_t{2, 1, 2}));
  expect_near_all(values_of(middle[0]), {4, 5, 10, 11});
}

TEST(Reduce, Float16AndBadAxis) {
  const tensor x = make_f16({2, 2}, {1, 2, 3, 4});
  const auto out = run(make_node("ReduceSum", {{"axes", std::vector<std::int64_t>{0}}}), {&x});
  EXPECT_EQ(out[0].type(), dtype::float16);
  expect_near_all(values_of(out[0]), {4, 6});
  EXPECT_THROW((void)run(make_node("ReduceSum", {{"axes", std::vector<std::int64_t>{2}}}), {&x}),
               invalid_argument);
}

// ---- Softmax / LogSoftmax -------------------------------------------------

TEST(Softmax, RowsSumToOneAndLogMatches) {
  std::vector<float> v = random_values(3 * 4 * 5, 30);
  v[0] = 1000.0F;  // would overflow exp() without the max shift
  const tensor x = make_f32({3, 4, 5}, v);
  for (const std::int64_t axis : {-1, 1, 0}) {
    const auto sm = run(make_node("Softmax", {{"axis", axis}}), {&x});
    const auto lsm = run(make_node("LogSoftmax", {{"axis", axis}}), {&x});
    const std::vector<float> s = values_of(sm[0]);
    const std::vector<float> l = values_of(lsm[0]);
    for (const float value : s) EXPECT_TRUE(std::isfinite(value));
    const std::size_t a = static_cast<std::size_t>(axis < 0 ? axis + 3 : axis);
    const std::int64_t inner = a == 2 ? 1 : (a == 1 ? 5 : 20);
    const std::int64_t length = x.shape()[a];
    const std::int64_t outer = 60 / (inner * length);
    for (std::int64_t o = 0; o < outer; ++o) {
      for (std::int64_t i = 0; i < inner; ++i) {
        float sum = 0;
        for (std::int64_t j = 0; j < length; ++j) sum += s[o * length * inner + j * inner + i];
        EXPECT_NEAR(sum, 1.0F, 1e-5F) << "axis " << axis;
      }
    }
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] > 1e-30F) {
        EXPECT_NEAR(l[i], std::log(s[i]), 1e-4F) << "axis " << axis;
      }
    }
  }
  EXPECT_THROW((void)run(make_node("Softmax", {{"axis", std::int64_t{3}}}), {&x}),
               invalid_argument);
}

// ---- LayerNormalization ---------------------------------------------------

TEST(LayerNormalization, MatchesNaiveReference) {
  constexpr std::int64_t rows = 2 * 3;
  constexpr std::int64_t length = 4 * 5;
  const std::vector<float> xv = random_values(rows * length, 40);
  const std::vector<float> sv = random_values(length, 41);
  const std::vector<float> bv = random_values(length, 42);
  const tensor x = make_f32({2, 3, 4, 5}, xv);
  const tensor scale = make_f32({4, 5}, sv);
  const tensor bias = make_f32({4, 5}, bv);
  const float epsilon = 1e-3F;
  const node n =
      make_node("LayerNormalization", {{"axis", std::int64_t{-2}}, {"epsilon", epsilon}});
  const auto out = run(n, {&x, &scale, &bias}, 3);
  ASSERT_EQ(out[0].shape(), x.shape());
  EXPECT_EQ(out[1].shape(), (shape_t{2, 3, 1, 1}));
  EXPECT_EQ(out[2].shape(), (shape_t{2, 3, 1, 1}));

  std::vector<float> expected;
  std::vector<float> means;
  std::vector<float> inv_std_devs;
  for (std::int64_t r = 0; r < rows; ++r) {
    float mean = 0;
    for (std::int64_t j = 0; j < length; ++j) mean += xv[r * length + j];
    mean /= length;
    float var = 0;
    for (std::int64_t j = 0; j < length; ++j) {
      var += (xv[r * length + j] - mean) * (xv[r * length + j] - mean);
    }
    var /= length;
    const float inv = 1.0F / std::sqrt(var + epsilon);
    for (std::int64_t j = 0; j < length; ++j) {
      expected.push_back((xv[r * length + j] - mean) * inv * sv[j] + bv[j]);
    }
    means.push_back(mean);
    inv_std_devs.push_back(inv);
  }
  expect_near_all(values_of(out[0]), expected);
  expect_near_all(values_of(out[1]), means);
  expect_near_all(values_of(out[2]), inv_std_devs, 1e-3F);

  // Without B, and with only Y requested.
  const auto no_bias = run(n, {&x, &scale, nullptr});
  ASSERT_EQ(no_bias.size(), 1U);
  const std::vector<float> y = values_of(no_bias[0]);
  for (std::size_t i = 0; i < y.size(); ++i) {
    EXPECT_NEAR(y[i], expected[i] - bv[i % length], 1e-4F);
  }
}

TEST(LayerNormalization, TakesScaleAndBiasOfAnotherFloatType) {
  // A float16 model exported with a float32 residual stream: X float32,
  // Scale and B float16. Y is float32, computed as with float32 parameters
  // holding the same (float16-exact) values.
  const tensor x = make_f32({3, 8}, random_values(24, 60));
  const tensor scale32 = make_f32({8}, random_values(8, 61));
  const tensor bias32 = make_f32({8}, random_values(8, 62));
  const tensor scale16 = make_f16({8}, values_of(scale32));
  const tensor bias16 = make_f16({8}, values_of(bias32));
  const tensor scale = make_f32({8}, values_of(scale16));
  const tensor bias = make_f32({8}, values_of(bias16));
  const node n = make_node("LayerNormalization");
  const auto mixed = run(n, {&x, &scale16, &bias16});
  const auto same = run(n, {&x, &scale, &bias});
  ASSERT_EQ(mixed[0].type(), dtype::float32);
  expect_near_all(values_of(mixed[0]), values_of(same[0]), 0.0F);
}

TEST(LayerNormalization, RejectsBadScale) {
  const tensor x = make_f32({2, 4}, random_values(8, 50));
  const tensor scale = make_f32({3}, random_values(3, 51));
  try {
    (void)run(make_node("LayerNormalization"), {&x, &scale});
    FAIL() << "expected invalid_argument";
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("test_LayerNormalization"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace coolbench::engine::cpu
