// coolbench.Attention on the GPU against the CPU backend running the
// unfused subgraph (seeded random q, k, v; float32, float16, bfloat16;
// causal and bias masks; 1 to 1024 queries, a past of 0 or 128 keys; head
// dims 64 and 128, and 36, 40, 80 and 96 below them; decode over pasts of
// 0, 1, 2, 37, 128 and 1000 keys at batch > 1; every allocation
// poisoned), each case on every kernel that can take it (the FMA kernel,
// and for 16-bit the tensor-core kernels with 64-row tiles and with split
// keys, and the Hopper wgmma kernels over their block edges too), and whole
// models fused on cuda:0 against the CPU. Needs a GPU
// (ctest label gpu); skips without one. Three test suites, each a ctest of
// its own (tests/engine/CMakeLists.txt): cuda_attention, cuda_attention_wgmma,
// cuda_attention_wgmma64 and cuda_attention_wgmma_overlap.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <span>

#include "coolbench/core/error.hpp"
#include "coolbench/device.hpp"
#include "coolbench/engine/model.hpp"
#include "coolbench/engine/passes.hpp"
#include "coolbench/engine/session.hpp"
#include "engine/attention_graphs.hpp"
#include "engine/backends/cuda/attention.hpp"
#include "engine/backends/cuda/backend.hpp"
#include "engine/backends/registry.hpp"
#include "engine/fusion/fusion.hpp"
#include "engine/gpu_present.hpp"

namespace coolbench::engine {
namespace {

using namespace attention_test;  // NOLINT(google-build-using-namespace)
using values = std::map<std::string, tensor>;

using testing_gpu::gpu_count;

class release_at_exit : public testing::Environment {
 public:
  void TearDown() override {
    if (gpu_count() > 0) static_cast<void>(device::device::get(0).release());
  }
};
const auto* const k_release = testing::AddGlobalTestEnvironment(new release_at_exit);

double element(const tensor& t, std::size_t i) {
  if (t.type() == dtype::float32) return t.data<float>()[i];
  std::uint16_t bits = 0;
  std::memcpy(&bits, t.raw().data() + i * 2, 2);
  return t.type() == dtype::float16 ? half_to_float(bits) : bfloat16_to_float(bits);
}

tensor random_tensor(dtype type, const shape_t& shape, std::mt19937& rng, float spread) {
  tensor t(type, shape);
  std::normal_distribution<float> normal(0, spread);
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

// Runs the nodes one by one on `b`: inputs and initializers copied in.
values run_nodes(const graph& g, const values& inputs, backend& b) {
  values all;
  for (const auto& [name, t] : g.initializers) all[name] = b.copy_in(t);
  for (const auto& [name, t] : inputs) all[name] = b.copy_in(t);
  for (const node& n : g.nodes) {
    std::vector<const tensor*> in;
    for (const auto& name : n.inputs) in.push_back(name.empty() ? nullptr : &all.at(name));
    std::vector<tensor> out(n.outputs.size());
    b.run(n, in, out);
    for (std::size_t i = 0; i < out.size(); ++i) all[n.outputs[i]] = std::move(out[i]);
  }
  values outputs;
  for (const auto& v : g.outputs) outputs[v.name] = b.copy_out(all.at(v.name));
  b.synchronize();
  b.end_run();
  return outputs;
}

std::size_t fuse_for(graph& g, backend& target, const symbol_bindings& bound = {}) {
  fold_constants(g, bound);
  remove_dead_nodes(g);
  const auto shapes = infer_shapes(g, bound);
  const auto counts = fuse_for_backend(g, fusion_context{shapes, target});
  const auto it = counts.find("attention");
  return it == counts.end() ? 0 : it->second;
}

// Tolerances: float32 differs by __expf and the summation order; the CPU
// rounds the 16-bit scores and probabilities, the kernels keep float32.
void expect_close(const tensor& got, const tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const double rel = want.type() == dtype::float32   ? 1e-3
                     : want.type() == dtype::float16 ? 1e-2
                                                     : 6e-2;
  const double abs = want.type() == dtype::float32 ? 1e-4 : rel;
  std::size_t bad = 0;
  double worst = 0;
  for (std::size_t i = 0; i < static_cast<std::size_t>(got.size()); ++i) {
    const double a = element(got, i), b = element(want, i);
    const double error = std::abs(a - b);
    if (std::isnan(a) != std::isnan(b) || error > abs + rel * std::abs(b)) ++bad;
    if (!std::isnan(error)) worst = std::max(worst, error);
  }
  EXPECT_EQ(bad, 0U) << what << ": max |difference| " << worst;
}

// "fma32" and "fma64" force the register-tiled FMA kernel with 32 or 64
// query rows a block for every dtype, "mma" the tensor-core kernel with
// 64-row tiles, "halves" the same with 8 warps in two groups walking
// alternate key tiles, "split_keys" the one with 16-row blocks whose warps
// split the keys (all 16-bit, sm_90), "tf32x3" float32's tensor-core kernel
// (sm_90); "default" lets the backend pick (launch_shapes.hpp). " general"
// runs the tensor-core kernels' scores in their general form (COOLBENCH_ATTENTION_SCORES),
// where by default no bias takes the plain form and a bias of an even Sk the bias_rows form.
const char* const k_kernels[] = {
    "default", "fma32",      "fma64",       "tf32x3",         "mma",
    "halves",  "split_keys", "mma general", "halves general", "split_keys general"};
// The Hopper kernels on wgmma (sm_90a; where attention_wgmma_fits, else the kernel the backend
// picks: head dims 36, the QKV views of head dim 36 and decode take that fallback here), each
// in a test suite of its own (a ctest of its own: tests/engine/CMakeLists.txt), so that no
// ctest of this binary nears its timeout: "wgmma" (each product waited for) and
// "wgmma_overlap" (each tile's softmax under the last tile's product with V); they take the
// mma kernels' three score forms (bias_rows where a bias of an even Sk allows).
const char* const k_wgmma_kernels[] = {"wgmma", "wgmma general"};
const char* const k_wgmma_overlap_kernels[] = {"wgmma_overlap", "wgmma_overlap general"};
// "wgmma64": the first on 64-key tiles, two blocks an SM at head dim 64.
const char* const k_wgmma64_kernels[] = {"wgmma64", "wgmma64 general"};

void select_kernel(const std::string& kernel) {
  const auto space = kernel.find(' ');
  const std::string name = kernel.substr(0, space);
  if (name == "default") {
    ::unsetenv("COOLBENCH_ATTENTION_KERNEL");
  } else {
    ::setenv("COOLBENCH_ATTENTION_KERNEL", name.c_str(), 1);
  }
  if (space != std::string::npos) {
    ::setenv("COOLBENCH_ATTENTION_SCORES", kernel.substr(space + 1).c_str(), 1);
  } else {
    ::unsetenv("COOLBENCH_ATTENTION_SCORES");
  }
}

struct kernel_case {
  std::int64_t sq, past, head_dim;
  mask_kind mask;
  bool mask_as_input;
  bool left_padded = false;
};

void check_kernel(const attention_spec& s, backend& cpu, cuda::cuda_backend& gpu,
                  const std::string& what, bool qkv_projection = false) {
  graph fused = qkv_projection ? qkv_projection_graph(s) : attention_graph(s);
  const graph unfused = fused;
  ASSERT_EQ(fuse_for(fused, gpu), 1U) << what;
  if (qkv_projection) {  // read and written in place: no head transposes, no split
    for (const node& n : fused.nodes) {
      EXPECT_TRUE(n.op_type != "Transpose" && n.op_type != "Split") << what << ": " << n.name;
    }
  }
  std::mt19937 rng(static_cast<unsigned>(s.sq * 131 + s.sk * 7 + s.head_dim));
  values inputs;
  for (const auto& v : unfused.inputs) {
    shape_t shape;
    for (const auto& d : v.shape) shape.push_back(d.value);
    if (v.type == dtype::boolean) {
      inputs[v.name] = future_mask(s.sq, s.sk, v.name == "future");
    } else {
      inputs[v.name] = random_tensor(v.type, shape, rng, v.name == "bias" ? 2.0F : 1.0F);
    }
  }
  if (s.left_padded) {
    tensor& bias = inputs.at("bias");
    const float lowest = s.type == dtype::float32   ? -3.4028235e38F
                         : s.type == dtype::float16 ? -65504.0F
                                                    : -3.3895314e38F;
    const tensor one = float_scalar(s.type, lowest);
    const std::size_t size = one.raw().size();
    for (std::int64_t row = 0; row < bias.size() / s.sk; ++row) {
      for (std::int64_t key = 0; key < s.sk / 2; ++key) {
        std::memcpy(bias.raw().data() + (row * s.sk + key) * static_cast<std::int64_t>(size),
                    one.raw().data(), size);
      }
    }
  }
  const values want = run_nodes(unfused, inputs, cpu);
  const values got = run_nodes(fused, inputs, gpu);
  expect_close(got.at("out"), want.at("out"), what);
}

// Every case of kernels_match_the_unfused_cpu_graph on each of `kernels` (forced).
void check_kernels_against_the_cpu(std::span<const char* const> kernels) {
  const auto cpu = make_backend("cpu");
  const auto gpu_backend = make_backend("cuda:0");
  auto& gpu = dynamic_cast<cuda::cuda_backend&>(*gpu_backend);
  gpu.poison_allocations(true);
  std::vector<kernel_case> cases;
  for (const std::int64_t sq : {1, 7, 128, 197, 1024}) {
    for (const std::int64_t past : {0, 128}) {
      for (const std::int64_t head_dim : {64, 128}) {
        for (const auto mask :
             {mask_kind::none, mask_kind::causal_where, mask_kind::causal_add, mask_kind::bias}) {
          if (sq == 1024 && (past > 0 || mask == mask_kind::none)) continue;  // CPU time
          cases.push_back({sq, past, head_dim, mask, mask == mask_kind::causal_add});
        }
      }
    }
  }
  // Head dims below the kernels' 64 and 128 (columns zero-filled; 36 is no
  // whole number of 16-byte pieces: one element a load), a mask input.
  cases.push_back({5, 0, 40, mask_kind::causal_where, true});
  cases.push_back({197, 0, 40, mask_kind::none, false});
  cases.push_back({128, 0, 80, mask_kind::causal_where, false});
  cases.push_back({7, 128, 80, mask_kind::bias, false});
  cases.push_back({33, 0, 36, mask_kind::causal_add, true});
  cases.push_back({1, 128, 40, mask_kind::none, false});
  // A head dim of 96 (Dim 128, 6 of its 8 k-steps real), a past of one key
  // before several queries, and one decode step after a single key.
  cases.push_back({65, 0, 96, mask_kind::causal_where, false});
  cases.push_back({7, 1, 64, mask_kind::causal_where, false});
  cases.push_back({17, 37, 80, mask_kind::causal_add, true});  // an odd past, partial tiles
  cases.push_back({1, 1, 96, mask_kind::causal_add, true});
  // A left-padded batch's bias at the dtype's lowest: the first tiles of keys hidden by a
  // finite value, so a row's running maximum sits there (-3.4e38 in bfloat16) until its first
  // visible key; an even Sk (the bias_rows form) and an odd one (general).
  for (const std::int64_t sq : {128, 197}) {
    for (const std::int64_t head_dim : {64, 128}) {
      cases.push_back({sq, 0, head_dim, mask_kind::bias, false, true});
    }
  }
  // The dynamo export's folded causal bias (float16: 0 and -65504), fused to the causal flag.
  cases.push_back({128, 0, 64, mask_kind::causal_folded_bias, false});
  cases.push_back({7, 128, 64, mask_kind::causal_folded_bias, false});
  // Every dtype on the kernel the backend picks, then on each kernel forced;
  // float32 runs the FMA kernels and tf32x3, the 16-bit dtypes all but tf32x3.
  for (const char* kernel : kernels) {
    select_kernel(kernel);
    const std::string name = kernel;
    for (const dtype type : {dtype::float32, dtype::float16, dtype::bfloat16}) {
      const bool float32_kernel = name == "default" || name.starts_with("fma") || name == "tf32x3";
      if (type == dtype::float32 ? !float32_kernel : name == "tf32x3") continue;
      for (const auto& c : cases) {
        attention_spec s;
        s.type = type, s.sq = c.sq, s.sk = c.sq + c.past, s.head_dim = c.head_dim;
        s.mask = c.mask, s.causal_as_input = c.mask_as_input;
        s.split_scale = c.mask == mask_kind::causal_add;
        s.left_padded = c.left_padded;
        const std::string what = std::string(kernel) + " " + std::string(to_string(type)) + " sq " +
                                 std::to_string(c.sq) + " past " + std::to_string(c.past) + " d " +
                                 std::to_string(c.head_dim) + " mask " +
                                 std::to_string(static_cast<int>(c.mask)) +
                                 (c.left_padded ? " left-padded" : "");
        check_kernel(s, *cpu, gpu, what);
      }
    }
  }
  select_kernel("default");
}

// A wgmma kernel (forced: "wgmma", "wgmma64" or "wgmma_overlap") over its block's edges:
// 128-row blocks of two 64-row warpgroups and 128-key (or 64-key) tiles, so query counts and
// pasts on either side of 64 and 128 (a warpgroup past sq, a partial last tile, the causal diagonal
// crossing a tile), at batch 2 x 3 heads, head dims 64 and 128, with no mask, the causal flag, a
// mask input and a bias, both 16-bit dtypes.
void check_wgmma_over_its_block_edges(const std::string& kernel) {
  const auto cpu = make_backend("cpu");
  const auto gpu_backend = make_backend("cuda:0");
  auto& gpu = dynamic_cast<cuda::cuda_backend&>(*gpu_backend);
  gpu.poison_allocations(true);
  select_kernel(kernel);
  for (const dtype type : {dtype::float16, dtype::bfloat16}) {
    for (const std::int64_t sq : {2, 63, 64, 65, 127, 128, 129, 300}) {
      for (const std::int64_t past : {0, 5, 200}) {
        for (const std::int64_t head_dim : {64, 128}) {
          for (const auto mask :
               {mask_kind::none, mask_kind::causal_where, mask_kind::causal_add, mask_kind::bias}) {
            attention_spec s;
            s.type = type, s.batch = 2, s.heads = 3, s.sq = sq, s.sk = sq + past;
            s.head_dim = head_dim, s.mask = mask;
            s.causal_as_input = mask == mask_kind::causal_add;
            s.split_scale = mask == mask_kind::causal_add;
            check_kernel(s, *cpu, gpu,
                         kernel + " " + std::string(to_string(type)) + " 2 x 3 sq " +
                             std::to_string(sq) + " past " + std::to_string(past) + " d " +
                             std::to_string(head_dim) + " mask " +
                             std::to_string(static_cast<int>(mask)));
          }
        }
      }
    }
  }
  select_kernel("default");
}

TEST(cuda_attention, many_batches_and_heads) {
  COOLBENCH_REQUIRE_GPU("the CUDA attention kernels");
  const auto cpu = make_backend("cpu");
  const auto gpu_backend = make_backend("cuda:0");
  auto& gpu = dynamic_cast<cuda::cuda_backend&>(*gpu_backend);
  gpu.poison_allocations(true);
  for (const std::int64_t sq : {1, 33}) {
    attention_spec s;
    s.batch = 8, s.heads = 96, s.sq = sq, s.sk = sq + 100, s.head_dim = 64;
    s.mask = mask_kind::bias;
    check_kernel(s, *cpu, gpu, "8 x 96 heads, sq " + std::to_string(sq));
  }
}

// One query row (decode: chunks of keys over blocks, then their merge) over
// pasts of 0, 1, 2, an odd 37, 128 and 1000 keys, at batch 3 x 5 heads (32-key
// chunks, the last one partial) and at 4 x 32 heads (256-key chunks), with
// every mask form, head dims 16, 40, 64, 80 and 128, in every dtype, on both
// decode kernels and with the chunks merged in a cluster.
TEST(cuda_attention, decode_over_past_lengths_and_batches) {
  COOLBENCH_REQUIRE_GPU("the CUDA attention kernels");
  const auto cpu = make_backend("cpu");
  const auto gpu_backend = make_backend("cuda:0");
  auto& gpu = dynamic_cast<cuda::cuda_backend&>(*gpu_backend);
  gpu.poison_allocations(true);
  ::unsetenv("COOLBENCH_ATTENTION_KERNEL");
  struct decode_case {
    std::int64_t batch, heads, past, head_dim;
  };
  std::vector<decode_case> cases;
  for (const std::int64_t past : {0, 1, 2, 37, 128, 1000}) {
    for (const std::int64_t head_dim : {16, 40, 64, 80, 128}) {
      cases.push_back({3, 5, past, head_dim});
    }
  }
  cases.push_back({4, 32, 1000, 64});
  // By default these layouts take the 16-byte kernel (lane groups of 4 to 32, the head dims of
  // 40 and 80 leaving lanes idle), its chunks merged in a thread block cluster of at most 8
  // where the grid is small (on sm_90: every 3 x 5 case here; after 1,000 keys 8 chunks of 128
  // keys where the plan has 32 of 32) and by the merge kernel otherwise (4 x 32 after 1,000
  // keys: 512 blocks); "decode_scalar" forces the kernel of an element a load, "decode_vector"
  // the 16-byte one with the merge kernel, "decode_cluster" the clusters (4 of 256 keys at
  // 4 x 32 too).
  for (const char* kernel : {"default", "decode_scalar", "decode_vector", "decode_cluster"}) {
    select_kernel(kernel);
    for (const dtype type : {dtype::float32, dtype::float16, dtype::bfloat16}) {
      for (const auto& c : cases) {
        for (const auto mask :
             {mask_kind::none, mask_kind::causal_where, mask_kind::causal_add, mask_kind::bias}) {
          attention_spec s;
          s.type = type, s.batch = c.batch, s.heads = c.heads, s.sq = 1, s.sk = 1 + c.past;
          s.head_dim = c.head_dim, s.mask = mask;
          s.causal_as_input = mask == mask_kind::causal_add;
          s.split_scale = mask == mask_kind::causal_add;
          check_kernel(s, *cpu, gpu,
                       std::string(kernel) + " decode " + std::string(to_string(type)) + " " +
                           std::to_string(c.batch) + " x " + std::to_string(c.heads) + " past " +
                           std::to_string(c.past) + " d " + std::to_string(c.head_dim) + " mask " +
                           std::to_string(static_cast<int>(mask)));
        }
      }
    }
  }
  select_kernel("default");
}

// The views form (the attention_layout pass): q, k and v read in place from
// one [B, S, 3·H·D] projection, the output written as [B, S, H·D]; 16-byte
// rows (head_dim 64, 128), rows of whole 16-byte pieces below them (40, 80)
// and rows that are not (36: heads at 72-byte steps, one element a load),
// an odd head count, every kernel.
// BERT's and ViT's three projections, merged into one FusedGemm (qkv_merge) whose output the
// attention reads at three column offsets: against the unfused graph on the CPU.
TEST(cuda_attention, three_projections_merged_match_the_cpu) {
  COOLBENCH_REQUIRE_GPU("the CUDA attention kernels and cuBLASLt");
  const auto cpu = make_backend("cpu");
  const auto gpu_backend = make_backend("cuda:0");
  auto& gpu = dynamic_cast<cuda::cuda_backend&>(*gpu_backend);
  gpu.poison_allocations(true);
  for (const dtype type : {dtype::float32, dtype::float16, dtype::bfloat16}) {
    for (const bool trans_b : {false, true}) {
      for (const std::int64_t sq : {7, 128}) {
        attention_spec s;
        s.type = type, s.batch = 2, s.heads = 4, s.sq = s.sk = sq, s.head_dim = 64;
        const std::string what = std::string(to_string(type)) + (trans_b ? " Gemm transB" : "") +
                                 " sq " + std::to_string(sq);
        const graph unfused = three_projections_graph(s, trans_b);
        graph fused = unfused;
        ASSERT_EQ(fuse_for(fused, gpu), 1U) << what;
        std::size_t products = 0;
        for (const node& n : fused.nodes) products += n.op_type == "FusedGemm" ? 1 : 0;
        EXPECT_EQ(products, 1U) << what << ": the three projections merged";
        std::mt19937 rng(static_cast<unsigned>(sq));
        values inputs;
        inputs["h"] = random_tensor(type, {s.batch, sq, s.heads * s.head_dim}, rng, 1.0F);
        const values want = run_nodes(unfused, inputs, *cpu);
        const values got = run_nodes(fused, inputs, gpu);
        expect_close(got.at("out"), want.at("out"), what);
      }
    }
  }
}

// The QKV projection's views on each of `kernels` (forced).
void check_qkv_views_against_the_cpu(std::span<const char* const> kernels) {
  const auto cpu = make_backend("cpu");
  const auto gpu_backend = make_backend("cuda:0");
  auto& gpu = dynamic_cast<cuda::cuda_backend&>(*gpu_backend);
  gpu.poison_allocations(true);
  struct shape_case {
    std::int64_t sq, heads, head_dim;
  };
  const shape_case shapes[] = {{1, 3, 64},    {7, 3, 40},    {128, 12, 64},
                               {197, 12, 64}, {200, 2, 128}, {33, 3, 80},
                               {33, 3, 36},   {65, 5, 96},   {1, 5, 80}};
  for (const char* kernel : kernels) {
    select_kernel(kernel);
    for (const dtype type : {dtype::float32, dtype::float16, dtype::bfloat16}) {
      for (const auto& c : shapes) {
        // The padding bias too: BERT reads it with its Q, K and V as such views.
        for (const auto mask : {mask_kind::none, mask_kind::causal_where, mask_kind::bias}) {
          attention_spec s;
          s.type = type, s.batch = 2, s.heads = c.heads, s.sq = c.sq, s.sk = c.sq;
          s.head_dim = c.head_dim, s.mask = mask;
          check_kernel(s, *cpu, gpu,
                       std::string(kernel) + " qkv " + std::string(to_string(type)) + " sq " +
                           std::to_string(c.sq) + " heads " + std::to_string(c.heads) + " d " +
                           std::to_string(c.head_dim) + " mask " +
                           std::to_string(static_cast<int>(mask)),
                       true);
        }
      }
    }
  }
  select_kernel("default");
}

TEST(cuda_attention, kernels_match_the_unfused_cpu_graph) {
  COOLBENCH_REQUIRE_GPU("the CUDA attention kernels");
  check_kernels_against_the_cpu(k_kernels);
}

TEST(cuda_attention, views_of_a_qkv_projection_match_the_cpu) {
  COOLBENCH_REQUIRE_GPU("the CUDA attention kernels");
  check_qkv_views_against_the_cpu(k_kernels);
}

TEST(cuda_attention_wgmma, kernels_match_the_unfused_cpu_graph) {
  COOLBENCH_REQUIRE_GPU("the CUDA attention kernels");
  check_kernels_against_the_cpu(k_wgmma_kernels);
}

TEST(cuda_attention_wgmma, views_of_a_qkv_projection_match_the_cpu) {
  COOLBENCH_REQUIRE_GPU("the CUDA attention kernels");
  check_qkv_views_against_the_cpu(k_wgmma_kernels);
}

TEST(cuda_attention_wgmma, kernel_over_its_block_edges) {
  COOLBENCH_REQUIRE_GPU("the CUDA attention kernels");
  check_wgmma_over_its_block_edges("wgmma");
}

// Not yet run on a GPU (attention_wgmma.cu on 64-key tiles).
TEST(cuda_attention_wgmma64, kernels_match_the_unfused_cpu_graph) {
  COOLBENCH_REQUIRE_GPU("the CUDA attention kernels");
  check_kernels_against_the_cpu(k_wgmma64_kernels);
}

TEST(cuda_attention_wgmma64, views_of_a_qkv_projection_match_the_cpu) {
  COOLBENCH_REQUIRE_GPU("the CUDA attention kernels");
  check_qkv_views_against_the_cpu(k_wgmma64_kernels);
}

TEST(cuda_attention_wgmma64, kernel_over_its_block_edges) {
  COOLBENCH_REQUIRE_GPU("the CUDA attention kernels");
  check_wgmma_over_its_block_edges("wgmma64");
}

// What the 64-key tiles are for: at head dim 64 two blocks an SM (128 registers a thread, 49 KB
// of shared memory each), where the 128-key kernel holds one; at head dim 128 one.
TEST(cuda_attention_wgmma64, two_blocks_an_sm_at_head_dim_64) {
  COOLBENCH_REQUIRE_GPU("the CUDA attention kernels");
  if (cuda::wgmma_attention_blocks_per_sm(dtype::float16, 64, true) == 0) {
    GTEST_SKIP() << "no sm_90a attention kernel here: the build has none (sm_90 is not among "
                    "its CUDA architectures) or the GPU is not of compute capability 9.0";
  }
  for (const dtype type : {dtype::float16, dtype::bfloat16}) {
    EXPECT_EQ(cuda::wgmma_attention_blocks_per_sm(type, 64, true), 2) << to_string(type);
    EXPECT_EQ(cuda::wgmma_attention_blocks_per_sm(type, 64, false), 1) << to_string(type);
    EXPECT_EQ(cuda::wgmma_attention_blocks_per_sm(type, 128, true), 1) << to_string(type);
  }
}

TEST(cuda_attention_wgmma_overlap, kernels_match_the_unfused_cpu_graph) {
  COOLBENCH_REQUIRE_GPU("the CUDA attention kernels");
  check_kernels_against_the_cpu(k_wgmma_overlap_kernels);
}

TEST(cuda_attention_wgmma_overlap, views_of_a_qkv_projection_match_the_cpu) {
  COOLBENCH_REQUIRE_GPU("the CUDA attention kernels");
  check_qkv_views_against_the_cpu(k_wgmma_overlap_kernels);
}

TEST(cuda_attention_wgmma_overlap, kernel_over_its_block_edges) {
  COOLBENCH_REQUIRE_GPU("the CUDA attention kernels");
  check_wgmma_over_its_block_edges("wgmma_overlap");
}

const std::filesystem::path k_models = COOLBENCH_TEST_MODELS;

tensor model_input(const value_info& v, const symbol_bindings& bound, std::mt19937& rng) {
  shape_t shape;
  for (const auto& d : v.shape) shape.push_back(d.value >= 0 ? d.value : bound.at(d.symbol));
  if (v.type != dtype::int64) return random_tensor(v.type, shape, rng, 1.0F);
  tensor t(dtype::int64, shape);
  std::uniform_int_distribution<std::int64_t> token(0, 90);
  auto x = t.data<std::int64_t>();
  for (std::size_t i = 0; i < x.size(); ++i) {
    const bool padded = static_cast<std::int64_t>(i) >= shape.back() &&
                        static_cast<std::int64_t>(i) % shape.back() >= shape.back() - 5;
    if (v.name.find("mask") != std::string::npos) {
      x[i] = padded ? 0 : 1;
    } else {
      x[i] = v.name.find("type") != std::string::npos ? token(rng) % 2 : token(rng);
    }
  }
  return t;
}

void expect_model_parity(const graph& original, const symbol_bindings& bound,
                         const std::string& what) {
  const auto gpu_backend = make_backend("cuda:0");
  graph fused = original;
  ASSERT_EQ(fuse_for(fused, *gpu_backend, bound), 2U) << what << ": one attention per layer";
  session_options options{bound};
  session cpu(original, options, "cpu");
  session gpu(fused, options, "cuda:0");
  std::mt19937 rng(5);
  for (const auto& v : original.inputs) {
    const tensor t = model_input(v, bound, rng);
    cpu.set_input(v.name, t);
    gpu.set_input(v.name, t);
  }
  cpu.run();
  gpu.run();
  for (const auto& out : original.outputs) {
    expect_close(gpu.output(out.name), cpu.output(out.name), what + " " + out.name);
  }
}

TEST(cuda_attention, fused_models_match_the_cpu) {
  COOLBENCH_REQUIRE_GPU("the CUDA attention kernels");
  const symbol_bindings text{{"batch", 2}, {"sequence", 16}};
  const std::vector<std::pair<const char*, symbol_bindings>> cases = {
      {"test_gpt2_torchscript_op18_nopast", text},
      {"test_gpt2_dynamo_op18_nopast", text},
      {"test_gpt2_torchscript_op18_past", {{"batch", 2}, {"sequence", 4}, {"past_sequence", 8}}},
      {"test_gpt2_dynamo_op18_past", {{"batch", 2}, {"sequence", 1}, {"past_sequence", 8}}},
      {"test_bert_torchscript_op14", text},
      {"test_bert_dynamo_op18", text},
      {"test_distilbert_torchscript_op18", text},
      {"test_vit_torchscript_op18", {{"batch", 2}}},
      {"test_vit_dynamo_op18", {{"batch", 2}}}};
  for (const auto& [folder, bound] : cases) {
    expect_model_parity(load_onnx(k_models / folder / "model.onnx"), bound, folder);
  }
  gpt2_config config;
  config.layers = 2, config.hidden = 128, config.heads = 2, config.vocab = 91;
  config.positions = 512, config.sequence = 300;
  expect_model_parity(parse_onnx(make_gpt2_model(config), ".", "gpt2.onnx"),
                      {{"batch", 2}, {"sequence", 300}}, "coolbench gpt2, head_dim 64, 300 tokens");
}

}  // namespace
}  // namespace coolbench::engine
