// The generated elementwise kernels (ew_jit.hpp) without a GPU: their source
// for programs of every op, dtype and layout, compiled by NVRTC for sm_90
// (a compiler: it needs no GPU), and the programs the generator refuses.
// Whether they compute what the interpreter does is cuda_fusion_test's
// (label gpu).
#include "engine/backends/cuda/ew_jit.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "coolbench/core/error.hpp"

namespace coolbench::engine::cuda {
namespace {

ew_instruction op(ew_op o, int dst, int a = 0, int b = 0, int c = 0,
                  ew_round round = ew_round::none) {
  return {o,
          static_cast<std::uint8_t>(dst),
          static_cast<std::uint8_t>(a),
          static_cast<std::uint8_t>(b),
          static_cast<std::uint8_t>(c),
          round};
}

void expect_compiles(const ew_program& program, const ew_jit_signature& signature,
                     const std::string& what) {
  const std::string source = ew_jit_source(program, signature);
  const ew_compiled compiled = ew_jit_compile(source, 90);
  EXPECT_FALSE(compiled.cubin.empty()) << what << ": " << compiled.log << "\n" << source;
}

TEST(ew_jit, gelu_is_straight_line_code_of_the_program) {
  ew_program gelu;
  gelu.code = {op(ew_op::load, 0), op(ew_op::gelu_erf, 1, 0, 0, 0, ew_round::half)};
  const std::string source = ew_jit_source(gelu, {{dtype::float16}, dtype::float16, 1, true, true});
  // The op fixed in the source, no interpreter loop, 32-bit indices, the fp16 store.
  EXPECT_NE(source.find("ew_apply(static_cast<ew_op>(" +
                        std::to_string(static_cast<int>(ew_op::gelu_erf)) + "), v0"),
            std::string::npos)
      << source;
  EXPECT_EQ(source.find("p.code"), std::string::npos);
  EXPECT_NE(source.find("for (unsigned int i"), std::string::npos);
  EXPECT_NE(source.find("= cb_to_f16(v1)"), std::string::npos) << source;
  expect_compiles(gelu, {{dtype::float16}, dtype::float16, 1, true, true}, "GELU");
}

TEST(ew_jit, every_op_compiles) {
  for (int o = static_cast<int>(ew_op::add); o < static_cast<int>(ew_op::count_); ++o) {
    ew_program program;
    program.constants = {0.5F};
    program.code = {op(ew_op::load, 0, 0), op(ew_op::load, 1, 1), op(ew_op::constant, 2, 0),
                    op(static_cast<ew_op>(o), 3, 0, 1, 2, ew_round::none)};
    expect_compiles(program, {{dtype::float32, dtype::float32}, dtype::float32, 1, true, true},
                    "op " + std::to_string(o));
  }
}

TEST(ew_jit, every_dtype_layout_and_rounding_compiles) {
  const std::vector<dtype> types = {dtype::float32, dtype::float16, dtype::bfloat16,
                                    dtype::int64,   dtype::int32,   dtype::boolean};
  const std::vector<ew_round> rounds = {ew_round::none, ew_round::half, ew_round::bfloat16,
                                        ew_round::boolean, ew_round::integer};
  const auto program_of = [](ew_round round) {
    ew_program program;
    program.code = {op(ew_op::load, 0, 0), op(ew_op::load, 1, 1),
                    op(ew_op::where, 2, 1, 0, 0, round)};
    return program;
  };
  // Every input and output dtype, dense and with 3 dims of 64-bit index math; every rounding.
  for (const dtype in : types) {
    for (const dtype out : {dtype::float32, dtype::float16, dtype::bfloat16, dtype::boolean}) {
      expect_compiles(program_of(ew_round::none), {{in, dtype::boolean}, out, 1, true, true},
                      "dense");
      expect_compiles(program_of(ew_round::none), {{in, dtype::boolean}, out, 3, false, false},
                      "strided");
    }
  }
  for (const ew_round round : rounds) {
    expect_compiles(program_of(round),
                    {{dtype::float16, dtype::boolean}, dtype::float16, 2, false, true}, "rounding");
  }
}

TEST(ew_jit, constants_keep_their_bits) {
  ew_program program;
  program.constants = {0.1F, -0.0F};
  program.code = {op(ew_op::constant, 0, 0), op(ew_op::constant, 1, 1), op(ew_op::add, 2, 0, 1)};
  const std::string source = ew_jit_source(program, {{}, dtype::float32, 1, true, true});
  EXPECT_NE(source.find("__uint_as_float(0x3dcccccdu)"), std::string::npos) << source;
  EXPECT_NE(source.find("__uint_as_float(0x80000000u)"), std::string::npos) << source;
  expect_compiles(program, {{}, dtype::float32, 0, true, true}, "constants alone");
}

TEST(ew_jit, register_reuse_reads_the_latest_value) {
  // r0 = x; r0 = r0 * r0; r0 = r0 + x (x loaded again into r1)
  ew_program program;
  program.code = {op(ew_op::load, 0, 0), op(ew_op::mul, 0, 0, 0), op(ew_op::load, 1, 0),
                  op(ew_op::add, 0, 0, 1)};
  const std::string source =
      ew_jit_source(program, {{dtype::float32}, dtype::float32, 1, true, true});
  EXPECT_NE(source.find("v1 = ew_apply(static_cast<ew_op>(" +
                        std::to_string(static_cast<int>(ew_op::mul)) + "), v0, v0"),
            std::string::npos)
      << source;
  EXPECT_NE(source.find(", v1, v2, 0.0f)"), std::string::npos) << source;
  EXPECT_NE(source.find("static_cast<float*>(p.out)[i] = v3;"), std::string::npos) << source;
}

TEST(ew_jit, malformed_programs_are_refused) {
  ew_program unwritten;
  unwritten.code = {op(ew_op::add, 0, 3, 4)};
  EXPECT_THROW((void)ew_jit_source(unwritten, {{dtype::float32}, dtype::float32, 1, true, true}),
               invalid_argument);
  ew_program missing_input;
  missing_input.code = {op(ew_op::load, 0, 2)};
  EXPECT_THROW(
      (void)ew_jit_source(missing_input, {{dtype::float32}, dtype::float32, 1, true, true}),
      invalid_argument);
  ew_program missing_constant;
  missing_constant.code = {op(ew_op::constant, 0, 0)};
  EXPECT_THROW((void)ew_jit_source(missing_constant, {{}, dtype::float32, 1, true, true}),
               invalid_argument);
  EXPECT_THROW((void)ew_jit_source(ew_program{}, {{}, dtype::float32, 1, true, true}),
               invalid_argument);
}

TEST(ew_jit, the_ops_header_is_embedded) {
  const std::string text = ew_ops_header_text();
  EXPECT_NE(text.find("ew_apply"), std::string::npos);
  EXPECT_NE(text.find("__CUDACC_RTC__"), std::string::npos);
}

TEST(ew_jit, off_unless_asked) {
  if (std::getenv("COOLBENCH_EW_JIT") == nullptr) {
    EXPECT_FALSE(ew_jit_enabled());
  }
}

}  // namespace
}  // namespace coolbench::engine::cuda
