// The CPU backend's convolutional-network operators (Conv, the pools,
// BatchNormalization), GatherElements and CastLike: the ONNX specification's
// examples, Conv against a direct loop over many geometries, the refusals,
// and their shape-inference rules.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "coolbench/core/error.hpp"
#include "coolbench/engine/model.hpp"
#include "coolbench/engine/passes.hpp"
#include "coolbench/engine/session.hpp"
#include "engine/backend.hpp"

namespace coolbench::engine {
namespace {

using int_list = std::vector<std::int64_t>;

tensor f32(shape_t shape, const std::vector<float>& values) {
  tensor t(dtype::float32, std::move(shape));
  EXPECT_EQ(static_cast<std::size_t>(t.size()), values.size());
  std::copy(values.begin(), values.end(), t.data<float>().begin());
  return t;
}

tensor iota(shape_t shape, float start = 0) {
  tensor t(dtype::float32, std::move(shape));
  for (float& v : t.data<float>()) v = start++;
  return t;
}

tensor random_f32(shape_t shape, unsigned seed) {
  tensor t(dtype::float32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  for (float& v : t.data<float>()) v = dist(rng);
  return t;
}

template <class I>
tensor indices(shape_t shape, const std::vector<I>& values) {
  tensor t(sizeof(I) == 8 ? dtype::int64 : dtype::int32, std::move(shape));
  std::memcpy(t.raw().data(), values.data(), values.size() * sizeof(I));
  return t;
}

node make_node(const std::string& op, std::size_t inputs, std::map<std::string, attribute> a = {},
               std::size_t outputs = 1) {
  node n;
  n.name = "test_" + op;
  n.op_type = op;
  for (std::size_t i = 0; i < inputs; ++i) n.inputs.push_back("in" + std::to_string(i));
  for (std::size_t i = 0; i < outputs; ++i) n.outputs.push_back("out" + std::to_string(i));
  n.attributes = std::move(a);
  return n;
}

tensor run(const node& n, const std::vector<const tensor*>& inputs) {
  auto cpu = make_backend("cpu");
  std::vector<tensor> outputs(n.outputs.size());
  cpu->run(n, inputs, outputs);
  return outputs[0];
}

std::vector<float> values(const tensor& t) {
  const auto d = t.data<float>();
  return {d.begin(), d.end()};
}

// Conv's definition, loop by loop, for 2-D inputs.
std::vector<float> direct_conv(const tensor& x, const tensor& w, const tensor* b, int_list pads,
                               int_list strides, int_list dilations, std::int64_t group,
                               const shape_t& out) {
  const auto& xs = x.shape();
  const auto& ws = w.shape();
  const std::int64_t cg = ws[1], mg = ws[0] / group;
  std::vector<float> y;
  for (std::int64_t n = 0; n < out[0]; ++n)
    for (std::int64_t m = 0; m < out[1]; ++m)
      for (std::int64_t oy = 0; oy < out[2]; ++oy)
        for (std::int64_t ox = 0; ox < out[3]; ++ox) {
          double acc = b != nullptr ? b->data<float>()[m] : 0.0;
          for (std::int64_t c = 0; c < cg; ++c)
            for (std::int64_t ky = 0; ky < ws[2]; ++ky)
              for (std::int64_t kx = 0; kx < ws[3]; ++kx) {
                const std::int64_t iy = oy * strides[0] - pads[0] + ky * dilations[0];
                const std::int64_t ix = ox * strides[1] - pads[1] + kx * dilations[1];
                if (iy < 0 || iy >= xs[2] || ix < 0 || ix >= xs[3]) continue;
                const std::int64_t channel = (m / mg) * cg + c;
                acc += static_cast<double>(
                           x.data<float>()[((n * xs[1] + channel) * xs[2] + iy) * xs[3] + ix]) *
                       w.data<float>()[((m * cg + c) * ws[2] + ky) * ws[3] + kx];
              }
          y.push_back(static_cast<float>(acc));
        }
  return y;
}

TEST(conv, the_specification_examples) {
  const tensor x = iota({1, 1, 5, 5});
  const tensor w = f32({1, 1, 3, 3}, std::vector<float>(9, 1.0F));
  const tensor padded = run(make_node("Conv", 2, {{"pads", int_list{1, 1, 1, 1}}}), {&x, &w});
  EXPECT_EQ(padded.shape(), (shape_t{1, 1, 5, 5}));
  EXPECT_EQ(values(padded),
            (std::vector<float>{12,  21, 27, 33,  24,  33,  54,  63, 72,  51,  63,  99, 108,
                                117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84}));
  const tensor plain = run(make_node("Conv", 2), {&x, &w});
  EXPECT_EQ(values(plain), (std::vector<float>{54, 63, 72, 99, 108, 117, 144, 153, 162}));
  // test_conv_with_strides_and_asymmetric_padding: x 7x5, strides 2, pads [1, 0, 1, 0].
  const tensor x7 = iota({1, 1, 7, 5});
  const tensor asym =
      run(make_node("Conv", 2, {{"pads", int_list{1, 0, 1, 0}}, {"strides", int_list{2, 2}}}),
          {&x7, &w});
  EXPECT_EQ(asym.shape(), (shape_t{1, 1, 4, 2}));
  EXPECT_EQ(values(asym), (std::vector<float>{21, 33, 99, 117, 189, 207, 171, 183}));
  // auto_pad SAME_LOWER with stride 2: output ceil(5 / 2), one pad on each side.
  const tensor same = run(
      make_node("Conv", 2, {{"auto_pad", std::string("SAME_LOWER")}, {"strides", int_list{2, 2}}}),
      {&x, &w});
  EXPECT_EQ(same.shape(), (shape_t{1, 1, 3, 3}));
  EXPECT_EQ(values(same), (std::vector<float>{12, 27, 24, 63, 108, 81, 72, 117, 84}));
}

struct conv_geometry {
  shape_t x, w;
  int_list pads, strides, dilations;
  std::int64_t group;
  shape_t out;
};

TEST(conv, matches_the_direct_loop_over_geometries) {
  const std::vector<conv_geometry> cases = {
      {{2, 3, 9, 8}, {4, 3, 3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 1, {2, 4, 9, 8}},
      {{1, 4, 11, 7}, {6, 2, 3, 2}, {0, 1, 2, 0}, {2, 3}, {1, 1}, 2, {1, 6, 6, 3}},
      {{1, 6, 10, 10}, {6, 1, 3, 3}, {2, 2, 2, 2}, {1, 1}, {2, 2}, 6, {1, 6, 10, 10}},  // depthwise
      {{3, 8, 7, 6}, {16, 8, 1, 1}, {0, 0, 0, 0}, {1, 1}, {1, 1}, 1, {3, 16, 7, 6}},    // 1x1
      {{1, 3, 16, 16}, {5, 3, 7, 7}, {3, 3, 3, 3}, {2, 2}, {1, 1}, 1, {1, 5, 8, 8}},    // stem
  };
  unsigned seed = 1;
  for (const conv_geometry& c : cases) {
    SCOPED_TRACE(to_string(c.x) + " * " + to_string(c.w));
    const tensor x = random_f32(c.x, seed++);
    const tensor w = random_f32(c.w, seed++);
    const tensor b = random_f32({c.w[0]}, seed++);
    const node n = make_node(
        "Conv", 3,
        {{"pads", c.pads}, {"strides", c.strides}, {"dilations", c.dilations}, {"group", c.group}});
    const tensor y = run(n, {&x, &w, &b});
    ASSERT_EQ(y.shape(), c.out);
    const std::vector<float> want =
        direct_conv(x, w, &b, {c.pads[0], c.pads[1]}, c.strides, c.dilations, c.group, c.out);
    for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(y.data<float>()[i], want[i], 1e-4);
  }
}

TEST(conv, one_and_three_spatial_axes_and_half_precision) {
  // 1-D: a moving sum of three with one pad on each side.
  const tensor x = iota({1, 1, 5}, 1);
  const tensor w = f32({1, 1, 3}, {1, 1, 1});
  EXPECT_EQ(values(run(make_node("Conv", 2, {{"pads", int_list{1, 1}}}), {&x, &w})),
            (std::vector<float>{3, 6, 9, 12, 9}));
  // 3-D: a 2x2x2 box sum over a 3x3x3 iota.
  const tensor x3 = iota({1, 1, 3, 3, 3});
  const tensor w3 = f32({1, 1, 2, 2, 2}, std::vector<float>(8, 1.0F));
  const tensor y3 = run(make_node("Conv", 2), {&x3, &w3});
  EXPECT_EQ(y3.shape(), (shape_t{1, 1, 2, 2, 2}));
  EXPECT_EQ(y3.data<float>()[0], 0 + 1 + 3 + 4 + 9 + 10 + 12 + 13);
  // float16 in, float16 out, computed in float32.
  tensor h(dtype::float16, {1, 1, 5, 5});
  std::vector<std::uint16_t> bits;
  for (int i = 0; i < 25; ++i) bits.push_back(float_to_half(static_cast<float>(i)));
  std::memcpy(h.raw().data(), bits.data(), 50);
  tensor hw(dtype::float16, {1, 1, 3, 3});
  const std::vector<std::uint16_t> ones(9, float_to_half(1.0F));
  std::memcpy(hw.raw().data(), ones.data(), 18);
  const tensor hy = run(make_node("Conv", 2), {&h, &hw});
  ASSERT_EQ(hy.type(), dtype::float16);
  std::uint16_t first = 0;
  std::memcpy(&first, hy.raw().data(), 2);
  EXPECT_EQ(half_to_float(first), 54.0F);
}

TEST(conv, refuses_what_does_not_fit) {
  const tensor x = iota({1, 4, 5, 5});
  const tensor w = random_f32({2, 3, 3, 3}, 1);
  EXPECT_THROW(static_cast<void>(run(make_node("Conv", 2), {&x, &w})), invalid_argument);
  const tensor w9 = random_f32({1, 4, 9, 9}, 2);
  try {
    static_cast<void>(run(make_node("Conv", 2), {&x, &w9}));
    FAIL() << "a kernel larger than the input ran";
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("larger than spatial axis 0"), std::string::npos)
        << e.what();
  }
  const tensor w1 = random_f32({1, 4, 1, 1}, 3);
  EXPECT_THROW(
      static_cast<void>(run(make_node("Conv", 2, {{"strides", int_list{0, 1}}}), {&x, &w1})),
      invalid_argument);
}

TEST(pool, max_pool_examples) {
  const tensor x = iota({1, 1, 4, 4}, 1);
  EXPECT_EQ(values(run(make_node("MaxPool", 1,
                                 {{"kernel_shape", int_list{2, 2}}, {"strides", int_list{2, 2}}}),
                       {&x})),
            (std::vector<float>{6, 8, 14, 16}));
  // test_maxpool_2d_ceil
  const tensor ceil = run(make_node("MaxPool", 1,
                                    {{"kernel_shape", int_list{3, 3}},
                                     {"strides", int_list{2, 2}},
                                     {"ceil_mode", std::int64_t{1}}}),
                          {&x});
  EXPECT_EQ(ceil.shape(), (shape_t{1, 1, 2, 2}));
  EXPECT_EQ(values(ceil), (std::vector<float>{11, 12, 15, 16}));
  // test_maxpool_2d_dilations
  EXPECT_EQ(values(run(make_node("MaxPool", 1,
                                 {{"kernel_shape", int_list{2, 2}}, {"dilations", int_list{2, 2}}}),
                       {&x})),
            (std::vector<float>{11, 12, 15, 16}));
  // Padding never wins a maximum, even over negative values.
  const tensor negative = f32({1, 1, 2}, {-5, -3});
  EXPECT_EQ(
      values(run(make_node("MaxPool", 1, {{"kernel_shape", int_list{2}}, {"pads", int_list{1, 1}}}),
                 {&negative})),
      (std::vector<float>{-5, -3, -3}));
  // The Indices output is refused, clearly.
  try {
    static_cast<void>(run(make_node("MaxPool", 1, {{"kernel_shape", int_list{2, 2}}}, 2), {&x}));
    FAIL() << "MaxPool with Indices ran";
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported output Indices"), std::string::npos);
  }
}

TEST(pool, average_pool_counts_the_padding_only_when_asked) {
  const tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  std::map<std::string, attribute> a = {{"kernel_shape", int_list{2, 2}},
                                        {"pads", int_list{1, 1, 1, 1}}};
  const tensor plain = run(make_node("AveragePool", 1, a), {&x});
  EXPECT_EQ(plain.shape(), (shape_t{1, 1, 3, 3}));
  EXPECT_EQ(values(plain), (std::vector<float>{1, 1.5F, 2, 2, 2.5F, 3, 3, 3.5F, 4}));
  a["count_include_pad"] = std::int64_t{1};
  EXPECT_EQ(values(run(make_node("AveragePool", 1, a), {&x})),
            (std::vector<float>{0.25F, 0.75F, 0.5F, 1, 2.5F, 1.5F, 0.75F, 1.75F, 1}));
  // SAME_UPPER keeps the size; 1-D strides.
  const tensor row = iota({1, 2, 5});
  const tensor same =
      run(make_node("AveragePool", 1,
                    {{"kernel_shape", int_list{2}}, {"auto_pad", std::string("SAME_UPPER")}}),
          {&row});
  EXPECT_EQ(values(same),
            (std::vector<float>{0.5F, 1.5F, 2.5F, 3.5F, 4, 5.5F, 6.5F, 7.5F, 8.5F, 9}));
}

TEST(pool, global_pools_and_batch_norm) {
  const tensor x = iota({2, 3, 2, 2});
  const tensor mean = run(make_node("GlobalAveragePool", 1), {&x});
  EXPECT_EQ(mean.shape(), (shape_t{2, 3, 1, 1}));
  EXPECT_EQ(values(mean), (std::vector<float>{1.5F, 5.5F, 9.5F, 13.5F, 17.5F, 21.5F}));
  EXPECT_EQ(values(run(make_node("GlobalMaxPool", 1), {&x})),
            (std::vector<float>{3, 7, 11, 15, 19, 23}));
  // test_batchnorm_example's formula, per channel.
  const tensor scale = f32({3}, {1, 2, 0.5F});
  const tensor bias = f32({3}, {0, 1, -1});
  const tensor m = f32({3}, {0, 4, 10});
  const tensor var = f32({3}, {1, 4, 0.25F});
  const tensor y = run(make_node("BatchNormalization", 5), {&x, &scale, &bias, &m, &var});
  ASSERT_EQ(y.shape(), x.shape());
  for (std::size_t i = 0; i < 24; ++i) {
    const std::size_t c = (i / 4) % 3;
    const float want = (x.data<float>()[i] - m.data<float>()[c]) /
                           std::sqrt(var.data<float>()[c] + 1e-5F) * scale.data<float>()[c] +
                       bias.data<float>()[c];
    EXPECT_NEAR(y.data<float>()[i], want, 1e-5) << i;
  }
  for (const auto& n : {make_node("BatchNormalization", 5, {{"training_mode", std::int64_t{1}}}, 3),
                        make_node("BatchNormalization", 5, {}, 3)}) {
    try {
      static_cast<void>(run(n, {&x, &scale, &bias, &m, &var}));
      FAIL() << "BatchNormalization in training form ran";
    } catch (const invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("unsupported"), std::string::npos) << e.what();
    }
  }
}

TEST(gather_elements, the_specification_examples) {
  const tensor a = f32({2, 2}, {1, 2, 3, 4});
  const tensor i1 = indices<std::int64_t>({2, 2}, {0, 0, 1, 0});
  EXPECT_EQ(values(run(make_node("GatherElements", 2, {{"axis", std::int64_t{1}}}), {&a, &i1})),
            (std::vector<float>{1, 1, 4, 3}));
  const tensor b = iota({3, 3}, 1);
  const tensor i0 = indices<std::int32_t>({2, 3}, {1, 2, 0, 2, 0, 0});
  const tensor y = run(make_node("GatherElements", 2), {&b, &i0});
  EXPECT_EQ(y.shape(), (shape_t{2, 3}));
  EXPECT_EQ(values(y), (std::vector<float>{4, 8, 3, 7, 2, 3}));
  const tensor negative = indices<std::int64_t>({2, 3}, {-1, -2, 0, -2, 0, 0});
  EXPECT_EQ(values(run(make_node("GatherElements", 2), {&b, &negative})),
            (std::vector<float>{7, 5, 3, 4, 2, 3}));
  // A [1, 3] index along the last axis of [3, 3]: indices may be smaller than data.
  const tensor row = indices<std::int64_t>({1, 3}, {2, 1, 0});
  EXPECT_EQ(values(run(make_node("GatherElements", 2, {{"axis", std::int64_t{-1}}}), {&b, &row})),
            (std::vector<float>{3, 2, 1}));
  const tensor outside = indices<std::int64_t>({1, 1}, {3});
  try {
    static_cast<void>(run(make_node("GatherElements", 2), {&b, &outside}));
    FAIL() << "an index out of range was taken";
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("expected indices in [-3, 2]"), std::string::npos);
  }
}

// ResNet's dynamo export: CastLike(a scalar 0, the Conv's input) makes a zero
// of the input's dtype; the second input gives only its dtype.
TEST(cast_like, takes_the_second_inputs_dtype) {
  tensor zero(dtype::int64, {});
  const tensor like = f32({2}, {5, 6});
  const tensor out = run(make_node("CastLike", 2), {&zero, &like});
  ASSERT_EQ(out.type(), dtype::float32);
  EXPECT_EQ(out.shape(), shape_t{});
  EXPECT_EQ(values(out), (std::vector<float>{0}));
  const tensor half_like(dtype::float16, {1});
  const tensor halves = run(make_node("CastLike", 2), {&like, &half_like});
  ASSERT_EQ(halves.type(), dtype::float16);
  std::uint16_t bits[2] = {};
  std::memcpy(bits, halves.raw().data(), sizeof bits);
  EXPECT_EQ(half_to_float(bits[0]), 5.0F);
  EXPECT_EQ(half_to_float(bits[1]), 6.0F);
}

value_info declared(std::string name, dtype type, std::vector<dimension> shape) {
  return {std::move(name), type, std::move(shape), true};
}
dimension sym(std::string symbol) { return dimension{-1, std::move(symbol)}; }
dimension num(std::int64_t value) { return dimension{value, {}}; }

std::string inferred(node n, std::vector<value_info> inputs) {
  graph g;
  g.opset = 17;
  g.inputs = std::move(inputs);
  g.outputs = {declared(n.outputs[0], dtype::float32, {})};
  g.nodes = {std::move(n)};
  return infer_shapes(g).at(g.nodes[0].outputs[0]).describe();
}

TEST(nn_shape_inference, rules) {
  const auto f = dtype::float32;
  EXPECT_EQ(
      inferred(make_node("Conv", 2, {{"pads", int_list{3, 3, 3, 3}}, {"strides", int_list{2, 2}}}),
               {declared("in0", f, {sym("batch"), num(3), num(224), num(224)}),
                declared("in1", f, {num(64), num(3), num(7), num(7)})}),
      "[batch, 64, 112, 112]");
  EXPECT_EQ(inferred(make_node("MaxPool", 1,
                               {{"kernel_shape", int_list{3, 3}},
                                {"strides", int_list{2, 2}},
                                {"pads", int_list{1, 1, 1, 1}}}),
                     {declared("in0", f, {sym("batch"), num(64), num(112), sym("w")})}),
            "[batch, 64, 56, ?]");
  EXPECT_EQ(inferred(make_node("GlobalAveragePool", 1),
                     {declared("in0", f, {sym("batch"), num(2048), num(7), num(7)})}),
            "[batch, 2048, 1, 1]");
  EXPECT_EQ(inferred(make_node("GatherElements", 2),
                     {declared("in0", f, {num(512), num(8)}),
                      declared("in1", dtype::int64, {num(1), sym("sequence")})}),
            "[1, sequence]");
  EXPECT_THROW(static_cast<void>(inferred(make_node("MaxPool", 1, {{"kernel_shape", int_list{9}}}),
                                          {declared("in0", f, {num(1), num(1), num(4)})})),
               model_error);
}

TEST(nn_session, a_training_form_is_refused_when_the_session_is_made) {
  graph g;
  g.opset = 12;
  g.inputs = {declared("in0", dtype::float32, {num(1), num(1), num(4), num(4)})};
  node pool =
      make_node("MaxPool", 1, {{"kernel_shape", int_list{2, 2}}, {"strides", int_list{2, 2}}}, 2);
  pool.name = "pool";
  g.nodes = {pool};
  g.outputs = {declared("out0", dtype::float32, {}), declared("out1", dtype::int64, {})};
  try {
    session s(g);
    FAIL() << "a session with MaxPool's Indices output was made";
  } catch (const model_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "unsupported operator MaxPool (opset 12) in node 'pool' for dtype float32: the "
              "Indices output (each window's argmax) is not computed; export without it");
  }
  // Without Indices the same node runs.
  g.nodes[0].outputs.pop_back();
  g.outputs.pop_back();
  session s(g);
  s.set_input("in0", iota({1, 1, 4, 4}));
  s.run();
  EXPECT_EQ(values(s.output(0)), (std::vector<float>{5, 7, 13, 15}));
}

}  // namespace
}  // namespace coolbench::engine
