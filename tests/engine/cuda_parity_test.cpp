// CPU-vs-CUDA parity for every operator of the CUDA backend, in the style of
// ggml's test-backend-ops: each case is one node with seeded random inputs,
// run on the CPU reference and on the GPU, in every dtype the op takes, over
// edge shapes (empty, broadcast, large). The CUDA backend poisons each tensor
// it allocates (0xFF bytes), so an element a kernel leaves unwritten fails.
// Needs a GPU (ctest label gpu); skips with the reason without one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "coolbench/core/error.hpp"
#include "coolbench/device.hpp"
#include "engine/backends/cuda/backend.hpp"
#include "engine/backends/registry.hpp"
#include "engine/cuda_parity_cases.hpp"
#include "engine/gpu_present.hpp"

namespace coolbench::engine {
namespace {

using namespace parity;  // NOLINT(google-build-using-namespace): the cases' vocabulary

double load(const tensor& t, std::size_t i) {
  switch (t.type()) {
    case dtype::float32: return t.data<float>()[i];
    case dtype::int64: return static_cast<double>(t.data<std::int64_t>()[i]);
    case dtype::int32: return t.data<std::int32_t>()[i];
    case dtype::boolean: return static_cast<double>(std::to_integer<int>(t.raw()[i]));
    case dtype::float16:
    case dtype::bfloat16: {
      std::uint16_t bits = 0;
      std::memcpy(&bits, t.raw().data() + i * 2, 2);
      return t.type() == dtype::float16 ? half_to_float(bits) : bfloat16_to_float(bits);
    }
  }
  return 0;
}

void store(tensor& t, std::size_t i, double v) {
  switch (t.type()) {
    case dtype::float32: t.data<float>()[i] = static_cast<float>(v); break;
    case dtype::int64: t.data<std::int64_t>()[i] = static_cast<std::int64_t>(v); break;
    case dtype::int32: t.data<std::int32_t>()[i] = static_cast<std::int32_t>(v); break;
    case dtype::boolean: t.data<bool>()[i] = v != 0; break;
    case dtype::float16:
    case dtype::bfloat16: {
      const auto f = static_cast<float>(v);
      const std::uint16_t bits =
          t.type() == dtype::float16 ? float_to_half(f) : float_to_bfloat16(f);
      std::memcpy(t.raw().data() + i * 2, &bits, 2);
      break;
    }
  }
}

tensor make_input(const input_spec& spec, dtype type, std::mt19937& rng) {
  tensor t(type, spec.shape);
  std::normal_distribution<double> normal(0, 1);
  std::uniform_int_distribution<int> small(-3, 3);
  for (std::size_t i = 0; i < static_cast<std::size_t>(t.size()); ++i) {
    double v = 0;
    if (!spec.fixed.empty()) {
      v = static_cast<double>(spec.fixed[i]);
    } else if (type == dtype::boolean) {
      v = small(rng) > 0 ? 1 : 0;
    } else if (spec.kind == values::indices) {
      std::uniform_int_distribution<std::int64_t> index(-spec.index_range, spec.index_range - 1);
      v = static_cast<double>(index(rng));
    } else if (spec.kind == values::small_ints || type == dtype::int64 || type == dtype::int32) {
      v = small(rng);
      if (spec.kind == values::away_from_zero && v == 0) v = 2;
      if (spec.kind == values::positive) v = std::abs(v) + 1;
    } else {
      v = normal(rng);
      if (spec.kind == values::positive) v = std::abs(v) + 0.1;
      if (spec.kind == values::away_from_zero) v = v < 0 ? v - 0.5 : v + 0.5;
    }
    store(t, i, v);
  }
  return t;
}

// Tolerance per dtype: float32 differs in the last bits of expf and in the
// summation order; the 16-bit floats by a rounding step of their own.
bool close(double want, double got, dtype type, double scale) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || std::isinf(got)) return want == got;
  const double rel = type == dtype::float32 ? 1e-4 : type == dtype::float16 ? 4e-3 : 1.6e-2;
  const double abs = type == dtype::float32 ? 1e-5 * scale : rel * scale;
  if (!is_float(type)) return want == got;
  return std::abs(want - got) <= abs + rel * std::abs(want);
}

void add_elementwise(suite& s) {
  const std::vector<std::pair<std::string, values>> float_unary = {
      {"Sqrt", values::positive},  {"Reciprocal", values::away_from_zero},
      {"Exp", values::normal},     {"Log", values::positive},
      {"Tanh", values::normal},    {"Erf", values::normal},
      {"Sigmoid", values::normal}, {"Gelu", values::normal},
      {"IsNaN", values::normal}};
  for (const auto& [op, kind] : float_unary) {
    s.add(op, make_node(op, 1, 1), {{f, {3, 37}, kind}}, k_floats);
    s.add(op + " empty", make_node(op, 1, 1), {{f, {0, 5}, kind}}, k_floats);
  }
  s.add("Gelu tanh", make_node("Gelu", 1, 1, {{"approximate", std::string("tanh")}}), {{f, {129}}},
        k_floats);
  for (const std::string op : {"Neg", "Abs", "Relu"}) {
    s.add(op, make_node(op, 1, 1), {{f, {2, 3, 17}}}, k_numeric);
  }
  for (const std::string op : {"Add", "Sub", "Mul", "Div"}) {
    const values b = op == "Div" ? values::away_from_zero : values::normal;
    s.add(op + " same", make_node(op, 2, 1), {{f, {4, 33}}, {f, {4, 33}, b}}, k_numeric);
    s.add(op + " broadcast", make_node(op, 2, 1), {{f, {2, 1, 5, 7}}, {f, {3, 1, 7}, b}},
          k_numeric);
    s.add(op + " scalar", make_node(op, 2, 1), {{f, {6, 5}}, {f, {}, b}}, k_numeric);
    s.add(op + " empty", make_node(op, 2, 1), {{f, {0, 4}}, {f, {1, 4}, b}}, k_numeric);
  }
  s.add("Add large", make_node("Add", 2, 1), {{f, {1024, 1025}}, {f, {1025}}}, k_floats);
  s.add("Pow", make_node("Pow", 2, 1),
        {{f, {5, 9}, values::positive}, {f, {9}, values::small_ints}}, k_floats);
  s.add("Pow int exponent", make_node("Pow", 2, 1),
        {{f, {5, 9}, values::positive}, {dtype::int64, {1}, values::small_ints, {2}}}, k_floats);
  for (const std::string op : {"Min", "Max"}) {
    s.add(op, make_node(op, 2, 1), {{f, {3, 8}}, {f, {8}}}, k_numeric);
    s.add(op + " three", make_node(op, 3, 1), {{f, {3, 8}}, {f, {1, 8}}, {f, {3, 1}}}, k_numeric);
    s.add(op + " one", make_node(op, 1, 1), {{f, {7}}}, k_numeric);
  }
  for (const std::string op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
    s.add(op, make_node(op, 2, 1), {{f, {4, 9}, values::small_ints}, {f, {9}, values::small_ints}},
          k_numeric);
  }
  s.add("Equal bool", make_node("Equal", 2, 1), {{dtype::boolean, {4, 9}}, {dtype::boolean, {9}}},
        {dtype::boolean});
  s.add("Not", make_node("Not", 1, 1), {{f, {31}}}, {dtype::boolean});
  for (const std::string op : {"And", "Or", "Xor"}) {
    s.add(op, make_node(op, 2, 1), {{f, {3, 11}}, {f, {11}}}, {dtype::boolean});
  }
  s.add("Where", make_node("Where", 3, 1), {{dtype::boolean, {4, 1}}, {f, {4, 6}}, {f, {6}}},
        {dtype::float32, dtype::float16, dtype::bfloat16, dtype::int64, dtype::int32,
         dtype::boolean});
  for (const auto& [to, code] : std::vector<std::pair<dtype, std::int64_t>>{{dtype::float32, 1},
                                                                            {dtype::float16, 10},
                                                                            {dtype::bfloat16, 16},
                                                                            {dtype::int64, 7},
                                                                            {dtype::int32, 6},
                                                                            {dtype::boolean, 9}}) {
    s.add("Cast to " + std::string(to_string(to)), make_node("Cast", 1, 1, {{"to", code}}),
          {{f, {5, 13}, values::small_ints}},
          {dtype::float32, dtype::float16, dtype::bfloat16, dtype::int64, dtype::int32,
           dtype::boolean});
  }
  s.add("CastLike to float16", make_node("CastLike", 2, 1),
        {{f, {5, 13}, values::small_ints}, {dtype::float16, {1}}},
        {dtype::float32, dtype::bfloat16, dtype::int64, dtype::int32, dtype::boolean});
  s.add("CastLike to int64", make_node("CastLike", 2, 1),
        {{f, {7}, values::small_ints}, {dtype::int64, {}}}, k_floats);
  s.add("Clip", make_node("Clip", 3, 1),
        {{f, {4, 20}, values::small_ints},
         {f, {}, values::small_ints, {-1}},
         {f, {}, values::small_ints, {2}}},
        k_numeric);
  s.add("Clip min only", make_node("Clip", 2, 1), {{f, {40}}, {f, {}, values::normal, {0}}},
        k_numeric);
  s.add("Identity", make_node("Identity", 1, 1), {{f, {3, 4}}}, k_numeric);
  s.add("Dropout", make_node("Dropout", 1, 2), {{f, {3, 4}}}, k_floats, 2);
}

void add_data(suite& s) {
  const std::vector<dtype> all = {dtype::float32, dtype::float16, dtype::bfloat16,
                                  dtype::int64,   dtype::int32,   dtype::boolean};
  s.add("Reshape", make_node("Reshape", 2, 1),
        {{f, {2, 3, 4}}, {dtype::int64, {3}, values::normal, {0, -1, 2}}}, all);
  s.add("Flatten", make_node("Flatten", 1, 1, {{"axis", std::int64_t{2}}}), {{f, {2, 3, 4, 5}}},
        all);
  s.add("Squeeze", make_node("Squeeze", 2, 1),
        {{f, {2, 1, 4, 1}}, {dtype::int64, {1}, values::normal, {-1}}}, all);
  s.add("Unsqueeze", make_node("Unsqueeze", 2, 1),
        {{f, {2, 4}}, {dtype::int64, {2}, values::normal, {0, 3}}}, all);
  s.add("Transpose", make_node("Transpose", 1, 1, {{"perm", int_list{0, 2, 1, 3}}}),
        {{f, {2, 3, 5, 7}}}, all);
  s.add("Transpose default", make_node("Transpose", 1, 1), {{f, {33, 65}}}, all);
  // Only axes of size 1 move (a decode step's head split): a view of the input, no copy.
  s.add("Transpose of size-1 axes", make_node("Transpose", 1, 1, {{"perm", int_list{0, 2, 1, 3}}}),
        {{f, {2, 1, 3, 5}}}, all);
  s.add("Transpose around size-1 axes",
        make_node("Transpose", 1, 1, {{"perm", int_list{3, 1, 2, 0}}}), {{f, {1, 4, 1, 3}}}, all);
  s.add("Expand", make_node("Expand", 2, 1),
        {{f, {3, 1}}, {dtype::int64, {3}, values::normal, {2, 3, 4}}}, all);
  s.add("Concat", make_node("Concat", 3, 1, {{"axis", std::int64_t{1}}}),
        {{f, {2, 3, 4}}, {f, {2, 0, 4}}, {f, {2, 5, 4}}}, all);
  // One launch: a decode step's cache (16-byte pieces), rows of odd widths
  // (2- and 1-byte pieces); nine parts take a copy each.
  s.add("Concat of a cache and one position",
        make_node("Concat", 2, 1, {{"axis", std::int64_t{2}}}),
        {{f, {1, 3, 8, 8}}, {f, {1, 3, 1, 8}}}, all);
  s.add("Concat of odd widths", make_node("Concat", 3, 1, {{"axis", std::int64_t{-1}}}),
        {{f, {2, 3}}, {f, {2, 5}}, {f, {2, 1}}}, all);
  s.add("Concat of nine parts", make_node("Concat", 9, 1, {{"axis", std::int64_t{0}}}),
        {{f, {1, 2}},
         {f, {2, 2}},
         {f, {1, 2}},
         {f, {1, 2}},
         {f, {3, 2}},
         {f, {1, 2}},
         {f, {1, 2}},
         {f, {1, 2}},
         {f, {1, 2}}},
        all);
  // Parts that are aligned ranges of the input become views of it; a part
  // starting at a misaligned address is copied.
  s.add("Split into views", make_node("Split", 1, 3, {{"axis", std::int64_t{-1}}}),
        {{f, {1, 1, 768}}}, all, 3);
  s.add("Split of one row, misaligned", make_node("Split", 2, 2, {{"axis", std::int64_t{1}}}),
        {{f, {1, 10}}, {dtype::int64, {2}, values::normal, {4, 6}}}, all, 2);
  s.add("Split", make_node("Split", 2, 2, {{"axis", std::int64_t{-1}}}),
        {{f, {3, 10}}, {dtype::int64, {2}, values::normal, {4, 6}}}, all, 2);
  s.add("Split even", make_node("Split", 1, 3, {{"axis", std::int64_t{0}}}), {{f, {6, 2}}}, all, 3);
  s.add("Slice", make_node("Slice", 5, 1),
        {{f, {6, 7, 8}},
         {dtype::int64, {2}, values::normal, {1, -1}},
         {dtype::int64, {2}, values::normal, {5, -9}},
         {dtype::int64, {2}, values::normal, {0, 2}},
         {dtype::int64, {2}, values::normal, {2, -2}}},
        all);
  s.add("Slice empty", make_node("Slice", 3, 1),
        {{f, {4, 5}},
         {dtype::int64, {1}, values::normal, {3}},
         {dtype::int64, {1}, values::normal, {1}}},
        all);
  s.add("Gather", make_node("Gather", 2, 1, {{"axis", std::int64_t{1}}}),
        {{f, {3, 10, 4}}, {dtype::int64, {2, 5}, values::indices, {}, 10}}, all);
  s.add("Gather int32 rows", make_node("Gather", 2, 1),
        {{f, {50, 16}}, {dtype::int32, {7}, values::indices, {}, 50}}, all);
  // Rows of 3 elements: no chunk wider than one element (launch_gather).
  s.add("Gather odd rows", make_node("Gather", 2, 1, {{"axis", std::int64_t{1}}}),
        {{f, {2, 9, 3}}, {dtype::int64, {4, 3}, values::indices, {}, 9}}, all);
  s.add("GatherND", make_node("GatherND", 2, 1, {{"batch_dims", std::int64_t{1}}}),
        {{f, {2, 5, 6, 3}},
         {dtype::int64,
          {2, 4, 2},
          values::normal,
          {0, 1, 4, 5, 2, 2, -1, -6, 3, 3, 1, 0, 0, 0, 4, 2}}},
        all);
  s.add("Shape", make_node("Shape", 1, 1, {{"start", std::int64_t{1}}}), {{f, {2, 3, 4}}},
        k_floats);
  s.add("Size", make_node("Size", 1, 1), {{f, {2, 3, 4}}}, k_floats);
  s.add("ConstantOfShape", make_node("ConstantOfShape", 1, 1),
        {{dtype::int64, {2}, values::normal, {3, 4}}}, {dtype::int64});
  s.add("Constant", make_node("Constant", 0, 1, {{"value_ints", int_list{4, 5, 6}}}), {},
        {dtype::int64});
  s.add(
      "Range int", make_node("Range", 3, 1),
      {{f, {}, values::normal, {10}}, {f, {}, values::normal, {-3}}, {f, {}, values::normal, {-3}}},
      {dtype::int64, dtype::int32});
  s.add("Range float", make_node("Range", 3, 1),
        {{f, {}, values::normal, {1}}, {f, {}, values::normal, {9}}, {f, {}, values::normal, {2}}},
        {dtype::float32});
  s.add("Trilu upper", make_node("Trilu", 2, 1),
        {{f, {2, 5, 7}}, {dtype::int64, {}, values::normal, {1}}}, all);
  s.add("Trilu lower", make_node("Trilu", 1, 1, {{"upper", std::int64_t{0}}}), {{f, {6, 4}}}, all);
}

void add_reduce(suite& s) {
  for (const std::string op : {"ReduceMean", "ReduceSum", "ReduceMax"}) {
    s.add(op + " last", make_node(op, 1, 1, {{"axes", int_list{-1}}}), {{f, {4, 3, 300}}},
          k_floats);
    s.add(op + " middle keepdims 0",
          make_node(op, 1, 1, {{"axes", int_list{0, 2}}, {"keepdims", std::int64_t{0}}}),
          {{f, {4, 3, 5}}}, k_floats);
    s.add(op + " all", make_node(op, 1, 1), {{f, {7, 9}}}, k_floats);
    s.add(op + " axes input", make_node(op, 2, 1),
          {{f, {5, 6}}, {dtype::int64, {1}, values::normal, {1}}}, k_floats);
  }
  for (const std::string op : {"Softmax", "LogSoftmax"}) {
    s.add(op + " last", make_node(op, 1, 1), {{f, {3, 4, 77}}}, k_floats);
    s.add(op + " middle", make_node(op, 1, 1, {{"axis", std::int64_t{1}}}), {{f, {3, 9, 5}}},
          k_floats);
    s.add(op + " large", make_node(op, 1, 1), {{f, {2, 50257}}}, k_floats);
  }
  s.add("LayerNormalization", make_node("LayerNormalization", 3, 3),
        {{f, {4, 6, 96}}, {f, {96}}, {f, {96}}}, k_floats, 3);
  // Scale and B in float16 beside another X dtype, as a float16 model's
  // export with a float32 residual stream has them.
  s.add("LayerNormalization float16 Scale and B", make_node("LayerNormalization", 3, 1),
        {{f, {4, 6, 96}}, {dtype::float16, {96}}, {dtype::float16, {96}}},
        {dtype::float32, dtype::bfloat16});
  s.add("LayerNormalization two axes",
        make_node("LayerNormalization", 2, 1, {{"axis", std::int64_t{1}}, {"epsilon", 1e-3F}}),
        {{f, {3, 4, 8}}, {f, {8}}}, k_floats);
  s.add("CumSum", make_node("CumSum", 2, 1),
        {{f, {3, 7}, values::small_ints}, {dtype::int64, {}, values::normal, {1}}}, k_numeric);
  s.add("CumSum exclusive reverse",
        make_node("CumSum", 2, 1, {{"exclusive", std::int64_t{1}}, {"reverse", std::int64_t{1}}}),
        {{f, {4, 5, 3}, values::small_ints}, {dtype::int32, {}, values::normal, {-2}}}, k_numeric);
}

void add_matmul(suite& s) {
  s.add("MatMul", make_node("MatMul", 2, 1), {{f, {17, 33}}, {f, {33, 9}}}, k_floats);
  s.add("MatMul batched", make_node("MatMul", 2, 1), {{f, {2, 3, 8, 16}}, {f, {2, 3, 16, 5}}},
        k_floats);
  s.add("MatMul broadcast B", make_node("MatMul", 2, 1), {{f, {4, 8, 16}}, {f, {16, 12}}},
        k_floats);
  s.add("MatMul broadcast both", make_node("MatMul", 2, 1), {{f, {2, 1, 4, 6}}, {f, {1, 3, 6, 5}}},
        k_floats);
  s.add("MatMul vector", make_node("MatMul", 2, 1), {{f, {16}}, {f, {3, 16, 7}}}, k_floats);
  s.add("MatMul empty", make_node("MatMul", 2, 1), {{f, {0, 8}}, {f, {8, 4}}}, k_floats);
  s.add("MatMul empty inner", make_node("MatMul", 2, 1), {{f, {3, 0}}, {f, {0, 4}}}, k_floats);
  s.add("MatMul large", make_node("MatMul", 2, 1), {{f, {128, 768}}, {f, {768, 2304}}}, k_floats);
  s.add("Gemm", make_node("Gemm", 3, 1, {{"alpha", 0.5F}, {"beta", 2.0F}}),
        {{f, {7, 12}}, {f, {12, 5}}, {f, {5}}}, k_floats);
  s.add("Gemm transposed",
        make_node("Gemm", 3, 1, {{"transA", std::int64_t{1}}, {"transB", std::int64_t{1}}}),
        {{f, {12, 7}}, {f, {5, 12}}, {f, {7, 1}}}, k_floats);
  s.add("Gemm no C", make_node("Gemm", 2, 1, {{"transB", std::int64_t{1}}}),
        {{f, {3, 64}}, {f, {100, 64}}}, k_floats);
}

using testing_gpu::gpu_count;

// Hands the GPU back at the end, so compute-sanitizer's leak check sees
// every block freed (the caching allocator keeps them until a release).
class release_at_exit : public testing::Environment {
 public:
  void TearDown() override {
    if (gpu_count() > 0) {
      const auto report = device::device::get(0).release();
      std::printf("device release at exit: %llu bytes freed\n",
                  static_cast<unsigned long long>(report.bytes_freed));
    }
  }
};
const auto* const k_release = testing::AddGlobalTestEnvironment(new release_at_exit);

TEST(cuda_parity, every_operator_and_dtype_matches_the_cpu) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  suite s;
  add_elementwise(s);
  add_data(s);
  add_reduce(s);
  add_matmul(s);
  add_nn(s);
  auto cpu = make_backend("cpu");
  cuda::cuda_backend gpu(0);
  gpu.poison_allocations(true);
  std::set<std::string> ops;
  std::size_t runs = 0;
  std::size_t elements = 0;
  std::mt19937 rng(1234);
  for (const auto& [c, types] : s.cases) {
    ops.insert(c.n.op_type);
    for (const dtype type : types) {
      SCOPED_TRACE(c.label + " " + std::string(to_string(type)));
      std::vector<tensor> host;
      for (const input_spec& spec : c.inputs)
        host.push_back(make_input(spec, spec.type == f ? type : spec.type, rng));
      std::vector<tensor> device;
      for (const tensor& t : host) device.push_back(gpu.copy_in(t));
      std::vector<const tensor*> host_in, device_in;
      for (std::size_t i = 0; i < host.size(); ++i) {
        host_in.push_back(&host[i]);
        device_in.push_back(&device[i]);
      }
      std::vector<tensor> want(c.outputs), got_device(c.outputs);
      cpu->run(c.n, host_in, want);
      try {
        gpu.run(c.n, device_in, got_device);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "the CUDA backend threw: " << e.what();
        continue;
      }
      for (std::size_t o = 0; o < c.outputs; ++o) {
        const tensor got = gpu.copy_out(got_device[o]);
        if (got.type() != want[o].type() || got.shape() != want[o].shape()) {
          ADD_FAILURE() << "output " << o << ": cpu " << to_string(want[o].type()) << " "
                        << to_string(want[o].shape()) << ", cuda " << to_string(got.type()) << " "
                        << to_string(got.shape());
          continue;
        }
        double scale = 1;
        for (std::size_t i = 0; i < static_cast<std::size_t>(want[o].size()); ++i) {
          scale = std::max(scale, std::abs(load(want[o], i)));
        }
        for (std::size_t i = 0; i < static_cast<std::size_t>(want[o].size()); ++i) {
          const double w = load(want[o], i);
          const double g = load(got, i);
          if (!close(w, g, got.type(), scale)) {  // one report per output
            ADD_FAILURE() << "output " << o << " element " << i << ": cpu " << w << ", cuda " << g;
            break;
          }
        }
        elements += static_cast<std::size_t>(want[o].size());
      }
      ++runs;
    }
  }
  gpu.end_run();
  std::printf(
      "RECORD parity: %zu operators, %zu cases, %zu case-dtype runs, %zu output elements "
      "compared\n",
      ops.size(), s.cases.size(), runs, elements);
  // Every operator the backend has is covered.
  std::set<std::string> table;
  for (const auto family : {cuda::elementwise_ops(), cuda::data_ops(), cuda::constant_ops(),
                            cuda::reduce_ops(), cuda::matmul_ops(), cuda::nn_ops()}) {
    for (const auto& e : family) table.emplace(e.op_type);
  }
  EXPECT_EQ(ops, table);
}

}  // namespace
}  // namespace coolbench::engine
