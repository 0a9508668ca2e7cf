#include "coolbench/engine/tensor.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace coolbench::engine {
namespace {

TEST(tensor, sizes_and_typed_views) {
  tensor t(dtype::float32, {2, 3});
  EXPECT_EQ(t.size(), 6);
  EXPECT_EQ(t.bytes(), 24U);
  EXPECT_EQ(t.rank(), 2U);
  t.data<float>()[5] = 1.5F;
  EXPECT_EQ(t.data<float>()[5], 1.5F);
  EXPECT_THROW((void)t.data<std::int64_t>(), invalid_argument);
  const tensor scalar(dtype::int64, {});
  EXPECT_EQ(scalar.size(), 1);
  EXPECT_EQ(tensor(dtype::boolean, {0, 4}).size(), 0);
}

TEST(tensor, element_counts_refuse_negative_and_overflowing_shapes) {
  EXPECT_EQ(element_count({}), 1);
  EXPECT_EQ(element_count({4, 0, 7}), 0);
  EXPECT_THROW((void)element_count({2, -1}), invalid_argument);
  EXPECT_THROW((void)element_count({std::int64_t{1} << 40, std::int64_t{1} << 40}),
               invalid_argument);
  EXPECT_THROW(tensor(dtype::int64, {std::int64_t{1} << 61}), invalid_argument);
}

TEST(tensor, bytes_must_match_the_shape) {
  EXPECT_THROW(tensor(dtype::float32, {2}, std::vector<std::byte>(7)), invalid_argument);
  EXPECT_NO_THROW(tensor(dtype::float16, {2}, std::vector<std::byte>(4)));
}

TEST(tensor, reshaped_keeps_the_data) {
  tensor t(dtype::int32, {2, 2});
  t.data<std::int32_t>()[3] = 9;
  const tensor r = t.reshaped({4});
  EXPECT_EQ(r.data<std::int32_t>()[3], 9);
  EXPECT_THROW((void)t.reshaped({3}), invalid_argument);
  EXPECT_EQ(to_string(shape_t{1, 2, 3}), "[1, 2, 3]");
}

TEST(tensor, half_precision_round_trips_and_rounds_to_nearest_even) {
  for (const float v : {0.0F, 1.0F, -2.5F, 65504.0F, 6.103515625e-05F, 5.9604644775390625e-08F}) {
    EXPECT_EQ(half_to_float(float_to_half(v)), v) << v;
  }
  EXPECT_EQ(float_to_half(1.0F), 0x3C00);
  EXPECT_EQ(float_to_half(-0.0F), 0x8000);
  EXPECT_EQ(half_to_float(float_to_half(1e6F)), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::nanf("")))));
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties go to the even one (1).
  EXPECT_EQ(float_to_half(1.0F + 0.00048828125F), 0x3C00);
  EXPECT_EQ(float_to_half(1.0F + 3 * 0.00048828125F), 0x3C02);
  EXPECT_EQ(half_to_float(0x0001), 5.9604644775390625e-08F);  // smallest subnormal
}

}  // namespace
}  // namespace coolbench::engine
