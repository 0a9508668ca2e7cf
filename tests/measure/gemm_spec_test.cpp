// gemm:DTYPE:M:N:K[:COUNT][,...][@ROUNDS]: the forms accepted, and a message for each kind of
// mistake.
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
  EXPECT_NE(message.find("gemm:DTYPE:M:N:K[:COUNT][,M:N:K[:COUNT]...][@ROUNDS]"), std::string::npos)
      << message;
  EXPECT_NE(message.find(std::string(text)), std::string::npos) << message;
}

TEST(gemm_spec, parses_every_dtype_with_and_without_count) {
  const auto a = parse_gemm_chain("gemm:fp16:128:2304:768:4");
  EXPECT_EQ(a.dtype, gemm_dtype::fp16);
  ASSERT_EQ(a.shapes.size(), 1U);
  EXPECT_EQ(a.shapes[0].m, 128);
  EXPECT_EQ(a.shapes[0].n, 2304);
  EXPECT_EQ(a.shapes[0].k, 768);
  EXPECT_EQ(a.shapes[0].count, 4);
  EXPECT_EQ(a.rounds, 1);
  const auto b = parse_gemm_chain("gemm:bf16:8192:8192:8192");
  EXPECT_EQ(b.dtype, gemm_dtype::bf16);
  EXPECT_EQ(b.shapes.at(0).count, 1);
  const auto c = parse_gemm_chain("gemm:fp32:1:1:1:1000");
  EXPECT_EQ(c.dtype, gemm_dtype::fp32);
  EXPECT_EQ(c.shapes.at(0).count, 1000);
  EXPECT_EQ(parse_gemm_chain("gemm:fp16:2147483647:1:1").shapes.at(0).m, gemm_max_dimension);
}

TEST(gemm_spec, parses_several_shapes_and_rounds) {
  const auto s = parse_gemm_chain("gemm:bf16:1:2:3,4:5:6:7@9");
  ASSERT_EQ(s.shapes.size(), 2U);
  EXPECT_EQ(s.shapes[0].m, 1);
  EXPECT_EQ(s.shapes[0].k, 3);
  EXPECT_EQ(s.shapes[0].count, 1);
  EXPECT_EQ(s.shapes[1].m, 4);
  EXPECT_EQ(s.shapes[1].n, 5);
  EXPECT_EQ(s.shapes[1].k, 6);
  EXPECT_EQ(s.shapes[1].count, 7);
  EXPECT_EQ(s.rounds, 9);
  EXPECT_EQ(gemm_count(s), 72);
  EXPECT_DOUBLE_EQ(gemm_flops(s), 9 * (2.0 * 1 * 2 * 3 + 7 * 2.0 * 4 * 5 * 6));
  EXPECT_EQ(parse_gemm_chain("gemm:fp16:8:8:8@2").rounds, 2);
}

TEST(gemm_spec, gpt2_small_is_its_48_layer_gemms_at_sequence_128) {
  const auto s = parse_gemm_chain("gemm:fp16:gpt2-small");
  EXPECT_EQ(to_string(s),
            "gemm:fp16:128:2304:768:1,128:768:768:1,128:3072:768:1,128:768:3072:1@12");
  EXPECT_EQ(gemm_count(s), 48);
  // Per layer and token: 2·768·(2304 + 768 + 3072 + 3072) = 14.16 MFLOP.
  EXPECT_DOUBLE_EQ(gemm_flops(s), 12 * 128 * 2.0 * 768 * (2304 + 768 + 3072 + 3072));
  EXPECT_EQ(parse_gemm_chain("gemm:bf16:gpt2-small").dtype, gemm_dtype::bf16);
}

TEST(gemm_spec, to_string_is_canonical_and_round_trips) {
  EXPECT_EQ(to_string(parse_gemm_chain("gemm:bf16:8192:8192:8192")), "gemm:bf16:8192:8192:8192:1");
  for (const char* text :
       {"gemm:fp16:128:2304:768:4", "gemm:fp32:3:5:7:11", "gemm:bf16:1:2:3:4,5:6:7:8@9"}) {
    EXPECT_EQ(to_string(parse_gemm_chain(text)), text);
  }
  EXPECT_EQ(to_string(gemm_dtype::fp16), "fp16");
  EXPECT_EQ(to_string(gemm_dtype::bf16), "bf16");
  EXPECT_EQ(to_string(gemm_dtype::fp32), "fp32");
}

TEST(gemm_spec, names_the_part_that_is_wrong) {
  expect_error("gemx:fp16:1:1:1", "must start with 'gemm:'");
  expect_error("", "must start with 'gemm:'");
  expect_error("gemm", "must start with 'gemm:'");
  expect_error("gemm:fp16", "no shape after the DTYPE");
  expect_error("gemm:", "DTYPE '' is not");
  expect_error("gemm:fp16:1:1", "shape 1 '1:1' has 2 parts, not 3 (M:N:K) or 4");
  expect_error("gemm:fp16:1:1:1:1:1", "5 parts");
  expect_error("gemm:fp16:1:1:1,2:2", "shape 2 '2:2' has 2 parts");
  expect_error("gemm:fp16:1:1:1,", "shape 2 '' has 1 parts");
  expect_error("gemm:fp16:1:1:1,x:1:1", "M of shape 2 'x' is not a whole number");
  expect_error("gemm:fp16:1:1:1@", "ROUNDS '' is not a whole number");
  expect_error("gemm:fp16:1:1:1@0", "ROUNDS is 0, not in 1..1000");
  expect_error("gemm:fp16:1:1:1:1000,1:1:1:1000@51", "runs 102000 GEMMs, more than 100000");
  expect_error("gemm:fp16:gpt2-small@2", "gpt2-small stands alone");
  expect_error("gemm:fp16:1:1:1,gpt2-small", "gpt2-small stands alone");
  expect_error("gemm:fp16:gpt3", "'gpt3' is neither a shape M:N:K nor gpt2-small");
  expect_error("gemm:fp16:12", "shape 1 '12' has 1 parts");
  std::string many = "gemm:fp16:1:1:1";
  for (int i = 0; i < 64; ++i) many += ",1:1:1";
  expect_error(many, "65 shapes, more than 64");
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
  EXPECT_NO_THROW(validate(single_gemm_chain(gemm_dtype::fp16, 1, 2, 3)));
  EXPECT_THROW(validate(gemm_chain_spec{}), invalid_argument);  // no shape
  EXPECT_THROW(validate(single_gemm_chain(gemm_dtype::fp16, 0, 1, 1)), invalid_argument);
  EXPECT_THROW(validate(single_gemm_chain(gemm_dtype::fp16, 1, 1, 1, 0)), invalid_argument);
  auto rounds = single_gemm_chain(gemm_dtype::fp16, 1, 1, 1);
  rounds.rounds = 0;
  EXPECT_THROW(validate(rounds), invalid_argument);
  EXPECT_THROW(validate(single_gemm_chain(static_cast<gemm_dtype>(7), 1, 1, 1)), invalid_argument);
}

}  // namespace
}  // namespace coolbench::measure
