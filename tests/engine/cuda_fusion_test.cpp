// The fused CUDA ops against the CPU reference: each pattern graph of
// fusion_cases.hpp is fused for the CUDA backend and run there (every
// allocation poisoned with 0xFF bytes, so an element a kernel leaves
// unwritten fails), and the same graph unfused runs on the CPU; float32,
// float16 and bfloat16, over edge shapes (one row, widths that are no
// multiple of the vector width, rows wider than the LayerNorm's shared-memory
// cache, large products). Then every exported model of tests/data/models,
// fused, against the CPU. Tolerances are the conformance runner's reference
// mode, but 16-bit LayerNorms are held to the float32 graph (see
// expect_layer_norm_close). Needs a GPU (ctest label gpu); skips with the
// reason without one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "coolbench/core/error.hpp"
#include "coolbench/device.hpp"
#include "coolbench/engine/session.hpp"
#include "engine/backends/cuda/backend.hpp"
#include "engine/backends/cuda/ew_jit.hpp"
#include "engine/backends/cuda/fused_kernels.hpp"
#include "engine/backends/registry.hpp"
#include "engine/fusion_cases.hpp"
#include "engine/gpu_present.hpp"

namespace coolbench::engine {
namespace {

using namespace fusion_cases;  // NOLINT(google-build-using-namespace): the cases' vocabulary

using testing_gpu::gpu_count;

std::unique_ptr<backend> poisoned_cuda() {
  auto b = make_cuda_backend(0);
  dynamic_cast<cuda::cuda_backend&>(*b).poison_allocations(true);
  return b;
}

// The conformance runner's reference tolerances: |got - want| <= atol +
// rtol |want|, against the unfused graph in the same dtype or, for the
// 16-bit dtypes, in float32 (`exact`, may be empty): a fused kernel rounds
// once where the unfused nodes round at every step, so it may be nearer
// the exact value than the unfused 16-bit graph is.
void expect_close(const std::map<std::string, tensor>& got,
                  const std::map<std::string, tensor>& want,
                  const std::map<std::string, tensor>& exact, const std::string& label) {
  for (const auto& [name, w] : want) {
    const tensor& g = got.at(name);
    ASSERT_EQ(g.shape(), w.shape()) << label << " " << name;
    ASSERT_EQ(g.type(), w.type()) << label << " " << name;
    const bool wide = w.type() == dtype::float32;
    const double rtol = wide ? 1e-4 : 1e-2, atol = wide ? 1e-5 : 1e-2;
    const auto near = [&](double a, double b) {
      return std::abs(a - b) <= atol + rtol * std::abs(b);
    };
    std::size_t bad = 0;
    double worst = 0;
    for (std::size_t i = 0; i < static_cast<std::size_t>(w.size()); ++i) {
      const double a = get(g, i), b = get(w, i);
      const bool ok = near(a, b) || (exact.contains(name) && near(a, get(exact.at(name), i)));
      if (!ok && bad++ == 0) {
        ADD_FAILURE() << label << " " << name << "[" << i << "]: cuda " << a << ", cpu " << b;
      }
      worst = std::max(worst, std::abs(a - b));
    }
    EXPECT_EQ(bad, 0U) << label << " " << name << ": elements out of tolerance (max |diff| "
                       << worst << ")";
  }
}

tensor widened(const tensor& t) {
  if (!is_float(t.type())) return t;
  tensor w(dtype::float32, t.shape());
  for (std::size_t i = 0; i < static_cast<std::size_t>(t.size()); ++i) set(w, i, get(t, i));
  return w;
}

// The graph in float32: 16-bit initializers, declarations and Casts widened.
graph widened(const graph& g) {
  graph w = g;
  for (auto& [name, t] : w.initializers) t = widened(t);
  for (auto* values : {&w.inputs, &w.outputs}) {
    for (auto& v : *values) v.type = is_float(v.type) ? dtype::float32 : v.type;
  }
  for (auto& n : w.nodes) {
    const auto to = n.get<std::int64_t>("to", 0);
    if (n.op_type == "Cast" && (to == 10 || to == 16)) n.attributes["to"] = std::int64_t{1};
  }
  return w;
}

std::map<std::string, tensor> inputs_for(const graph& g, unsigned seed) {
  std::map<std::string, tensor> inputs;
  for (const auto& v : g.inputs) {
    shape_t shape;
    for (const auto& d : v.shape) shape.push_back(d.value);
    inputs[v.name] = random_tensor(v.type, shape, seed++);
  }
  return inputs;
}

// Fuses `g` for CUDA (expecting `pass` to rewrite it), runs it there and
// the unfused graph on the CPU.
void check(const graph& g, const std::string& pass, const std::string& label) {
  SCOPED_TRACE(label);
  const auto cuda = poisoned_cuda();
  graph fused = g;
  const auto counts = specialize_and_fuse(fused, *cuda);
  ASSERT_TRUE(counts.contains(pass)) << label << ": the " << pass << " pass fused nothing";
  const auto inputs = inputs_for(g, 7);
  const auto cpu = make_backend("cpu");
  std::map<std::string, tensor> exact;
  if (g.inputs[0].type != dtype::float32) {
    std::map<std::string, tensor> wide_inputs;
    for (const auto& [name, t] : inputs) wide_inputs[name] = widened(t);
    exact = run_graph(widened(g), *cpu, wide_inputs);
  }
  expect_close(run_graph(fused, *cuda, inputs), run_graph(g, *cpu, inputs), exact, label);
}

const std::vector<dtype> k_floats = {dtype::float32, dtype::float16, dtype::bfloat16};

// One step of `type` (float16 or bfloat16) at |v|: the spacing of the
// values with v's exponent (float16's subnormal step below its normals).
double step_of(dtype type, double v) {
  const int mantissa_bits = type == dtype::float16 ? 10 : 7;
  int exponent = 0;
  std::frexp(std::max(std::abs(v), type == dtype::float16 ? 0x1p-14 : 0x1p-126), &exponent);
  return std::ldexp(1.0, exponent - 1 - mantissa_bits);
}

// A 16-bit fused LayerNorm against the float32 graph `exact` (its residual
// sum rounded to the dtype, as the Add node and so the kernel round it):
// within 2 steps of the dtype, plus 1e-4 for float32 statistics summed in
// another order (y = d/s * scale + bias cancels near 0). Against the unfused
// 16-bit graph `want` only within 4 steps at the tensor's largest |value|:
// that graph rounds at each of its nine nodes, the normalized row (|d/s| up
// to ~5) and d/s * scale (as large as the output) included, so it is itself
// off by that much (1.5 steps, 0.094, measured in bfloat16 at [1024, 1024]).
void expect_layer_norm_close(const std::map<std::string, tensor>& got,
                             const std::map<std::string, tensor>& want,
                             const std::map<std::string, tensor>& exact, const std::string& label) {
  for (const auto& [name, w] : want) {
    const tensor &g = got.at(name), &e = exact.at(name);
    ASSERT_EQ(g.shape(), w.shape()) << label << " " << name;
    ASSERT_EQ(g.type(), w.type()) << label << " " << name;
    double largest = 0;
    for (std::size_t i = 0; i < static_cast<std::size_t>(w.size()); ++i) {
      largest = std::max(largest, static_cast<double>(std::abs(get(e, i))));
    }
    const double loose = 4 * step_of(w.type(), largest);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < static_cast<std::size_t>(w.size()); ++i) {
      const double a = get(g, i), b = get(w, i), x = get(e, i);
      const bool ok =
          std::abs(a - x) <= 2 * step_of(w.type(), x) + 1e-4 && std::abs(a - b) <= loose;
      if (!ok && bad++ == 0) {
        ADD_FAILURE() << label << " " << name << "[" << i << "]: cuda " << a << ", float32 graph "
                      << x << ", unfused " << to_string(w.type()) << " graph " << b;
      }
    }
    EXPECT_EQ(bad, 0U) << label << " " << name << ": elements out of tolerance";
  }
}

// Fuses a LayerNorm graph for CUDA and runs it there, the unfused graph on
// the CPU and, for 16-bit dtypes, the float32 graph from the same inputs
// with the residual sum (input "b") rounded as the 16-bit Add stores it.
void check_layer_norm(const graph& g, const std::string& label) {
  const dtype type = g.inputs[0].type;
  if (type == dtype::float32) {
    check(g, "layer_norm", label);
    return;
  }
  SCOPED_TRACE(label);
  const auto cuda = poisoned_cuda();
  graph fused = g;
  ASSERT_TRUE(specialize_and_fuse(fused, *cuda).contains("layer_norm")) << label;
  const auto inputs = inputs_for(g, 7);
  std::map<std::string, tensor> wide_inputs;
  for (const auto& [name, t] : inputs) wide_inputs[name] = widened(t);
  if (inputs.contains("b")) {
    tensor sum(type, inputs.at("a").shape());
    for (std::size_t i = 0; i < static_cast<std::size_t>(sum.size()); ++i) {
      set(sum, i, get(inputs.at("a"), i) + get(inputs.at("b"), i));
    }
    wide_inputs["a"] = widened(sum);
    wide_inputs["b"] = tensor(dtype::float32, sum.shape());  // zeros
  }
  const auto cpu = make_backend("cpu");
  expect_layer_norm_close(run_graph(fused, *cuda, inputs), run_graph(g, *cpu, inputs),
                          run_graph(widened(g), *cpu, wide_inputs), label);
}

TEST(cuda_fusion, gemm_epilogues_match_the_cpu) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  const std::vector<std::pair<shape_t, std::int64_t>> shapes = {
      {{1, 8}, 16}, {{2, 3, 40}, 36}, {{2, 5, 33}, 7}, {{2, 128, 768}, 768}};
  for (const dtype type : k_floats) {
    for (const auto& [x, n] : shapes) {
      for (const std::string tail :
           {"none", "relu", "gelu", "gelu_tanh_op", "gelu_new", "gelu_erf_parts", "residual"}) {
        check(gemm_graph(type, x, n, tail), "gemm_epilogue",
              std::string(to_string(type)) + " MatMul " + to_string(x) + " N " + std::to_string(n) +
                  " " + tail);
      }
    }
    check(gemm_graph(type, {5, 8}, 6, "relu", true), "gemm_epilogue",
          std::string(to_string(type)) + " Gemm relu");
    check(gemm_graph(type, {64, 256}, 96, "gelu_new", true), "gemm_epilogue",
          std::string(to_string(type)) + " Gemm gelu_new");
  }
}

TEST(cuda_fusion, layer_norms_match_the_cpu) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  // One row; a width no multiple of 8 (scalar loads); GPT-2's; 772 (float16
  // and bfloat16 one element a load, float32 4); the warp kernel's widest
  // row (2048); rows wider than the shared-memory cache (11264); many rows.
  const std::vector<shape_t> shapes = {{1, 1, 8}, {3, 7},     {2, 5, 768}, {9, 772},
                                       {3, 2048}, {2, 20000}, {1024, 1024}};
  for (const dtype type : k_floats) {
    for (const auto& shape : shapes) {
      for (const bool decomposed : {false, true}) {
        for (const int form : {0, 1, 2}) {  // alone, with the residual, with the sum read too
          check_layer_norm(layer_norm_graph(type, shape, decomposed, form > 0, form == 2),
                           std::string(to_string(type)) + " " + to_string(shape) +
                               (decomposed ? " decomposed" : " op") + " form " +
                               std::to_string(form));
        }
      }
    }
  }
}

// launch_fused_layer_norm straight on device buffers, every pointer `skew`
// elements past a 16-byte boundary (1: one-element loads; 0: 16-byte loads
// where the width allows), against float64 statistics of the same inputs;
// the sum must be the rounded a + b exactly, and nothing before or after
// the rows may be written (the buffers are poisoned: NaN stays NaN).
void check_layer_norm_kernel(dtype type, std::int64_t rows, std::int64_t n, std::int64_t skew) {
  const std::string label = std::string(to_string(type)) + " " + std::to_string(rows) + " x " +
                            std::to_string(n) + " skew " + std::to_string(skew);
  SCOPED_TRACE(label);
  const auto backend = poisoned_cuda();
  auto& cuda = dynamic_cast<cuda::cuda_backend&>(*backend);
  const std::int64_t size = rows * n + skew + 8;  // room on both sides
  const tensor a = random_tensor(type, {size}, 31), b = random_tensor(type, {size}, 32);
  const tensor scale = random_tensor(type, {n + skew}, 33),
               bias = random_tensor(type, {n + skew}, 34);
  const tensor da = cuda.copy_in(a), db = cuda.copy_in(b), ds = cuda.copy_in(scale),
               dbias = cuda.copy_in(bias);
  const tensor dy = cuda.allocate(type, {size}), dsum = cuda.allocate(type, {size});
  const std::size_t bytes = static_cast<std::size_t>(skew) * size_of(type);
  const auto at = [&](const tensor& t) { return static_cast<char*>(t.device_data()) + bytes; };
  cuda::launch_fused_layer_norm(type, at(da), at(db), at(ds), at(dbias), at(dy), at(dsum), rows, n,
                                1e-5F, cuda.stream());
  const tensor y = cuda.copy_out(dy), sum = cuda.copy_out(dsum);
  cuda.synchronize();
  cuda.end_run();
  std::size_t bad = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<double> x(static_cast<std::size_t>(n));
    double mean = 0, var = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const auto i = static_cast<std::size_t>(skew + r * n + j);
      tensor rounded(type, {1});
      set(rounded, 0, get(a, i) + get(b, i));
      x[static_cast<std::size_t>(j)] = get(rounded, 0);
      if (get(sum, i) != get(rounded, 0) && bad++ == 0) {
        ADD_FAILURE() << label << " sum[" << r << ", " << j << "]: " << get(sum, i) << ", want "
                      << get(rounded, 0);
      }
      mean += x[static_cast<std::size_t>(j)] / static_cast<double>(n);
    }
    for (const double v : x) var += (v - mean) * (v - mean) / static_cast<double>(n);
    for (std::int64_t j = 0; j < n; ++j) {
      const auto i = static_cast<std::size_t>(skew + r * n + j);
      const auto c = static_cast<std::size_t>(skew + j);
      const double want =
          (x[static_cast<std::size_t>(j)] - mean) / std::sqrt(var + 1e-5) * get(scale, c) +
          get(bias, c);
      const double limit =
          type == dtype::float32 ? 1e-4 + 1e-4 * std::abs(want) : 2 * step_of(type, want) + 1e-4;
      if (!(std::abs(get(y, i) - want) <= limit) && bad++ == 0) {
        ADD_FAILURE() << label << " y[" << r << ", " << j << "]: " << get(y, i) << ", want "
                      << want;
      }
    }
  }
  for (std::int64_t i = 0; i < size; ++i) {
    if (i >= skew && i < skew + rows * n) continue;
    const auto k = static_cast<std::size_t>(i);
    if ((!std::isnan(get(y, k)) || !std::isnan(get(sum, k))) && bad++ == 0) {
      ADD_FAILURE() << label << ": element " << i << " outside the rows was written";
    }
  }
  EXPECT_EQ(bad, 0U) << label;
}

TEST(cuda_fusion, layer_norm_kernel_on_any_alignment_and_width) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  // Widths: below a warp's loads, one register a lane, GPT-2's, no multiple
  // of 8 (float16 loads one element; float32 still 4), the warp kernel's
  // widest (2048), the block kernel's (2056, 3000); rows: one, and 5 (a
  // block of 4 rows and one more).
  for (const dtype type : k_floats) {
    for (const std::int64_t n : {1, 7, 64, 200, 768, 772, 2048, 2056, 3000}) {
      for (const std::int64_t rows : {1, 5}) {
        for (const std::int64_t skew : {0, 1}) check_layer_norm_kernel(type, rows, n, skew);
      }
    }
  }
}

void check_elementwise_programs(const std::string& how) {
  for (const dtype type : k_floats) {
    // c and the mask along the last dim (a row broadcast: two dims after
    // merging, 32-bit index math).
    for (const shape_t& shape : std::vector<shape_t>{{1}, {3, 4, 10}, {2, 1, 3, 17}, {256, 4099}}) {
      check(elementwise_graph(type, shape), "elementwise",
            how + std::string(to_string(type)) + " " + to_string(shape));
    }
    // Every input of the output's shape (dense: offsets without division),
    // a scalar, a column broadcast, a broadcast in the middle, and odd sizes.
    const std::vector<std::pair<shape_t, shape_t>> sides = {
        {{3, 4, 10}, {3, 4, 10}},    {{1, 1, 7}, {1, 1, 7}},   {{5, 33}, {1}},
        {{5, 33}, {5, 1}},           {{4, 3, 17}, {4, 1, 17}}, {{2, 1, 3, 17}, {2, 1, 3, 17}},
        {{1000, 1001}, {1000, 1001}}};
    for (const auto& [shape, side] : sides) {
      check(
          elementwise_graph(type, shape, side), "elementwise",
          how + std::string(to_string(type)) + " " + to_string(shape) + " side " + to_string(side));
    }
    check(gemm_graph(type, {4, 8}, 8, "almost_gelu"), "elementwise",
          how + std::string(to_string(type)) + " GELU-like chain after a product");
  }
}

// COOLBENCH_EW_JIT set (or unset: nullptr) for a scope, as it was after.
class scoped_ew_jit {
 public:
  explicit scoped_ew_jit(const char* value) {
    const char* was = std::getenv("COOLBENCH_EW_JIT");
    if (was != nullptr) m_was = was;
    if (value == nullptr) {
      unsetenv("COOLBENCH_EW_JIT");
    } else {
      setenv("COOLBENCH_EW_JIT", value, 1);
    }
  }
  scoped_ew_jit(const scoped_ew_jit&) = delete;
  scoped_ew_jit& operator=(const scoped_ew_jit&) = delete;
  ~scoped_ew_jit() {
    if (m_was) {
      setenv("COOLBENCH_EW_JIT", m_was->c_str(), 1);
    } else {
      unsetenv("COOLBENCH_EW_JIT");
    }
  }

 private:
  std::optional<std::string> m_was;
};

// The interpreting kernel (COOLBENCH_EW_JIT=0, and wherever a kernel cannot be generated).
TEST(cuda_fusion, elementwise_programs_match_the_cpu) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  const scoped_ew_jit interpreter("0");
  check_elementwise_programs("interpreted ");
}

// The same programs as kernels generated per program (the default, ew_jit.hpp).
TEST(cuda_fusion, generated_elementwise_kernels_match_the_cpu) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  const scoped_ew_jit by_default(nullptr);
  // Made at all (not the interpreter's fallback passing in its place).
  ew_program gelu;
  gelu.code = {{ew_op::load, 0, 0, 0, 0, ew_round::none},
               {ew_op::gelu_erf, 1, 0, 0, 0, ew_round::half}};
  cuda::ew_jit_signature signature{{dtype::float16}, dtype::float16, 1, true, true};
  ASSERT_NE(cuda::ew_jit_kernel(gelu, signature, nullptr), nullptr) << cuda::ew_jit_last_failure();
  check_elementwise_programs("generated ");
  // Every program was generated, compiled and launched: none fell back to the interpreter.
  EXPECT_EQ(cuda::ew_jit_last_failure(), "");
  // The loaded kernels outlive a device release (the context reset): the next runs launch them.
  ASSERT_TRUE(device::device::get(0).release().released);
  check_elementwise_programs("generated, after a release, ");
  EXPECT_EQ(cuda::ew_jit_last_failure(), "");
}

// A program the interpreter ran is reported, so a figure that is not the engine's says so:
// execution().fallbacks names its node and why, and node_times' detail does too. With the
// generated kernels (the default) none is.
TEST(cuda_fusion, an_interpreted_program_is_reported) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  const graph g = elementwise_graph(dtype::float16, {256, 4099});
  const auto inputs = inputs_for(g, 7);
  struct seen {
    std::vector<std::string> fallbacks;
    std::vector<node_time> times;
  };
  const auto run_with = [&](const char* jit) {
    const scoped_ew_jit scope(jit);
    session s(g, "cuda");
    for (const auto& [name, t] : inputs) s.set_input(name, t);
    s.run();
    seen out{s.execution().fallbacks, s.node_times(2)};
    return out;
  };
  const seen interpreted = run_with("0");
  ASSERT_EQ(interpreted.fallbacks.size(), 1U);
  EXPECT_NE(interpreted.fallbacks[0].find("FusedElementwise"), std::string::npos)
      << interpreted.fallbacks[0];
  EXPECT_NE(interpreted.fallbacks[0].find("interpreted, not generated: COOLBENCH_EW_JIT=0"),
            std::string::npos)
      << interpreted.fallbacks[0];
  const auto fused =
      std::find_if(interpreted.times.begin(), interpreted.times.end(),
                   [](const node_time& t) { return t.op_type == "FusedElementwise"; });
  ASSERT_NE(fused, interpreted.times.end());
  EXPECT_NE(fused->detail.find("COOLBENCH_EW_JIT=0"), std::string::npos) << fused->detail;

  const seen generated = run_with(nullptr);
  EXPECT_TRUE(generated.fallbacks.empty()) << generated.fallbacks.front();
  for (const node_time& t : generated.times)
    EXPECT_EQ(t.detail.find("interpreted"), std::string::npos);
}

TEST(cuda_fusion, exported_models_match_the_cpu_fused) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  for (const auto& c : model_cases()) {
    SCOPED_TRACE(c.folder);
    const graph g = load_onnx(model_path(c));
    graph reference = g;
    fold_constants(reference, c.bound);
    remove_dead_nodes(reference);
    const auto cuda = poisoned_cuda();
    graph fused = g;
    const auto counts = specialize_and_fuse(fused, *cuda, c.bound);
    std::printf("%s:", c.folder.c_str());
    for (const auto& [pass, n] : counts) std::printf(" %s %zu", pass.c_str(), n);
    std::printf(" (%zu nodes, %zu unfused)\n", fused.nodes.size(), reference.nodes.size());
    EXPECT_FALSE(counts.empty());
    const auto inputs = model_inputs(g, c.bound);
    const auto cpu = make_backend("cpu");
    expect_close(run_graph(fused, *cuda, inputs), run_graph(reference, *cpu, inputs), {}, c.folder);
  }
}

}  // namespace
}  // namespace coolbench::engine
