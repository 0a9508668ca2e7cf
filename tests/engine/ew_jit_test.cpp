// The generated elementwise kernels (ew_jit.hpp) without a GPU: their source
// for programs of every op, dtype and layout, compiled by NVRTC for sm_90
// (a compiler: it needs no GPU), and the programs the generator refuses.
// Whether they compute what the interpreter does is cuda_fusion_test's
// (label gpu).
#include "engine/backends/cuda/ew_jit.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "coolbench/core/error.hpp"
#include "coolbench/engine/session.hpp"
#include "engine/backends/cuda/fused_kernels.hpp"
#include "engine/backends/cuda/launch_shapes.hpp"
#include "engine/fusion/fusion.hpp"
#include "engine/fusion_cases.hpp"

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

TEST(ew_jit, vectors_of_every_dtype_compile) {
  // y = where(mask, x, scalar): x a vector input, the mask too, the scalar read once.
  ew_program program;
  program.code = {op(ew_op::load, 0, 0), op(ew_op::load, 1, 1), op(ew_op::load, 2, 2),
                  op(ew_op::where, 3, 1, 0, 2)};
  for (const dtype type :
       {dtype::float32, dtype::float16, dtype::bfloat16, dtype::int64, dtype::int32}) {
    for (const dtype out : {dtype::float32, dtype::float16, dtype::boolean}) {
      ew_jit_signature signature{{type, dtype::boolean, type}, out, 1, true, true};
      signature.scalar = 1U << 2;
      const std::size_t widest = std::max(size_of(type), size_of(out));
      for (int vector = 2; vector <= static_cast<int>(16 / widest); vector *= 2) {
        signature.vector = vector;
        expect_compiles(program, signature,
                        std::string(to_string(type)) + " vector " + std::to_string(vector));
      }
    }
  }
  ew_jit_signature gelu{{dtype::float16}, dtype::float16, 1, true, true, 8, 0};
  ew_program program_gelu;
  program_gelu.code = {op(ew_op::load, 0), op(ew_op::gelu_erf, 1, 0, 0, 0, ew_round::half)};
  const std::string source = ew_jit_source(program_gelu, gelu);
  // Eight halves in one 16-byte load and one store.
  EXPECT_NE(source.find("*reinterpret_cast<uint4*>(in0) = static_cast<const uint4*>(p.data[0])[i]"),
            std::string::npos)
      << source;
  EXPECT_NE(source.find("static_cast<uint4*>(p.out)[i] = *reinterpret_cast<const uint4*>(out)"),
            std::string::npos)
      << source;
  EXPECT_NE(source.find("(p.count) / 8;"), std::string::npos) << source;
  EXPECT_THROW(
      (void)ew_jit_source(program_gelu, {{dtype::float16}, dtype::float16, 1, true, true, 3, 0}),
      invalid_argument);
}

TEST(ew_jit, vector_width_follows_count_alignment_and_the_widest_element) {
  alignas(64) static unsigned char memory[256];
  const void* aligned = memory;
  const void* off2 = memory + 2;
  const void* off8 = memory + 8;
  ew_jit_signature half{{dtype::float16}, dtype::float16, 1, true, true};
  const void* data[] = {aligned};
  EXPECT_EQ(ew_jit_vector(half, data, aligned, 4096), 8);
  EXPECT_EQ(ew_jit_vector(half, data, aligned, 4100), 4);  // 4100 = 4 x 1025
  EXPECT_EQ(ew_jit_vector(half, data, aligned, 4099), 1);
  EXPECT_EQ(ew_jit_vector(half, data, off8, 4096), 4);  // 8 bytes: four halves
  EXPECT_EQ(ew_jit_vector(half, data, off2, 4096), 1);
  // float32 output: 16 bytes are four; an int64 input: two.
  ew_jit_signature mixed{{dtype::float16, dtype::int64}, dtype::float32, 1, true, true};
  const void* two[] = {aligned, aligned};
  EXPECT_EQ(ew_jit_vector(mixed, two, aligned, 4096), 2);
  // A scalar input's alignment and width do not count.
  mixed.scalar = 1U << 1;
  const void* scalar_off[] = {aligned, off2};
  EXPECT_EQ(ew_jit_vector(mixed, scalar_off, aligned, 4096), 4);
  // Not dense: one element a thread.
  ew_jit_signature strided{{dtype::float16}, dtype::float16, 2, false, true};
  EXPECT_EQ(ew_jit_vector(strided, data, aligned, 4096), 1);
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

// A fusion target that takes every fused op (the CUDA backend needs a GPU to
// be made): the passes rewrite the exports as they would for it, or more.
class fusing_target final : public backend {
 public:
  fusing_target() : m_cpu(make_backend("cpu")) {}
  std::string_view name() const noexcept override { return "fusing"; }
  std::string describe() const override { return "fusing"; }
  bool supports(const node& n) const override {
    return n.domain == k_fused_domain || m_cpu->supports(n);
  }
  void run(const node& n, std::span<const tensor* const>, std::span<tensor>) override {
    throw invalid_argument("fusing_target runs nothing: " + n.op_type);
  }

 private:
  std::unique_ptr<backend> m_cpu;
};

// Each input's element strides over the output's dims (0 where broadcast), as
// fused_elementwise (fused_ops.cpp) gives them to the launch.
ew_jit_signature signature_of(const node& n, const graph& g,
                              const std::map<std::string, shape_info>& shapes) {
  const shape_t out = n.get<std::vector<std::int64_t>>("shape");
  std::int64_t strides[k_ew_max_inputs][k_max_rank] = {};
  ew_jit_signature signature;
  signature.out = static_cast<dtype>(n.get<std::int64_t>("output_type"));
  for (std::size_t k = 0; k < n.inputs.size(); ++k) {
    // A value of the graph before fusion, or an initializer a pass made.
    const auto known = shapes.find(n.inputs[k]);
    const auto made = g.initializers.find(n.inputs[k]);
    if (known == shapes.end() && made == g.initializers.end()) {
      ADD_FAILURE() << n.name << ": no shape for input " << n.inputs[k];
      return signature;
    }
    signature.inputs.push_back(known != shapes.end() ? known->second.type : made->second.type());
    const shape_t in = known != shapes.end() ? known->second.static_shape() : made->second.shape();
    std::int64_t step = 1;
    for (std::size_t d = in.size(); d-- > 0;) {
      strides[k][out.size() - in.size() + d] = in[d] == 1 ? 0 : step;
      step *= in[d];
    }
  }
  const ew_layout l = plan_elementwise(out.data(), static_cast<int>(out.size()), strides,
                                       static_cast<int>(n.inputs.size()));
  signature.rank = l.rank;
  signature.dense = l.dense;
  signature.narrow = l.narrow;
  return signature;
}

// The programs the exports in tests/data/models fuse into (FusedElementwise
// nodes, and the bias and activation a FusedGemm runs after its product when
// cuBLASLt's epilogue cannot), each compiled as the launch would ask for it.
TEST(ew_jit, the_programs_of_the_exported_models_compile) {
  std::set<std::string> sources;
  for (const auto& c : fusion_cases::model_cases()) {
    SCOPED_TRACE(c.folder);
    graph g = load_onnx(fusion_cases::model_path(c));
    fold_constants(g, c.bound);
    remove_dead_nodes(g);
    const auto shapes = infer_shapes(g, c.bound);
    fusing_target target;
    (void)fuse_for_backend(g, fusion_context{shapes, target});
    for (const node& n : g.nodes) {
      if (n.domain != k_fused_domain) continue;
      if (n.op_type == "FusedElementwise") {
        ew_jit_signature signature = signature_of(n, g, shapes);
        sources.insert(ew_jit_source(ew_from_attributes(n), signature));
        if (signature.dense) {  // and as a vector of the widest the elements allow
          signature.vector = 4;
          sources.insert(ew_jit_source(ew_from_attributes(n), signature));
        }
      } else if (n.op_type == "FusedGemm") {
        const auto activation = n.get<std::string>("activation", "none");
        const auto out = shapes.find(n.outputs.at(0));
        const dtype type = out != shapes.end() ? out->second.type : dtype::float32;
        const bool bias = n.inputs.size() > 2 && !n.inputs[2].empty();
        for (const dtype t : {type, dtype::float16, dtype::bfloat16}) {
          const ew_program program = bias_activation_program(t, bias, activation);
          sources.insert(ew_jit_source(program, {{t, t}, t, 2, false, true}));
          if (!bias) sources.insert(ew_jit_source(program, {{t}, t, 1, true, true, 8, 0}));
        }
      }
    }
  }
  EXPECT_GE(sources.size(), 5U);
  for (const std::string& source : sources) {
    const ew_compiled compiled = ew_jit_compile(source, 90);
    EXPECT_FALSE(compiled.cubin.empty()) << compiled.log << "\n" << source;
  }
  std::printf("%zu distinct programs compiled\n", sources.size());
}

TEST(ew_jit, on_unless_switched_off) {
  const char* was = std::getenv("COOLBENCH_EW_JIT");
  const std::string before = was == nullptr ? "" : was;
  ASSERT_EQ(unsetenv("COOLBENCH_EW_JIT"), 0);
  EXPECT_TRUE(ew_jit_enabled());
  ASSERT_EQ(setenv("COOLBENCH_EW_JIT", "0", 1), 0);
  EXPECT_FALSE(ew_jit_enabled());
  ASSERT_EQ(setenv("COOLBENCH_EW_JIT", "1", 1), 0);
  EXPECT_TRUE(ew_jit_enabled());
  if (was == nullptr) {
    unsetenv("COOLBENCH_EW_JIT");
  } else {
    setenv("COOLBENCH_EW_JIT", before.c_str(), 1);
  }
}

}  // namespace
}  // namespace coolbench::engine::cuda
