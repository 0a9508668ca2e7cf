#include "coolbench/engine/tensor.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "engine/backend.hpp"

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

// Storage at a made-up address: only the arithmetic of views is checked.
class view_storage final : public device_storage {
 public:
  [[nodiscard]] void* address() const override { return reinterpret_cast<void*>(0x10000); }
  [[nodiscard]] bool valid() const noexcept override { return true; }
  [[nodiscard]] std::string location() const override { return "fake:0"; }
};

TEST(tensor, elements_from_views_a_range_of_a_device_tensor) {
  const tensor whole(dtype::float16, {1, 1, 2304}, std::make_shared<view_storage>(), 512);
  const tensor part = whole.elements_from(768, {1, 1, 768});
  EXPECT_EQ(part.shape(), (shape_t{1, 1, 768}));
  EXPECT_EQ(part.storage(), whole.storage());
  EXPECT_EQ(
      static_cast<std::byte*>(part.device_data()) - static_cast<std::byte*>(whole.device_data()),
      768 * 2);
  // A view of a view counts from the view's own first element.
  const tensor inner = part.elements_from(8, {4});
  EXPECT_EQ(
      static_cast<std::byte*>(inner.device_data()) - static_cast<std::byte*>(whole.device_data()),
      (768 + 8) * 2);
  EXPECT_NO_THROW((void)whole.elements_from(2304, {0}));
  EXPECT_THROW((void)whole.elements_from(1537, {1, 768}), invalid_argument);
  EXPECT_THROW((void)whole.elements_from(-1, {1}), invalid_argument);
  EXPECT_THROW((void)tensor(dtype::float32, {4}).elements_from(0, {2}), invalid_argument);
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

TEST(tensor, bfloat16_round_trips_and_rounds_to_nearest_even) {
  EXPECT_EQ(to_string(dtype::bfloat16), "bfloat16");
  EXPECT_EQ(size_of(dtype::bfloat16), 2U);
  EXPECT_EQ(float_to_bfloat16(1.0F), 0x3F80);
  EXPECT_EQ(bfloat16_to_float(0x3F80), 1.0F);
  EXPECT_EQ(bfloat16_to_float(0xC040), -3.0F);
  // Halfway cases go to the even neighbour; above halfway rounds up.
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x3F808000U)), 0x3F80);
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x3F818000U)), 0x3F82);
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x3F808001U)), 0x3F81);
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::nanf("")))));
  // A NaN whose payload sits in the low bits must not round to infinity.
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::bit_cast<float>(0x7F800001U)))));
}

tensor bf16_tensor(shape_t shape, const std::vector<float>& values) {
  tensor t(dtype::bfloat16, std::move(shape));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint16_t bits = float_to_bfloat16(values[i]);
    std::memcpy(t.raw().data() + 2 * i, &bits, 2);
  }
  return t;
}

float bf16_at(const tensor& t, std::size_t i) {
  std::uint16_t bits = 0;
  std::memcpy(&bits, t.raw().data() + 2 * i, 2);
  return bfloat16_to_float(bits);
}

TEST(tensor, the_cpu_backend_computes_bfloat16_in_float32) {
  auto cpu = make_backend("cpu");
  node add;
  add.name = "add";
  add.op_type = "Add";
  add.inputs = {"a", "b"};
  add.outputs = {"c"};
  const tensor a = bf16_tensor({2, 2}, {1.0F, 2.0F, -3.0F, 0.5F});
  const tensor b = bf16_tensor({2}, {0.25F, 4.0F});
  const tensor* inputs[] = {&a, &b};
  std::vector<tensor> outputs(1);
  cpu->run(add, inputs, outputs);
  ASSERT_EQ(outputs[0].type(), dtype::bfloat16);
  EXPECT_EQ(bf16_at(outputs[0], 0), 1.25F);
  EXPECT_EQ(bf16_at(outputs[0], 3), 4.5F);
  node matmul = add;
  matmul.op_type = "MatMul";
  const tensor* mm_inputs[] = {&a, &a};
  cpu->run(matmul, mm_inputs, outputs);
  ASSERT_EQ(outputs[0].type(), dtype::bfloat16);
  EXPECT_EQ(bf16_at(outputs[0], 0), 1.0F * 1.0F + 2.0F * -3.0F);
  node cast = add;
  cast.op_type = "Cast";
  cast.inputs = {"a"};
  cast.attributes["to"] = std::int64_t{16};
  const tensor f(dtype::float32, {1});
  const tensor* cast_inputs[] = {&f};
  cpu->run(cast, cast_inputs, outputs);
  EXPECT_EQ(outputs[0].type(), dtype::bfloat16);
}

TEST(tensor, device_tensors_refuse_host_access_and_share_storage) {
  class fake_storage final : public device_storage {
   public:
    void* address() const override { return m_bytes.get(); }
    bool valid() const noexcept override { return true; }
    std::string location() const override { return "cuda:7"; }

   private:
    std::unique_ptr<std::byte[]> m_bytes = std::make_unique<std::byte[]>(64);
  };
  const tensor t(dtype::float32, {2, 8}, std::make_shared<fake_storage>());
  EXPECT_TRUE(t.on_device());
  EXPECT_EQ(t.bytes(), 64U);
  try {
    (void)t.raw();
    FAIL() << "raw() of a device tensor returned";
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("on cuda:7"), std::string::npos) << e.what();
  }
  const tensor view = t.reshaped({16});
  EXPECT_EQ(view.device_data(), t.device_data());
  EXPECT_THROW((void)tensor(dtype::float32, {2}).device_data(), invalid_argument);
  EXPECT_THROW((void)make_backend("tpu"), invalid_argument);
}

}  // namespace
}  // namespace coolbench::engine
