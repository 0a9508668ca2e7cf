// coolbench.Attention against the op sequence it replaces, on cuda:0: each
// configuration's unfused graph (MatMul, scale, mask, Softmax, MatMul, as
// the exporters write it) and the same graph after the attention fusion
// pass, each run node by node on the CUDA backend, timed with CUDA events
// over RUNS runs after 5 warm-up runs on random data; then the unfused graph
// in a CUDA session ("graph ms": the session fuses it and replays its CUDA
// graph, RUNS launches back to back, the fastest of 3 such rounds, so a short
// kernel is timed at its own pace, not at the host's launches through the
// backend). Prints one markdown row per configuration: milliseconds,
// speed-up, the session's FLOP/s (4·B·H·Sq·Sk·D, halved for causal prefill)
// and bytes/s (q, k, v, out, mask once each), and the session's time again on
// each kernel forced, as "graph ms" is timed, so that a short kernel is timed
// at its own pace there too (COOLBENCH_ATTENTION_KERNEL=fma32, fma64, tf32x3, mma,
// split_keys, decode_scalar, halves, decode_cluster, wgmma, wgmma_overlap, decode_vector, wgmma64:
// the register-tiled FMA kernel (float32's) with 32 and 64 query rows a block, float32's 3xTF32
// tensor-core kernel, the 16-bit tensor-core kernels with 64-row tiles and with split keys,
// decode's kernel of an element a load, the 64-row tiles with two groups of warps over the
// keys, decode's chunks merged in a thread block cluster, the 16-bit Hopper kernel on wgmma
// (128-row blocks of two warpgroups, sm_90a; where attention_wgmma_fits, else the kernel
// picked, and the build says so on stderr where it has no sm_90a code), the same with each
// tile's softmax under the last tile's product with V (wgmma_overlap), decode's 16-byte kernel
// with the merge kernel after (no cluster), the wgmma kernel on 64-key tiles (two blocks an SM
// at head dim 64); "-" where the kernel does not run:
// the 16-bit ones on float32, tf32x3 on 16 bits, the decode ones on prefill,
// the others on decode), and with the tensor-core kernels' scores in their
// general form (COOLBENCH_ATTENTION_SCORES=general: each score's bias and
// mask found from runtime steps; the default takes a form of its own without
// either, or with a bias of 4-byte pairs).
//
//   build/bench/attention_bench [RUNS [NAME [DTYPE]]]
// NAME keeps the configurations whose name contains it ("bert b32"), DTYPE
// those of that dtype (float16): a profiler (ncu) then sees only their kernels.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "coolbench/device.hpp"
#include "coolbench/engine/passes.hpp"
#include "coolbench/engine/session.hpp"
#include "engine/attention_graphs.hpp"
#include "engine/backend.hpp"
#include "engine/backends/registry.hpp"
#include "engine/fusion/fusion.hpp"
#include "graph_replay_timing.hpp"

namespace {

using namespace coolbench::engine;                  // NOLINT(google-build-using-namespace)
using namespace coolbench::engine::attention_test;  // NOLINT(google-build-using-namespace)

using coolbench::bench::check_cuda;

tensor random_tensor(dtype type, const shape_t& shape, std::mt19937& rng) {
  tensor t(type, shape);
  std::normal_distribution<float> normal(0, 1);
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

// g's inputs on random data (a boolean input is a causal mask).
std::map<std::string, tensor> random_inputs(const graph& g) {
  std::mt19937 rng(3);
  std::map<std::string, tensor> inputs;
  for (const auto& v : g.inputs) {
    shape_t shape;
    for (const auto& d : v.shape) shape.push_back(d.value);
    inputs[v.name] = v.type == dtype::boolean ? future_mask(shape[2], shape[3], true)
                                              : random_tensor(v.type, shape, rng);
  }
  return inputs;
}

// Milliseconds per run of g in a CUDA session on cuda:0 (its own fusion passes, memory plan and
// CUDA graph, as a model runs), by CUDA events over `runs` graph launches queued back to back
// after 5 warm-up runs: the kernels' pace, where time_graph's launches through the backend
// (host dispatch and an output allocation a node) set the pace of a kernel shorter than them.
double time_session(const graph& g, int runs) {
  coolbench::engine::session s(g, "cuda:0");
  for (auto& [name, value] : random_inputs(g)) s.set_input(name, std::move(value));
  for (int i = 0; i < 5; ++i) s.run();
  return coolbench::bench::fastest_replays_ms(s, runs, "attention_bench") / runs;
}

// Milliseconds per run of g's nodes on b (inputs resident), by CUDA events.
double time_graph(const graph& g, backend& b, int runs) {
  std::map<std::string, tensor> values;
  for (const auto& [name, t] : g.initializers) values[name] = b.copy_in(t);
  for (auto& [name, t] : random_inputs(g)) values[name] = b.copy_in(t);
  const auto once = [&] {
    for (const node& n : g.nodes) {
      std::vector<const tensor*> in;
      for (const auto& name : n.inputs) in.push_back(name.empty() ? nullptr : &values.at(name));
      std::vector<tensor> out(n.outputs.size());
      b.run(n, in, out);
      for (std::size_t i = 0; i < out.size(); ++i) values[n.outputs[i]] = std::move(out[i]);
    }
  };
  for (int i = 0; i < 5; ++i) once();
  const auto stream = static_cast<cudaStream_t>(b.stream());
  cudaEvent_t start = nullptr, stop = nullptr;
  check_cuda(cudaEventCreate(&start));
  check_cuda(cudaEventCreate(&stop));
  check_cuda(cudaEventRecord(start, stream));
  for (int i = 0; i < runs; ++i) once();
  check_cuda(cudaEventRecord(stop, stream));
  check_cuda(cudaEventSynchronize(stop));
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, start, stop));
  check_cuda(cudaEventDestroy(start));
  check_cuda(cudaEventDestroy(stop));
  b.synchronize();
  b.end_run();
  return static_cast<double>(ms) / runs;
}

struct config {
  const char* name;
  attention_spec spec;
};

std::vector<config> configs() {
  std::vector<config> list;
  for (const dtype t : {dtype::float16, dtype::bfloat16, dtype::float32}) {
    const auto gpt2 = [&](std::int64_t batch, std::int64_t sq, std::int64_t sk) {
      attention_spec s;
      s.type = t, s.batch = batch, s.heads = 12, s.sq = sq, s.sk = sk, s.head_dim = 64;
      s.mask = mask_kind::causal_where;
      return s;
    };
    list.push_back({"gpt2 prefill b1 s128", gpt2(1, 128, 128)});
    list.push_back({"gpt2 prefill b8 s128", gpt2(8, 128, 128)});
    list.push_back({"gpt2 prefill b1 s1024", gpt2(1, 1024, 1024)});
    list.push_back({"gpt2 prefill b8 s1024", gpt2(8, 1024, 1024)});
    list.push_back({"gpt2 decode b1 past128", gpt2(1, 1, 129)});
    list.push_back({"gpt2 decode b1 past1024", gpt2(1, 1, 1025)});
    list.push_back({"gpt2 decode b4 past256", gpt2(4, 1, 257)});
    list.push_back({"gpt2 decode b8 past1024", gpt2(8, 1, 1025)});
    attention_spec bert = gpt2(32, 128, 128);
    bert.mask = mask_kind::bias, bert.split_scale = true;
    list.push_back({"bert b32 s128 padding bias", bert});
    bert.batch = 1;
    list.push_back({"bert b1 s128 padding bias", bert});
    attention_spec vit = gpt2(32, 197, 197);
    vit.mask = mask_kind::none;
    list.push_back({"vit b32 s197", vit});
    vit.batch = 1;
    list.push_back({"vit b1 s197", vit});
    attention_spec wide = gpt2(1, 512, 512);
    wide.head_dim = 128;
    list.push_back({"d128 b1 s512 causal", wide});
  }
  return list;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 50;
  const std::string only_name = argc > 2 ? argv[2] : "";
  const std::string only_type = argc > 3 ? argv[3] : "";
  if (runs <= 0) {
    std::fprintf(stderr, "usage: attention_bench [RUNS [NAME [DTYPE]]] (RUNS a positive count)\n");
    return 2;
  }
  if (coolbench::device::device::count() == 0) {
    std::fprintf(stderr, "attention_bench: no GPU\n");
    return 1;
  }
  const auto gpu = make_backend("cuda:0");
  std::printf("%s, %d runs after 5 warm-up runs\n\n", gpu->describe().c_str(), runs);
  std::printf(
      "| config | dtype | unfused ms | fused ms | graph ms | speed-up | fused TFLOP/s | fused GB/s "
      "| fma32 ms | fma64 ms | tf32x3 ms | mma ms | split_keys ms | decode_scalar ms | halves ms "
      "| decode_cluster ms | wgmma ms | wgmma_overlap ms | decode_vector ms | wgmma64 ms "
      "| general ms |\n");
  std::printf(
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  int measured = 0;
  for (const auto& c : configs()) {
    const attention_spec& s = c.spec;
    if (std::string(c.name).find(only_name) == std::string::npos ||
        (!only_type.empty() && to_string(s.type) != only_type)) {
      continue;
    }
    ++measured;
    const graph unfused = attention_graph(s);
    graph fused = unfused;
    const auto shapes = infer_shapes(fused);
    const auto counts = fuse_for_backend(fused, fusion_context{shapes, *gpu});
    if (!counts.contains("attention")) {
      std::fprintf(stderr, "%s: the pass did not fuse\n", c.name);
      return 1;
    }
    const double before = time_graph(unfused, *gpu, runs);
    const double after = time_graph(fused, *gpu, runs);
    const double graphed = time_session(unfused, runs);
    // Each kernel forced on the same data: tf32x3 is float32's alone, mma, split_keys, halves,
    // wgmma, wgmma_overlap and wgmma64 16-bit; decode_scalar (decode's kernel of an element a
    // load), decode_cluster (the chunks merged in a thread block cluster) and decode_vector (the
    // 16-byte kernel with the merge kernel) run decode alone, the others prefill alone.
    const char* const kernels[] = {"fma32",      "fma64",         "tf32x3",        "mma",
                                   "split_keys", "decode_scalar", "halves",        "decode_cluster",
                                   "wgmma",      "wgmma_overlap", "decode_vector", "wgmma64"};
    constexpr int k_forced = 12;
    std::string forced[k_forced];
    for (int k = 0; k < k_forced; ++k) {
      const char* kernel = kernels[k];
      const bool float32_kernel = k < 3, decode_kernel = k == 5 || k == 7 || k == 10;
      const bool runs_here = decode_kernel
                                 ? s.sq == 1
                                 : s.sq > 1 && (s.type == dtype::float32 ? float32_kernel : k != 2);
      if (!runs_here) {
        forced[k] = "-";
        continue;
      }
      ::setenv("COOLBENCH_ATTENTION_KERNEL", kernel, 1);
      char figure[32];
      std::snprintf(figure, sizeof figure, "%.4f", time_session(unfused, runs));
      forced[k] = figure;
    }
    ::unsetenv("COOLBENCH_ATTENTION_KERNEL");
    // The tensor-core kernels' scores in the general form, where the default took another
    // (no bias or mask, or a bias of whole 4-byte pairs: attention_mma.cu's score_form).
    std::string general = "-";
    if (s.type != dtype::float32 && s.sq > 1) {
      ::setenv("COOLBENCH_ATTENTION_SCORES", "general", 1);
      char figure[32];
      std::snprintf(figure, sizeof figure, "%.4f", time_session(unfused, runs));
      general = figure;
      ::unsetenv("COOLBENCH_ATTENTION_SCORES");
    }
    const bool causal_prefill = s.mask == mask_kind::causal_where && s.sq > 1;
    const double flops = 4.0 * static_cast<double>(s.batch * s.heads * s.sq * s.sk * s.head_dim) *
                         (causal_prefill ? 0.5 : 1.0);
    const double elements =
        static_cast<double>(s.batch * s.heads * s.head_dim * (2 * s.sq + 2 * s.sk));
    const double bytes = elements * static_cast<double>(size_of(s.type));
    std::printf(
        "| %s | %s | %.4f | %.4f | %.4f | %.2fx | %.2f | %.0f | %s | %s | %s | %s | %s | %s | %s "
        "| %s | %s | %s | %s | %s | %s |\n",
        c.name, std::string(to_string(s.type)).c_str(), before, after, graphed, before / after,
        flops / graphed / 1e9, bytes / graphed / 1e6, forced[0].c_str(), forced[1].c_str(),
        forced[2].c_str(), forced[3].c_str(), forced[4].c_str(), forced[5].c_str(),
        forced[6].c_str(), forced[7].c_str(), forced[8].c_str(), forced[9].c_str(),
        forced[10].c_str(), forced[11].c_str(), general.c_str());
  }
  if (measured == 0) {
    std::fprintf(stderr, "attention_bench: no configuration named like \"%s\"%s%s\n",
                 only_name.c_str(), only_type.empty() ? "" : " in ", only_type.c_str());
    return 2;
  }
  return 0;
}
