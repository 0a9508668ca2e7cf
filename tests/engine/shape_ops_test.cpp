#include "engine/backends/cpu/shape_ops.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "coolbench/core/error.hpp"

namespace coolbench::engine::cpu {
namespace {

using ints = std::vector<std::int64_t>;
using floats = std::vector<float>;

template <class T>
tensor make(shape_t shape, const std::vector<T>& values) {
  tensor t(dtype_of<T>(), std::move(shape));
  std::copy(values.begin(), values.end(), t.data<T>().begin());
  return t;
}

tensor vec(const ints& values) { return make<std::int64_t>({std::ssize(values)}, values); }

node make_node(std::string op, std::map<std::string, attribute> attributes = {}) {
  node n;
  n.name = "n0";
  n.op_type = std::move(op);
  n.attributes = std::move(attributes);
  return n;
}

std::vector<tensor> run(const node& n, const std::vector<const tensor*>& inputs,
                        std::size_t outputs = 1) {
  for (const kernel_entry& entry : shape_kernels()) {
    if (entry.op_type == n.op_type) {
      std::vector<tensor> results(outputs);
      entry.run(n, inputs, results);
      return results;
    }
  }
  ADD_FAILURE() << "no kernel for " << n.op_type;
  return {};
}

tensor run1(const node& n, const std::vector<const tensor*>& inputs) {
  return run(n, inputs).at(0);
}

template <class T>
std::vector<T> values(const tensor& t) {
  const auto data = t.data<T>();
  return {data.begin(), data.end()};
}

// Runs a kernel expected to refuse its inputs; the message must name the node.
void expect_refused(const node& n, const std::vector<const tensor*>& inputs,
                    std::size_t outputs = 1) {
  try {
    run(n, inputs, outputs);
    ADD_FAILURE() << n.op_type << " accepted invalid input";
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("node 'n0' (" + n.op_type + ")"), std::string::npos)
        << e.what();
  }
}

const tensor k_2x3 = make<float>({2, 3}, {0, 1, 2, 3, 4, 5});

TEST(ShapeOpsTest, TableHasEveryOp) { EXPECT_EQ(shape_kernels().size(), 18U); }

// ONNX's GatherND tests cover batch_dims 0 and 1 on small cases; these add a
// slice per index, negative indices, and the refusals.
TEST(ShapeOpsTest, GatherNDPicksSlicesWithinBatches) {
  const tensor data = make<float>({2, 2, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  const tensor rows = make<std::int64_t>({2, 2}, {1, 0, 0, -1});  // data[1][0], data[0][1]
  const tensor picked = run1(make_node("GatherND"), {&data, &rows});
  EXPECT_EQ(picked.shape(), (shape_t{2, 3}));
  EXPECT_EQ(values<float>(picked), (floats{6, 7, 8, 3, 4, 5}));
  const tensor per_batch = make<std::int64_t>({2, 1, 2}, {1, 2, 0, 0});  // [0][1][2], [1][0][0]
  const tensor batched =
      run1(make_node("GatherND", {{"batch_dims", std::int64_t{1}}}), {&data, &per_batch});
  EXPECT_EQ(batched.shape(), (shape_t{2, 1}));
  EXPECT_EQ(values<float>(batched), (floats{5, 6}));
  const tensor out_of_range = make<std::int64_t>({1, 1}, {2});
  expect_refused(make_node("GatherND"), {&data, &out_of_range});
  const tensor too_long = make<std::int64_t>({1, 4}, {0, 0, 0, 0});
  expect_refused(make_node("GatherND"), {&data, &too_long});
}

TEST(ShapeOpsTest, FlattenSplitsAtTheAxis) {
  const tensor data = make<float>({2, 3, 4}, floats(24, 1.0F));
  EXPECT_EQ(run1(make_node("Flatten"), {&data}).shape(), (shape_t{2, 12}));
  EXPECT_EQ(run1(make_node("Flatten", {{"axis", std::int64_t{0}}}), {&data}).shape(),
            (shape_t{1, 24}));
  EXPECT_EQ(run1(make_node("Flatten", {{"axis", std::int64_t{-1}}}), {&data}).shape(),
            (shape_t{6, 4}));
  expect_refused(make_node("Flatten", {{"axis", std::int64_t{4}}}), {&data});
}

TEST(ShapeOpsTest, ReshapeCopiesZeroAndInfersMinusOne) {
  const tensor data = make<float>({2, 3, 4}, floats(24, 1.0F));
  const tensor shape = vec({0, -1});
  const tensor out = run1(make_node("Reshape"), {&data, &shape});
  EXPECT_EQ(out.shape(), (shape_t{2, 12}));
}

TEST(ShapeOpsTest, ReshapeAllowZeroKeepsZero) {
  const tensor data = make<float>({0, 3}, {});
  const tensor shape = vec({3, 0});
  const tensor out = run1(make_node("Reshape", {{"allowzero", std::int64_t{1}}}), {&data, &shape});
  EXPECT_EQ(out.shape(), (shape_t{3, 0}));
}

TEST(ShapeOpsTest, ReshapeRefusesImpossibleShapes) {
  const tensor bad = vec({4, -1});
  expect_refused(make_node("Reshape"), {&k_2x3, &bad});
  const tensor wrong_count = vec({5});
  expect_refused(make_node("Reshape"), {&k_2x3, &wrong_count});
  const tensor two_inferred = vec({-1, -1});
  expect_refused(make_node("Reshape"), {&k_2x3, &two_inferred});
}

TEST(ShapeOpsTest, TransposeDefaultReversesAndPermWorks) {
  const tensor out = run1(make_node("Transpose"), {&k_2x3});
  EXPECT_EQ(out.shape(), (shape_t{3, 2}));
  EXPECT_EQ(values<float>(out), (floats{0, 3, 1, 4, 2, 5}));

  const tensor data = make<std::int64_t>({2, 3, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  const tensor permuted = run1(make_node("Transpose", {{"perm", ints{1, 2, 0}}}), {&data});
  EXPECT_EQ(permuted.shape(), (shape_t{3, 2, 2}));
  EXPECT_EQ(values<std::int64_t>(permuted), (ints{0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11}));
  expect_refused(make_node("Transpose", {{"perm", ints{0, 0}}}), {&k_2x3});
}

TEST(ShapeOpsTest, TransposeMovesFloat16Bytes) {
  tensor half(dtype::float16, {2, 2});
  const std::vector<std::uint16_t> bits = {float_to_half(1), float_to_half(2), float_to_half(3),
                                           float_to_half(4)};
  std::memcpy(half.raw().data(), bits.data(), half.bytes());
  const tensor out = run1(make_node("Transpose"), {&half});
  std::vector<std::uint16_t> got(4);
  std::memcpy(got.data(), out.raw().data(), out.bytes());
  EXPECT_EQ(out.type(), dtype::float16);
  EXPECT_EQ(half_to_float(got[1]), 3.0F);
  EXPECT_EQ(half_to_float(got[2]), 2.0F);
}

TEST(ShapeOpsTest, SqueezeAxesAsAttributeOrInput) {
  const tensor data = make<float>({1, 3, 1}, {1, 2, 3});
  EXPECT_EQ(run1(make_node("Squeeze", {{"axes", ints{-1}}}), {&data}).shape(), (shape_t{1, 3}));
  const tensor axes = vec({0});
  EXPECT_EQ(run1(make_node("Squeeze"), {&data, &axes}).shape(), (shape_t{3, 1}));
  EXPECT_EQ(run1(make_node("Squeeze"), {&data}).shape(), (shape_t{3}));
  const tensor not_one = vec({1});
  expect_refused(make_node("Squeeze"), {&data, &not_one});
}

TEST(ShapeOpsTest, UnsqueezeAxesAsAttributeOrInput) {
  const tensor out = run1(make_node("Unsqueeze", {{"axes", ints{0, -1}}}), {&k_2x3});
  EXPECT_EQ(out.shape(), (shape_t{1, 2, 3, 1}));
  EXPECT_EQ(values<float>(out), values<float>(k_2x3));
  const tensor axes = vec({1});
  EXPECT_EQ(run1(make_node("Unsqueeze"), {&k_2x3, &axes}).shape(), (shape_t{2, 1, 3}));
  const tensor out_of_range = vec({4});
  expect_refused(make_node("Unsqueeze"), {&k_2x3, &out_of_range});
}

TEST(ShapeOpsTest, ConcatOnNegativeAxis) {
  const tensor other = make<float>({2, 1}, {10, 11});
  const tensor out = run1(make_node("Concat", {{"axis", std::int64_t{-1}}}), {&k_2x3, &other});
  EXPECT_EQ(out.shape(), (shape_t{2, 4}));
  EXPECT_EQ(values<float>(out), (floats{0, 1, 2, 10, 3, 4, 5, 11}));
  const tensor rows = run1(make_node("Concat", {{"axis", std::int64_t{0}}}), {&k_2x3, &k_2x3});
  EXPECT_EQ(rows.shape(), (shape_t{4, 3}));
  expect_refused(make_node("Concat", {{"axis", std::int64_t{0}}}), {&k_2x3, &other});
}

TEST(ShapeOpsTest, SplitSizesAsInputOrAttribute) {
  const tensor sizes = vec({1, 2});
  const auto by_input = run(make_node("Split", {{"axis", std::int64_t{-1}}}), {&k_2x3, &sizes}, 2);
  EXPECT_EQ(by_input[0].shape(), (shape_t{2, 1}));
  EXPECT_EQ(values<float>(by_input[0]), (floats{0, 3}));
  EXPECT_EQ(values<float>(by_input[1]), (floats{1, 2, 4, 5}));

  const auto by_attribute =
      run(make_node("Split", {{"axis", std::int64_t{1}}, {"split", ints{2, 1}}}), {&k_2x3}, 2);
  EXPECT_EQ(values<float>(by_attribute[0]), (floats{0, 1, 3, 4}));
  EXPECT_EQ(values<float>(by_attribute[1]), (floats{2, 5}));

  const tensor wrong = vec({1, 1});
  expect_refused(make_node("Split", {{"axis", std::int64_t{1}}}), {&k_2x3, &wrong}, 2);
}

TEST(ShapeOpsTest, SplitEvenlyOrByNumOutputs) {
  const auto even = run(make_node("Split"), {&k_2x3}, 2);
  EXPECT_EQ(values<float>(even[0]), (floats{0, 1, 2}));
  EXPECT_EQ(values<float>(even[1]), (floats{3, 4, 5}));

  const tensor data = make<std::int32_t>({5}, {0, 1, 2, 3, 4});
  const auto chunks = run(make_node("Split", {{"num_outputs", std::int64_t{2}}}), {&data}, 2);
  EXPECT_EQ(values<std::int32_t>(chunks[0]), (std::vector<std::int32_t>{0, 1, 2}));
  EXPECT_EQ(values<std::int32_t>(chunks[1]), (std::vector<std::int32_t>{3, 4}));
  expect_refused(make_node("Split"), {&data}, 2);
}

TEST(ShapeOpsTest, SliceWithAxesAndSteps) {
  const tensor data = make<float>({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  const tensor starts = make<std::int32_t>({2}, {1, 0});
  const tensor ends = make<std::int32_t>({2}, {std::numeric_limits<std::int32_t>::max(), -1});
  const tensor axes = make<std::int32_t>({2}, {-1, 0});
  const tensor steps = make<std::int32_t>({2}, {2, 1});
  const tensor out = run1(make_node("Slice"), {&data, &starts, &ends, &axes, &steps});
  EXPECT_EQ(out.shape(), (shape_t{2, 2}));
  EXPECT_EQ(values<float>(out), (floats{1, 3, 5, 7}));
}

TEST(ShapeOpsTest, SliceNegativeStepReversesAndClamps) {
  const tensor data = make<std::int64_t>({5}, {0, 1, 2, 3, 4});
  const tensor starts = vec({-1});
  const tensor ends = vec({std::numeric_limits<std::int64_t>::min()});
  const tensor steps = vec({-2});
  const tensor out = run1(make_node("Slice"), {&data, &starts, &ends, nullptr, &steps});
  EXPECT_EQ(values<std::int64_t>(out), (ints{4, 2, 0}));

  const tensor start_past_end = vec({100});
  const tensor stop_at_one = vec({1});
  const tensor back = vec({-1});
  const tensor clamped =
      run1(make_node("Slice"), {&data, &start_past_end, &stop_at_one, nullptr, &back});
  EXPECT_EQ(values<std::int64_t>(clamped), (ints{4, 3, 2}));

  const tensor zero_step = vec({0});
  expect_refused(make_node("Slice"), {&data, &starts, &ends, nullptr, &zero_step});
}

TEST(ShapeOpsTest, SliceEmptyResult) {
  const tensor data = make<std::int64_t>({5}, {0, 1, 2, 3, 4});
  const tensor starts = vec({3});
  const tensor ends = vec({1});
  const tensor out = run1(make_node("Slice"), {&data, &starts, &ends});
  EXPECT_EQ(out.shape(), (shape_t{0}));
}

TEST(ShapeOpsTest, GatherNegativeIndexOnAxisOne) {
  const tensor indices = make<std::int32_t>({2}, {-1, 0});
  const tensor out = run1(make_node("Gather", {{"axis", std::int64_t{1}}}), {&k_2x3, &indices});
  EXPECT_EQ(out.shape(), (shape_t{2, 2}));
  EXPECT_EQ(values<float>(out), (floats{2, 0, 5, 3}));

  const tensor scalar = make<std::int64_t>({}, {-1});
  const tensor row = run1(make_node("Gather"), {&k_2x3, &scalar});
  EXPECT_EQ(row.shape(), (shape_t{3}));
  EXPECT_EQ(values<float>(row), (floats{3, 4, 5}));

  const tensor out_of_range = vec({2});
  expect_refused(make_node("Gather"), {&k_2x3, &out_of_range});
}

TEST(ShapeOpsTest, ShapeWithStartAndEnd) {
  const tensor data = make<float>({2, 3, 4, 5}, floats(120, 0.0F));
  EXPECT_EQ(values<std::int64_t>(run1(make_node("Shape"), {&data})), (ints{2, 3, 4, 5}));
  const node sliced = make_node("Shape", {{"start", std::int64_t{1}}, {"end", std::int64_t{-1}}});
  EXPECT_EQ(values<std::int64_t>(run1(sliced, {&data})), (ints{3, 4}));
  const node clamped =
      make_node("Shape", {{"start", std::int64_t{-10}}, {"end", std::int64_t{10}}});
  EXPECT_EQ(values<std::int64_t>(run1(clamped, {&data})), (ints{2, 3, 4, 5}));
}

TEST(ShapeOpsTest, SizeIsAnInt64Scalar) {
  const tensor out = run1(make_node("Size"), {&k_2x3});
  EXPECT_EQ(out.rank(), 0U);
  EXPECT_EQ(values<std::int64_t>(out), (ints{6}));
}

TEST(ShapeOpsTest, ConstantOfShapeDefaultAndValue) {
  const tensor shape = vec({2, 2});
  const tensor zeros = run1(make_node("ConstantOfShape"), {&shape});
  EXPECT_EQ(zeros.type(), dtype::float32);
  EXPECT_EQ(values<float>(zeros), (floats{0, 0, 0, 0}));
  const node sevens = make_node("ConstantOfShape", {{"value", make<std::int32_t>({1}, {7})}});
  const tensor out = run1(sevens, {&shape});
  EXPECT_EQ(out.shape(), (shape_t{2, 2}));
  EXPECT_EQ(values<std::int32_t>(out), (std::vector<std::int32_t>{7, 7, 7, 7}));
}

TEST(ShapeOpsTest, ConstantForms) {
  EXPECT_EQ(values<float>(run1(make_node("Constant", {{"value", k_2x3}}), {})),
            values<float>(k_2x3));
  const tensor f = run1(make_node("Constant", {{"value_float", 2.5F}}), {});
  EXPECT_EQ(f.rank(), 0U);
  EXPECT_EQ(values<float>(f), (floats{2.5F}));
  EXPECT_EQ(values<float>(run1(make_node("Constant", {{"value_floats", floats{1, 2}}}), {})),
            (floats{1, 2}));
  const tensor i = run1(make_node("Constant", {{"value_int", std::int64_t{-3}}}), {});
  EXPECT_EQ(i.rank(), 0U);
  EXPECT_EQ(values<std::int64_t>(i), (ints{-3}));
  EXPECT_EQ(values<std::int64_t>(run1(make_node("Constant", {{"value_ints", ints{4, 5}}}), {})),
            (ints{4, 5}));
  expect_refused(make_node("Constant"), {});
}

TEST(ShapeOpsTest, ExpandBroadcastsBothWays) {
  const tensor column = make<float>({3, 1}, {1, 2, 3});
  const tensor shape = vec({2, 1, 2});
  const tensor out = run1(make_node("Expand"), {&column, &shape});
  EXPECT_EQ(out.shape(), (shape_t{2, 3, 2}));
  EXPECT_EQ(values<float>(out), (floats{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));

  const tensor smaller = vec({1});  // the input's larger shape wins
  EXPECT_EQ(run1(make_node("Expand"), {&k_2x3, &smaller}).shape(), (shape_t{2, 3}));
  const tensor clash = vec({2, 2});
  expect_refused(make_node("Expand"), {&k_2x3, &clash});
}

TEST(ShapeOpsTest, RangeIntAndFloat) {
  const tensor start = make<std::int64_t>({}, {10});
  const tensor limit = make<std::int64_t>({}, {1});
  const tensor delta = make<std::int64_t>({}, {-3});
  EXPECT_EQ(values<std::int64_t>(run1(make_node("Range"), {&start, &limit, &delta})),
            (ints{10, 7, 4}));

  const tensor fstart = make<float>({}, {0.0F});
  const tensor flimit = make<float>({}, {1.0F});
  const tensor fdelta = make<float>({}, {0.25F});
  const tensor out = run1(make_node("Range"), {&fstart, &flimit, &fdelta});
  EXPECT_EQ(out.type(), dtype::float32);
  EXPECT_EQ(values<float>(out), (floats{0.0F, 0.25F, 0.5F, 0.75F}));

  const tensor empty_limit = make<std::int64_t>({}, {20});
  EXPECT_EQ(run1(make_node("Range"), {&start, &empty_limit, &delta}).size(), 0);
  const tensor zero = make<std::int64_t>({}, {0});
  expect_refused(make_node("Range"), {&start, &limit, &zero});
  expect_refused(make_node("Range"), {&start, &flimit, &delta});
}

TEST(ShapeOpsTest, TriluUpperAndLowerWithK) {
  const tensor data = make<float>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_EQ(values<float>(run1(make_node("Trilu"), {&data})), (floats{1, 2, 3, 0, 5, 6, 0, 0, 9}));
  const tensor one = make<std::int64_t>({}, {1});
  EXPECT_EQ(values<float>(run1(make_node("Trilu"), {&data, &one})),
            (floats{0, 2, 3, 0, 0, 6, 0, 0, 0}));
  const node lower = make_node("Trilu", {{"upper", std::int64_t{0}}});
  EXPECT_EQ(values<float>(run1(lower, {&data})), (floats{1, 0, 0, 4, 5, 0, 7, 8, 9}));
  const tensor minus_one = make<std::int64_t>({}, {-1});
  EXPECT_EQ(values<float>(run1(lower, {&data, &minus_one})), (floats{0, 0, 0, 4, 0, 0, 7, 8, 0}));

  // Batched: the band applies to each matrix of the last two dimensions.
  const tensor batch = make<std::int32_t>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_EQ(values<std::int32_t>(run1(make_node("Trilu"), {&batch})),
            (std::vector<std::int32_t>{1, 2, 0, 4, 5, 6, 0, 8}));
}

}  // namespace
}  // namespace coolbench::engine::cpu
