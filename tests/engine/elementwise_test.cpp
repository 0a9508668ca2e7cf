#include "engine/backends/cpu/elementwise.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numbers>
#include <string>
#include <string_view>
#include <vector>

namespace coolbench::engine::cpu {
namespace {

kernel_fn find_kernel(std::string_view op_type) {
  for (const kernel_entry& entry : elementwise_kernels()) {
    if (entry.op_type == op_type) return entry.run;
  }
  ADD_FAILURE() << "no kernel for " << op_type;
  return nullptr;
}

node make_node(std::string op_type, std::map<std::string, attribute> attributes = {}) {
  node n;
  n.name = "test_" + op_type;
  n.op_type = std::move(op_type);
  n.attributes = std::move(attributes);
  return n;
}

std::vector<tensor> run(const node& n, const std::vector<const tensor*>& inputs,
                        std::size_t output_count = 1) {
  std::vector<tensor> outputs(output_count);
  find_kernel(n.op_type)(n, inputs, outputs);
  return outputs;
}

template <class T>
tensor make(shape_t shape, const std::vector<T>& values) {
  tensor t(dtype_of<T>(), std::move(shape));
  std::ranges::copy(values, t.data<T>().begin());
  return t;
}

tensor make_bool(shape_t shape, const std::vector<int>& values) {
  tensor t(dtype::boolean, std::move(shape));
  auto out = t.data<bool>();
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = values[i] != 0;
  return t;
}

tensor make_half(shape_t shape, const std::vector<float>& values) {
  tensor t(dtype::float16, std::move(shape));
  auto* bits = reinterpret_cast<std::uint16_t*>(t.raw().data());  // NOLINT: float16 view
  for (std::size_t i = 0; i < values.size(); ++i) bits[i] = float_to_half(values[i]);
  return t;
}

std::vector<float> read_half(const tensor& t) {
  const auto* bits = reinterpret_cast<const std::uint16_t*>(t.raw().data());  // NOLINT
  std::vector<float> values;
  for (std::int64_t i = 0; i < t.size(); ++i) values.push_back(half_to_float(bits[i]));
  return values;
}

template <class T>
std::vector<T> values(const tensor& t) {
  const auto data = t.data<T>();
  return {data.begin(), data.end()};
}

std::vector<int> bools(const tensor& t) {
  std::vector<int> out;
  for (const bool b : t.data<bool>()) out.push_back(b ? 1 : 0);
  return out;
}

TEST(Elementwise, TableHasEveryOp) {
  for (const char* op :
       {"Add",   "Sub",  "Mul",      "Div",     "Pow",   "Sqrt",   "Reciprocal",  "Exp",
        "Log",   "Tanh", "Erf",      "Neg",     "Abs",   "Relu",   "Sigmoid",     "Gelu",
        "Equal", "Less", "Greater",  "Not",     "And",   "Where",  "Min",         "Max",
        "Clip",  "Cast", "Identity", "Dropout", "IsNaN", "CumSum", "LessOrEqual", "GreaterOrEqual",
        "Or",    "Xor",  "CastLike"}) {
    EXPECT_NE(find_kernel(op), nullptr) << op;
  }
}

TEST(Elementwise, AddBroadcastsRowOverMatrix) {
  const tensor a = make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const tensor b = make<float>({3}, {10, 20, 30});
  const auto out = run(make_node("Add"), {&a, &b});
  EXPECT_EQ(out[0].shape(), (shape_t{2, 3}));
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST(Elementwise, MulBroadcastsBothWays) {
  // [2,1,4] * [3,1] -> [2,3,4]: out[i,j,k] = a[i,0,k] * b[j,0].
  std::vector<float> av(8);
  for (std::size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>(i + 1);
  const tensor a = make<float>({2, 1, 4}, av);
  const tensor b = make<float>({3, 1}, {1, 10, 100});
  const auto out = run(make_node("Mul"), {&a, &b});
  ASSERT_EQ(out[0].shape(), (shape_t{2, 3, 4}));
  const auto got = values<float>(out[0]);
  const float bv[3] = {1, 10, 100};
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t j = 0; j < 3; ++j) {
      for (std::size_t k = 0; k < 4; ++k) {
        EXPECT_EQ(got[(i * 3 + j) * 4 + k], av[i * 4 + k] * bv[j]) << i << j << k;
      }
    }
  }
}

TEST(Elementwise, SubWithScalar) {
  const tensor a = make<float>({2, 2}, {1, 2, 3, 4});
  const tensor s = make<float>({}, {1.5F});
  auto out = run(make_node("Sub"), {&a, &s});
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{-0.5F, 0.5F, 1.5F, 2.5F}));
  out = run(make_node("Sub"), {&s, &a});
  EXPECT_EQ(out[0].shape(), (shape_t{2, 2}));
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{0.5F, -0.5F, -1.5F, -2.5F}));
}

TEST(Elementwise, BroadcastsZeroSizedDimension) {
  const tensor a = make<float>({0, 3}, {});
  const tensor b = make<float>({1, 3}, {1, 2, 3});
  const auto out = run(make_node("Add"), {&a, &b});
  EXPECT_EQ(out[0].shape(), (shape_t{0, 3}));
  EXPECT_EQ(out[0].size(), 0);
}

TEST(Elementwise, Float16ComputesInFloatAndRoundTrips) {
  const tensor a = make_half({3}, {1.5F, -2.25F, 1000});
  const tensor b = make_half({3}, {0.25F, 0.5F, 24});
  const auto out = run(make_node("Add"), {&a, &b});
  ASSERT_EQ(out[0].type(), dtype::float16);
  EXPECT_EQ(read_half(out[0]), (std::vector<float>{1.75F, -1.75F, 1024}));
  const auto root = run(make_node("Sqrt"), {&b});
  // Results are rounded to the nearest float16, not kept at float precision.
  const auto rounded = [](float v) { return half_to_float(float_to_half(v)); };
  EXPECT_EQ(read_half(root[0]),
            (std::vector<float>{0.5F, rounded(std::sqrt(0.5F)), rounded(std::sqrt(24.0F))}));
  EXPECT_NE(rounded(std::sqrt(0.5F)), std::sqrt(0.5F));
}

TEST(Elementwise, IntegerArithmetic) {
  const tensor a = make<std::int64_t>({4}, {7, -7, 7, -7});
  const tensor b = make<std::int64_t>({4}, {2, 2, -2, -2});
  EXPECT_EQ(values<std::int64_t>(run(make_node("Div"), {&a, &b})[0]),
            (std::vector<std::int64_t>{3, -3, -3, 3}));  // truncates toward zero
  EXPECT_EQ(values<std::int64_t>(run(make_node("Mul"), {&a, &b})[0]),
            (std::vector<std::int64_t>{14, -14, -14, 14}));
  const tensor c = make<std::int32_t>({2}, {5, -9});
  const tensor d = make<std::int32_t>({1}, {4});
  EXPECT_EQ(values<std::int32_t>(run(make_node("Div"), {&c, &d})[0]),
            (std::vector<std::int32_t>{1, -2}));
  EXPECT_EQ(values<std::int32_t>(run(make_node("Sub"), {&c, &d})[0]),
            (std::vector<std::int32_t>{1, -13}));
}

TEST(Elementwise, IntegerDivisionByZeroThrows) {
  const tensor a = make<std::int32_t>({1}, {1});
  const tensor zero = make<std::int32_t>({1}, {0});
  try {
    (void)run(make_node("Div"), {&a, &zero});
    FAIL() << "expected invalid_argument";
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("test_Div"), std::string::npos) << e.what();
  }
}

TEST(Elementwise, IntegerMinDividedByMinusOneWraps) {
  const auto min = std::numeric_limits<std::int64_t>::min();
  const tensor a = make<std::int64_t>({1}, {min});
  const tensor b = make<std::int64_t>({1}, {-1});
  EXPECT_EQ(values<std::int64_t>(run(make_node("Div"), {&a, &b})[0])[0], min);
}

TEST(Elementwise, PowTakesFloatOrIntegerExponent) {
  const tensor base = make<float>({3}, {2, 3, 4});
  const tensor fexp = make<float>({}, {0.5F});
  const tensor iexp = make<std::int64_t>({3}, {0, 2, 3});
  auto out = run(make_node("Pow"), {&base, &fexp});
  EXPECT_FLOAT_EQ(values<float>(out[0])[0], std::sqrt(2.0F));
  EXPECT_FLOAT_EQ(values<float>(out[0])[2], 2.0F);
  out = run(make_node("Pow"), {&base, &iexp});
  EXPECT_EQ(out[0].type(), dtype::float32);
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{1, 9, 64}));
}

TEST(Elementwise, PowKeepsAnIntegerBaseType) {
  const tensor base = make<std::int64_t>({3}, {2, 3, -2});
  const tensor iexp = make<std::int32_t>({3}, {40, 2, 3});
  auto out = run(make_node("Pow"), {&base, &iexp});
  EXPECT_EQ(out[0].type(), dtype::int64);
  EXPECT_EQ(values<std::int64_t>(out[0]), (std::vector<std::int64_t>{1LL << 40, 9, -8}));
  const tensor fexp = make<float>({3}, {0.5F, 2, 2});
  out = run(make_node("Pow"), {&base, &fexp});
  EXPECT_EQ(values<std::int64_t>(out[0]), (std::vector<std::int64_t>{1, 9, 4}));
}

TEST(Elementwise, UnaryMath) {
  const tensor x = make<float>({4}, {-2, -0.5F, 0.5F, 4});
  const auto get = [&](const char* op) { return values<float>(run(make_node(op), {&x})[0]); };
  EXPECT_EQ(get("Neg"), (std::vector<float>{2, 0.5F, -0.5F, -4}));
  EXPECT_EQ(get("Abs"), (std::vector<float>{2, 0.5F, 0.5F, 4}));
  EXPECT_EQ(get("Relu"), (std::vector<float>{0, 0, 0.5F, 4}));
  EXPECT_EQ(get("Reciprocal"), (std::vector<float>{-0.5F, -2, 2, 0.25F}));
  const auto exp = get("Exp");
  const auto tanh = get("Tanh");
  const auto erf = get("Erf");
  const auto sigmoid = get("Sigmoid");
  const float xs[4] = {-2, -0.5F, 0.5F, 4};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(exp[i], std::exp(xs[i]));
    EXPECT_FLOAT_EQ(tanh[i], std::tanh(xs[i]));
    EXPECT_FLOAT_EQ(erf[i], std::erf(xs[i]));
    EXPECT_FLOAT_EQ(sigmoid[i], 1.0F / (1.0F + std::exp(-xs[i])));
  }
  const tensor positive = make<float>({2}, {1, std::numbers::e_v<float>});
  EXPECT_FLOAT_EQ(values<float>(run(make_node("Log"), {&positive})[0])[1], 1.0F);
  EXPECT_FLOAT_EQ(values<float>(run(make_node("Sqrt"), {&positive})[0])[0], 1.0F);
}

TEST(Elementwise, SigmoidSaturatesWithoutNan) {
  const tensor x = make<float>({2}, {-1000, 1000});
  EXPECT_EQ(values<float>(run(make_node("Sigmoid"), {&x})[0]), (std::vector<float>{0, 1}));
}

TEST(Elementwise, IntegerNegAbsRelu) {
  const tensor x = make<std::int32_t>({3}, {-3, 0, 5});
  EXPECT_EQ(values<std::int32_t>(run(make_node("Neg"), {&x})[0]),
            (std::vector<std::int32_t>{3, 0, -5}));
  EXPECT_EQ(values<std::int32_t>(run(make_node("Abs"), {&x})[0]),
            (std::vector<std::int32_t>{3, 0, 5}));
  EXPECT_EQ(values<std::int32_t>(run(make_node("Relu"), {&x})[0]),
            (std::vector<std::int32_t>{0, 0, 5}));
}

TEST(Elementwise, GeluMatchesBothReferenceFormulas) {
  const std::vector<float> xs = {-3, -1, -0.25F, 0, 0.5F, 2, 5};
  const tensor x = make<float>({7}, xs);
  const auto exact = values<float>(run(make_node("Gelu"), {&x})[0]);
  const auto none =
      values<float>(run(make_node("Gelu", {{"approximate", std::string("none")}}), {&x})[0]);
  const auto tanh =
      values<float>(run(make_node("Gelu", {{"approximate", std::string("tanh")}}), {&x})[0]);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double v = xs[i];
    const double erf_ref = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    const double tanh_ref =
        0.5 * v * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
    EXPECT_NEAR(exact[i], erf_ref, 1e-6) << v;
    EXPECT_EQ(none[i], exact[i]) << v;
    EXPECT_NEAR(tanh[i], tanh_ref, 1e-6) << v;
  }
  EXPECT_THROW((void)run(make_node("Gelu", {{"approximate", std::string("fast")}}), {&x}),
               invalid_argument);
}

TEST(Elementwise, ComparisonsProduceBool) {
  const tensor a = make<float>({2, 2}, {1, 2, 3, 4});
  const tensor b = make<float>({2}, {2, 2});
  auto out = run(make_node("Equal"), {&a, &b});
  ASSERT_EQ(out[0].type(), dtype::boolean);
  EXPECT_EQ(bools(out[0]), (std::vector<int>{0, 1, 0, 0}));
  EXPECT_EQ(bools(run(make_node("Less"), {&a, &b})[0]), (std::vector<int>{1, 0, 0, 0}));
  EXPECT_EQ(bools(run(make_node("Greater"), {&a, &b})[0]), (std::vector<int>{0, 0, 1, 1}));
  const tensor i = make<std::int64_t>({3}, {1, 5, 9});
  const tensor j = make<std::int64_t>({}, {5});
  EXPECT_EQ(bools(run(make_node("Less"), {&i, &j})[0]), (std::vector<int>{1, 0, 0}));
  EXPECT_EQ(bools(run(make_node("Equal"), {&i, &j})[0]), (std::vector<int>{0, 1, 0}));
}

TEST(Elementwise, LogicalOps) {
  const tensor a = make_bool({2, 2}, {1, 1, 0, 0});
  const tensor b = make_bool({2}, {1, 0});
  EXPECT_EQ(bools(run(make_node("And"), {&a, &b})[0]), (std::vector<int>{1, 0, 0, 0}));
  EXPECT_EQ(bools(run(make_node("Not"), {&b})[0]), (std::vector<int>{0, 1}));
  EXPECT_EQ(bools(run(make_node("Equal"), {&a, &b})[0]), (std::vector<int>{1, 0, 0, 1}));
  const tensor f = make<float>({1}, {1});
  EXPECT_THROW((void)run(make_node("Not"), {&f}), invalid_argument);
}

TEST(Elementwise, WhereBroadcastsAllThreeInputs) {
  const tensor condition = make_bool({2, 1}, {1, 0});
  const tensor x = make<std::int64_t>({3}, {1, 2, 3});
  const tensor y = make<std::int64_t>({}, {-1});
  const auto out = run(make_node("Where"), {&condition, &x, &y});
  ASSERT_EQ(out[0].type(), dtype::int64);
  EXPECT_EQ(out[0].shape(), (shape_t{2, 3}));
  EXPECT_EQ(values<std::int64_t>(out[0]), (std::vector<std::int64_t>{1, 2, 3, -1, -1, -1}));

  const tensor hx = make_half({2}, {1.5F, 2.5F});
  const tensor hy = make_half({2}, {-1, -2});
  const tensor c2 = make_bool({2}, {0, 1});
  EXPECT_EQ(read_half(run(make_node("Where"), {&c2, &hx, &hy})[0]), (std::vector<float>{-1, 2.5F}));

  const tensor not_bool = make<float>({1}, {1});
  EXPECT_THROW((void)run(make_node("Where"), {&not_bool, &x, &y}), invalid_argument);
  const tensor other = make<float>({1}, {1});
  EXPECT_THROW((void)run(make_node("Where"), {&condition, &x, &other}), invalid_argument);
}

TEST(Elementwise, VariadicMinMax) {
  const tensor a = make<float>({2, 2}, {1, 5, 3, 7});
  const tensor b = make<float>({2}, {4, 4});
  const tensor c = make<float>({}, {6});
  EXPECT_EQ(values<float>(run(make_node("Max"), {&a, &b, &c})[0]),
            (std::vector<float>{6, 6, 6, 7}));
  EXPECT_EQ(values<float>(run(make_node("Min"), {&a, &b})[0]), (std::vector<float>{1, 4, 3, 4}));
  EXPECT_EQ(values<float>(run(make_node("Min"), {&a})[0]), values<float>(a));
  const tensor i = make<std::int32_t>({3}, {-1, 0, 9});
  const tensor j = make<std::int32_t>({3}, {2, -5, 3});
  EXPECT_EQ(values<std::int32_t>(run(make_node("Max"), {&i, &j})[0]),
            (std::vector<std::int32_t>{2, 0, 9}));
  const tensor nan = make<float>({1}, {std::nanf("")});
  EXPECT_TRUE(std::isnan(values<float>(run(make_node("Max"), {&c, &nan})[0])[0]));
}

TEST(Elementwise, ClipWithInputs) {
  const tensor x = make<float>({4}, {-5, -1, 1, 5});
  const tensor lo = make<float>({}, {-2});
  const tensor hi = make<float>({}, {2});
  EXPECT_EQ(values<float>(run(make_node("Clip"), {&x, &lo, &hi})[0]),
            (std::vector<float>{-2, -1, 1, 2}));
  // Omitted min: only the max applies.
  EXPECT_EQ(values<float>(run(make_node("Clip"), {&x, nullptr, &hi})[0]),
            (std::vector<float>{-5, -1, 1, 2}));
  EXPECT_EQ(values<float>(run(make_node("Clip"), {&x})[0]), values<float>(x));
  const tensor xi = make<std::int64_t>({3}, {-9, 3, 9});
  const tensor li = make<std::int64_t>({1}, {0});
  EXPECT_EQ(values<std::int64_t>(run(make_node("Clip"), {&xi, &li})[0]),
            (std::vector<std::int64_t>{0, 3, 9}));
  const tensor wide = make<float>({2}, {0, 1});
  EXPECT_THROW((void)run(make_node("Clip"), {&x, &wide}), invalid_argument);
}

TEST(Elementwise, ClipWithAttributes) {
  const tensor x = make_half({4}, {-5, -1, 1, 5});
  const node n = make_node("Clip", {{"min", -0.5F}, {"max", 3.0F}});
  const auto out = run(n, {&x});
  ASSERT_EQ(out[0].type(), dtype::float16);
  EXPECT_EQ(read_half(out[0]), (std::vector<float>{-0.5F, -0.5F, 1, 3}));
}

TEST(Elementwise, CastBetweenTypes) {
  const tensor x = make<float>({4}, {-2.7F, 0, 1.5F, 17179869184.0F});
  const auto cast = [&](const tensor& t, std::int64_t to) {
    return run(make_node("Cast", {{"to", to}}), {&t})[0];
  };
  const tensor as_int = cast(x, 7);
  ASSERT_EQ(as_int.type(), dtype::int64);
  EXPECT_EQ(values<std::int64_t>(as_int), (std::vector<std::int64_t>{-2, 0, 1, 17179869184}));
  const tensor as_i32 = cast(x, 6);
  EXPECT_EQ(values<std::int32_t>(as_i32),
            (std::vector<std::int32_t>{-2, 0, 1, std::numeric_limits<std::int32_t>::max()}));
  EXPECT_EQ(bools(cast(x, 9)), (std::vector<int>{1, 0, 1, 1}));
  const tensor as_half = cast(x, 10);
  ASSERT_EQ(as_half.type(), dtype::float16);
  EXPECT_EQ(read_half(as_half)[2], 1.5F);
  EXPECT_TRUE(std::isinf(read_half(as_half)[3]));
  EXPECT_EQ(values<float>(cast(as_half, 1))[2], 1.5F);
  const tensor big = make<std::int64_t>({1}, {(std::int64_t{1} << 40) + 7});
  EXPECT_EQ(values<std::int64_t>(cast(big, 7))[0], (std::int64_t{1} << 40) + 7);
  const tensor flags = make_bool({2}, {1, 0});
  EXPECT_EQ(values<float>(cast(flags, 1)), (std::vector<float>{1, 0}));
  EXPECT_THROW((void)cast(x, 11), invalid_argument);  // double
  try {
    (void)cast(x, 2);
    FAIL() << "expected invalid_argument";
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported cast target"), std::string::npos);
  }
}

TEST(Elementwise, IdentityAndDropout) {
  const tensor x = make<float>({2}, {1, 2});
  EXPECT_EQ(values<float>(run(make_node("Identity"), {&x})[0]), values<float>(x));
  auto out = run(make_node("Dropout"), {&x});
  EXPECT_EQ(values<float>(out[0]), values<float>(x));
  const tensor ratio = make<float>({}, {0.5F});
  out = run(make_node("Dropout"), {&x, &ratio}, 2);
  EXPECT_EQ(values<float>(out[0]), values<float>(x));
  ASSERT_EQ(out[1].type(), dtype::boolean);
  EXPECT_EQ(bools(out[1]), (std::vector<int>{1, 1}));
  const tensor training = make_bool({}, {1});
  EXPECT_THROW((void)run(make_node("Dropout"), {&x, &ratio, &training}), invalid_argument);
  const tensor zero = make<float>({}, {0.0F});
  out = run(make_node("Dropout"), {&x, &zero, &training}, 2);
  EXPECT_EQ(values<float>(out[0]), values<float>(x));
  EXPECT_EQ(bools(out[1]), (std::vector<int>{1, 1}));
}

TEST(Elementwise, ShapeMismatchNamesTheNode) {
  const tensor a = make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const tensor b = make<float>({4}, {1, 2, 3, 4});
  try {
    (void)run(make_node("Add"), {&a, &b});
    FAIL() << "expected invalid_argument";
  } catch (const invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("test_Add"), std::string::npos) << message;
    EXPECT_NE(message.find("[2, 3]"), std::string::npos) << message;
    EXPECT_NE(message.find("[4]"), std::string::npos) << message;
  }
  const tensor c = make<float>({3}, {1, 2, 3});
  EXPECT_THROW((void)run(make_node("Max"), {&a, &c, &b}), invalid_argument);
  const tensor cond = make_bool({5}, {1, 1, 1, 1, 1});
  EXPECT_THROW((void)run(make_node("Where"), {&cond, &a, &a}), invalid_argument);
}

TEST(Elementwise, DtypeMismatchThrows) {
  const tensor f = make<float>({2}, {1, 2});
  const tensor i = make<std::int64_t>({2}, {1, 2});
  try {
    (void)run(make_node("Mul"), {&f, &i});
    FAIL() << "expected invalid_argument";
  } catch (const invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("test_Mul"), std::string::npos) << message;
    EXPECT_NE(message.find("int64"), std::string::npos) << message;
  }
  EXPECT_THROW((void)run(make_node("Sqrt"), {&i}), invalid_argument);  // float only
  const tensor flags = make_bool({2}, {1, 0});
  EXPECT_THROW((void)run(make_node("Add"), {&flags, &flags}), invalid_argument);
  EXPECT_THROW((void)run(make_node("Pow"), {&flags, &f}), invalid_argument);
}

// ONNX's own CumSum tests are float64, which the engine does not take; these
// follow the operator's definition by hand.
TEST(Elementwise, CumSumAlongAxisWithExclusiveAndReverse) {
  const tensor x = make<std::int64_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  const tensor axis1 = make<std::int64_t>({}, {1});
  const tensor axis0 = make<std::int32_t>({1}, {-2});
  EXPECT_EQ(values<std::int64_t>(run(make_node("CumSum"), {&x, &axis1})[0]),
            (std::vector<std::int64_t>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(values<std::int64_t>(run(make_node("CumSum"), {&x, &axis0})[0]),
            (std::vector<std::int64_t>{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(values<std::int64_t>(
                run(make_node("CumSum", {{"exclusive", std::int64_t{1}}}), {&x, &axis1})[0]),
            (std::vector<std::int64_t>{0, 1, 3, 0, 4, 9}));
  EXPECT_EQ(values<std::int64_t>(
                run(make_node("CumSum", {{"reverse", std::int64_t{1}}}), {&x, &axis1})[0]),
            (std::vector<std::int64_t>{6, 5, 3, 15, 11, 6}));
  EXPECT_EQ(values<std::int64_t>(run(
                make_node("CumSum", {{"reverse", std::int64_t{1}}, {"exclusive", std::int64_t{1}}}),
                {&x, &axis1})[0]),
            (std::vector<std::int64_t>{5, 3, 0, 11, 6, 0}));
  const tensor h = make_half({4}, {0.5F, 1.5F, -2.0F, 4.0F});
  const tensor first_axis = make<std::int64_t>({}, {0});
  EXPECT_EQ(read_half(run(make_node("CumSum"), {&h, &first_axis})[0]),
            (std::vector<float>{0.5F, 2.0F, 0.0F, 4.0F}));
  const tensor axis_out_of_range = make<std::int64_t>({}, {2});
  EXPECT_THROW((void)run(make_node("CumSum"), {&x, &axis_out_of_range}), invalid_argument);
}

TEST(Elementwise, IsNaNAndOrderedComparisons) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const tensor x = make<float>({4}, {1.0F, nan, -std::numeric_limits<float>::infinity(), 0.0F});
  EXPECT_EQ(bools(run(make_node("IsNaN"), {&x})[0]), (std::vector<int>{0, 1, 0, 0}));
  const tensor a = make<std::int64_t>({3}, {1, 2, 3});
  const tensor b = make<std::int64_t>({1}, {2});
  EXPECT_EQ(bools(run(make_node("LessOrEqual"), {&a, &b})[0]), (std::vector<int>{1, 1, 0}));
  EXPECT_EQ(bools(run(make_node("GreaterOrEqual"), {&a, &b})[0]), (std::vector<int>{0, 1, 1}));
  const tensor p = make_bool({4}, {0, 0, 1, 1});
  const tensor q = make_bool({4}, {0, 1, 0, 1});
  EXPECT_EQ(bools(run(make_node("Or"), {&p, &q})[0]), (std::vector<int>{0, 1, 1, 1}));
  EXPECT_EQ(bools(run(make_node("Xor"), {&p, &q})[0]), (std::vector<int>{0, 1, 1, 0}));
}

// The kernel's own tanh (not libm's) against tanh in double: within 2 ulp
// over a sweep of magnitudes, with the special values kept.
TEST(Elementwise, TanhIsWithinTwoUlp) {
  std::vector<float> xs = {0.0F, -0.0F, 1e-30F, 0.499999F, 0.5F, 0.500001F, 9.0F, 50.0F, 1e30F};
  for (float v = 1e-8F; v < 20.0F; v *= 1.0009F) xs.push_back(v);
  const std::size_t positives = xs.size();
  for (std::size_t i = 0; i < positives; ++i) xs.push_back(-xs[i]);
  xs.push_back(std::numeric_limits<float>::infinity());
  xs.push_back(-std::numeric_limits<float>::infinity());
  xs.push_back(std::numeric_limits<float>::quiet_NaN());
  const tensor x = make<float>({std::ssize(xs)}, xs);
  const auto got = values<float>(run(make_node("Tanh"), {&x})[0]);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double want = std::tanh(static_cast<double>(xs[i]));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got[i]));
      continue;
    }
    const auto magnitude = static_cast<float>(std::fabs(want));
    const float ulp = std::nextafter(magnitude, std::numeric_limits<float>::infinity()) - magnitude;
    EXPECT_LE(std::fabs(static_cast<double>(got[i]) - want), 2.0 * ulp) << "tanh(" << xs[i] << ")";
    EXPECT_EQ(std::signbit(got[i]), std::signbit(xs[i])) << "tanh(" << xs[i] << ")";
  }
}

TEST(Elementwise, ArityIsChecked) {
  const tensor f = make<float>({2}, {1, 2});
  EXPECT_THROW((void)run(make_node("Add"), {&f}), invalid_argument);
  EXPECT_THROW((void)run(make_node("Add"), {&f, nullptr}), invalid_argument);
  EXPECT_THROW((void)run(make_node("Relu"), {&f, &f}), invalid_argument);
}

}  // namespace
}  // namespace coolbench::engine::cpu
