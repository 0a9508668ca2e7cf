// gemm:DTYPE:M:N:K[:COUNT]: the forms accepted, and a message for each kind of mistake.
#include <gtest/gtest.h>

#include <string>

#include "coolbench/measure/workload.hpp"

namespace coolbench::measure {
namespace {

std::string error_of(std::string_view text) {
  try {
    (void)parse_gemm_chain(text);
  } catch (const invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "'" << text << "' was accepted";
  return {};
}

void expect_error(std::string_view text, std::string_view needle) {
  const std::string message = error_of(text);
  EXPECT_NE(message.find(needle), std::string::npos) << text << ": " << message;
  EXPECT_NE(message.find("gemm:DTYPE:M:N:K[:COUNT]"), std::string::npos) << message;
  EXPECT_NE(message.find(std::string(text)), std::string::npos) << message;
}

TEST(gemm_spec, parses_every_dtype_with_and_without_count) {
  const auto a = parse_gemm_chain("gemm:fp16:128:2304:768:4");
  EXPECT_EQ(a.dtype, gemm_dtype::fp16);
  EXPECT_EQ(a.m, 128);
  EXPECT_EQ(a.n, 2304);
  EXPECT_EQ(a.k, 768);
  EXPECT_EQ(a.count, 4);
  const auto b = parse_gemm_chain("gemm:bf16:8192:8192:8192");
  EXPECT_EQ(b.dtype, gemm_dtype::bf16);
  EXPECT_EQ(b.count, 1);
  const auto c = parse_gemm_chain("gemm:fp32:1:1:1:1000");
  EXPECT_EQ(c.dtype, gemm_dtype::fp32);
  EXPECT_EQ(c.count, 1000);
  EXPECT_EQ(parse_gemm_chain("gemm:fp16:2147483647:1:1").m, gemm_max_dimension);
}

TEST(gemm_spec, to_string_is_canonical_and_round_trips) {
  EXPECT_EQ(to_string(parse_gemm_chain("gemm:bf16:8192:8192:8192")), "gemm:bf16:8192:8192:8192:1");
  for (const char* text : {"gemm:fp16:128:2304:768:4", "gemm:fp32:3:5:7:11"}) {
    EXPECT_EQ(to_string(parse_gemm_chain(text)), text);
  }
  EXPECT_EQ(to_string(gemm_dtype::fp16), "fp16");
  EXPECT_EQ(to_string(gemm_dtype::bf16), "bf16");
  EXPECT_EQ(to_string(gemm_dtype::fp32), "fp32");
}

TEST(gemm_spec, names_the_part_that_is_wrong) {
  expect_error("gemx:fp16:1:1:1", "must start with 'gemm:'");
  expect_error("", "must start with 'gemm:'");
  expect_error("gemm", "0 parts");
  expect_error("gemm:fp16:1:1", "3 parts");
  expect_error("gemm:fp16:1:1:1:1:1", "6 parts");
  expect_error("gemm:fp8:1:1:1", "DTYPE 'fp8' is not fp16, bf16 or fp32");
  expect_error("gemm:FP16:1:1:1", "DTYPE 'FP16'");
  expect_error("gemm:fp16:x:1:1", "M 'x' is not a whole number");
  expect_error("gemm:fp16:1:1.5:1", "N '1.5' is not a whole number");
  expect_error("gemm:fp16:1:1::", "K '' is not a whole number");
  expect_error("gemm:fp16:1:+1:1", "N '+1' is not a whole number");
  expect_error("gemm:fp16:0:1:1", "M is 0, not in 1..2147483647");
  expect_error("gemm:fp16:1:-4:1", "N is -4, not in 1..2147483647");
  expect_error("gemm:fp16:1:1:2147483648", "K is 2147483648, not in 1..2147483647");
  expect_error("gemm:fp16:1:1:99999999999999999999999", "K is 99999999999999999999999");
  expect_error("gemm:fp16:1:1:1:0", "COUNT is 0, not in 1..1000");
  expect_error("gemm:fp16:1:1:1:1001", "COUNT is 1001, not in 1..1000");
}

TEST(gemm_spec, validate_checks_a_spec_built_by_hand) {
  EXPECT_NO_THROW(validate(gemm_chain_spec{.dtype = gemm_dtype::fp16, .m = 1, .n = 2, .k = 3}));
  EXPECT_THROW(validate(gemm_chain_spec{}), invalid_argument);  // M = 0
  EXPECT_THROW(validate(gemm_chain_spec{.m = 1, .n = 1, .k = 1, .count = 0}), invalid_argument);
  EXPECT_THROW(
      validate(gemm_chain_spec{.dtype = static_cast<gemm_dtype>(7), .m = 1, .n = 1, .k = 1}),
      invalid_argument);
}

}  // namespace
}  // namespace coolbench::measure
