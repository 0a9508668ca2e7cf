// GPT-2's decode products (M = 1 and 8 rows: one token a sequence at batch 1 and 8) on cuda:0,
// each with cuBLASLt's timed choice (COOLBENCH_GEMM_SKINNY unset) and with the skinny kernel
// forced (COOLBENCH_GEMM_SKINNY=force), in one process; then with the kernel timed beside
// cuBLASLt's (=1), to show which one the tuning keeps. Prints a markdown table: microseconds a
// product, the GB/s that makes of W's bytes, the ratio, and what each product ran.
//
// The floor is W's bytes over the memory bandwidth: at M <= 8 a product reads W once and little
// else. GPT-2 small in fp16: [768, 2304] 3.54 MB, [768, 768] 1.18 MB, [768, 3072] and
// [3072, 768] 4.72 MB, the lm_head [50257, 768] 77.2 MB; at 3.35 TB/s (H100 SXM) 1.06, 0.35,
// 1.41 and 23.0 us, at 4.8 TB/s (H200) 0.74, 0.25, 0.98 and 16.1 us. cuBLASLt took 4-5 us for
// each layer product on an H100 (nvjet 64x8 kernels, some split-K with a reduction kernel).
//
// Each product is a session of R copies of it on R different weights (as many as make 4 times
// the L2 cache, 2 to 128), all reading the same x: a run reads every weight from memory, as a
// model's step does, and the CUDA graph's launches back to back set the pace, gaps included.
// Timed by CUDA events over RUNS graph launches after 3 warm-up runs on random data (normal,
// never zeros), the fastest of 3 such rounds; microseconds a product = that / (RUNS x R).
//
//   build/bench/skinny_gemm_bench [RUNS [NAME [DTYPE]]]
// NAME keeps the products whose name contains it ("lm_head"), DTYPE those of that dtype
// (float16 by default; bfloat16, float32).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "coolbench/device.hpp"
#include "coolbench/engine/graph.hpp"
#include "coolbench/engine/session.hpp"
#include "engine/backend.hpp"
#include "engine/backends/registry.hpp"
#include "graph_replay_timing.hpp"

namespace {

using namespace coolbench::engine;  // NOLINT(google-build-using-namespace)

using coolbench::bench::check_cuda;

tensor random_tensor(dtype type, const shape_t& shape, std::mt19937& rng, float scale) {
  tensor t(type, shape);
  std::normal_distribution<float> normal(0, scale);
  for (std::size_t i = 0; i < static_cast<std::size_t>(t.size()); ++i) {
    const float v = normal(rng);
    if (type == dtype::float32) {
      t.data<float>()[i] = v;
    } else {
      const std::uint16_t bits = type == dtype::float16 ? float_to_half(v) : float_to_bfloat16(v);
      std::memcpy(t.raw().data() + i * 2, &bits, 2);
    }
  }
  return t;
}

value_info declared(const std::string& name, dtype type, const shape_t& shape) {
  value_info v{name, type, {}, true};
  for (const auto d : shape) v.shape.push_back(dimension{d, {}});
  return v;
}

node make_node(std::string op, std::vector<std::string> inputs, std::vector<std::string> outputs,
               std::map<std::string, attribute> attributes = {}) {
  node n;
  n.op_type = std::move(op);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attributes = std::move(attributes);
  n.name = n.op_type + "_" + n.outputs.front();
  return n;
}

// One of GPT-2's products as its export writes it: x [M, K] times W [K, N], then the bias and
// what follows (the session fuses them into the product's epilogue), or the tied lm_head
// Gemm(x, wte, transB) with wte [N, K] and no bias.
enum class form : std::uint8_t { bias, bias_gelu, bias_residual, lm_head };

struct product_config {
  const char* name;
  std::int64_t k, n;
  form tail;
};

const product_config k_products[] = {
    {"attn.c_attn 768->2304 +bias", 768, 2304, form::bias},
    {"attn.c_proj 768->768 +bias +residual", 768, 768, form::bias_residual},
    {"mlp.c_fc 768->3072 +bias gelu_tanh", 768, 3072, form::bias_gelu},
    {"mlp.c_proj 3072->768 +bias +residual", 3072, 768, form::bias_residual},
    {"lm_head 768->50257 (wte transposed)", 768, 50257, form::lm_head},
};

// `copies` of the product, each on its own weights, all reading x (and r for the residual).
graph product_graph(const product_config& c, dtype type, std::int64_t m, int copies) {
  std::mt19937 rng(7);
  graph g;
  g.name = c.name;
  g.opset = 20;
  g.inputs = {declared("x", type, {m, c.k})};
  if (c.tail == form::bias_residual) g.inputs.push_back(declared("r", type, {m, c.n}));
  const float scale = 1.0F / std::sqrt(static_cast<float>(c.k));
  for (int i = 0; i < copies; ++i) {
    const std::string s = std::to_string(i);
    const std::string y = "y" + s;
    if (c.tail == form::lm_head) {
      g.initializers["w" + s] = random_tensor(type, {c.n, c.k}, rng, scale);
      g.nodes.push_back(make_node("Gemm", {"x", "w" + s}, {y}, {{"transB", std::int64_t{1}}}));
    } else {
      g.initializers["w" + s] = random_tensor(type, {c.k, c.n}, rng, scale);
      g.initializers["b" + s] = random_tensor(type, {c.n}, rng, 1.0F);
      g.nodes.push_back(make_node("MatMul", {"x", "w" + s}, {"p" + s}));
      const std::string h = c.tail == form::bias ? y : "h" + s;
      g.nodes.push_back(make_node("Add", {"p" + s, "b" + s}, {h}));
      if (c.tail == form::bias_gelu) {
        g.nodes.push_back(make_node("Gelu", {h}, {y}, {{"approximate", std::string("tanh")}}));
      } else if (c.tail == form::bias_residual) {
        g.nodes.push_back(make_node("Add", {h, "r"}, {y}));
      }
    }
    g.outputs.push_back(declared(y, type, {m, c.n}));
  }
  return g;
}

struct measured {
  double us = 0;       // a product
  std::string detail;  // what the first product ran
};

// A session of g on cuda:0 with COOLBENCH_GEMM_SKINNY as `mode` (nullptr: unset) while its
// products choose, timed as the header says.
measured time_products(const graph& g, const char* mode, int runs, int copies) {
  if (mode == nullptr) {
    ::unsetenv("COOLBENCH_GEMM_SKINNY");
  } else {
    ::setenv("COOLBENCH_GEMM_SKINNY", mode, 1);
  }
  session s(g, "cuda:0");
  std::mt19937 rng(11);
  for (const auto& v : g.inputs) {
    shape_t shape;
    for (const auto& d : v.shape) shape.push_back(d.value);
    s.set_input(v.name, random_tensor(v.type, shape, rng, 1.0F));
  }
  for (int i = 0; i < 3; ++i) s.run();  // record, capture, replay
  const double best = coolbench::bench::fastest_replays_ms(s, runs, "skinny_gemm_bench");
  measured result;
  result.us = 1000.0 * best / runs / copies;
  for (const auto& t : s.node_times(1)) {
    if (t.op_type == "Gemm" || t.op_type == "FusedGemm" || t.op_type == "MatMul") {
      result.detail = t.detail;
      break;
    }
  }
  ::unsetenv("COOLBENCH_GEMM_SKINNY");
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 20;
  const std::string only_name = argc > 2 ? argv[2] : "";
  const std::string type_name = argc > 3 ? argv[3] : "float16";
  if (runs <= 0) {
    std::fprintf(stderr, "usage: skinny_gemm_bench [RUNS [NAME [DTYPE]]] (RUNS > 0)\n");
    return 2;
  }
  const dtype type = type_name == "float32"    ? dtype::float32
                     : type_name == "bfloat16" ? dtype::bfloat16
                                               : dtype::float16;
  if (to_string(type) != type_name) {
    std::fprintf(stderr, "skinny_gemm_bench: DTYPE is float16, bfloat16 or float32\n");
    return 2;
  }
  if (coolbench::device::device::count() == 0) {
    std::fprintf(stderr, "skinny_gemm_bench: no GPU\n");
    return 1;
  }
  int l2_bytes = 0;
  check_cuda(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, 0));
  std::printf("%s, %d graph launches after 3 warm-up runs, fastest of 3 rounds\n\n",
              make_backend("cuda:0")->describe().c_str(), runs);
  std::printf(
      "| product | M | dtype | W MB | copies | floor us H100 / H200 | cuBLASLt us | GB/s | skinny "
      "us | GB/s | cuBLASLt / skinny | cuBLASLt ran | skinny ran | timed with =1 |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  int measured_count = 0;
  for (const auto& c : k_products) {
    if (std::string(c.name).find(only_name) == std::string::npos) continue;
    for (const std::int64_t m : {1, 8}) {
      ++measured_count;
      const double w_bytes = static_cast<double>(c.k * c.n) * static_cast<double>(size_of(type));
      const int copies =
          static_cast<int>(std::clamp(std::ceil(4.0 * l2_bytes / w_bytes), 2.0, 128.0));
      const graph g = product_graph(c, type, m, copies);
      const measured cublas = time_products(g, nullptr, runs, copies);
      const measured skinny = time_products(g, "force", runs, copies);
      const measured timed = time_products(g, "1", runs, copies);
      std::printf(
          "| %s | %lld | %s | %.2f | %d | %.2f / %.2f | %.2f | %.0f | %.2f | %.0f | %.2fx | %s | "
          "%s "
          "| %s |\n",
          c.name, static_cast<long long>(m), std::string(to_string(type)).c_str(), w_bytes / 1e6,
          copies, w_bytes / 3.35e12 * 1e6, w_bytes / 4.8e12 * 1e6, cublas.us,
          w_bytes / cublas.us / 1e3, skinny.us, w_bytes / skinny.us / 1e3, cublas.us / skinny.us,
          cublas.detail.c_str(), skinny.detail.c_str(), timed.detail.c_str());
      std::fflush(stdout);
    }
  }
  if (measured_count == 0) {
    std::fprintf(stderr, "skinny_gemm_bench: no product named like \"%s\"\n", only_name.c_str());
    return 2;
  }
  return 0;
}
