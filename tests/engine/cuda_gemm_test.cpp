// The CUDA backend's products against the CPU where the algorithm choice and
// the padded layouts change what runs: odd N and odd K in float32, float16
// and bfloat16, the lm_head's Gemm(transB) whose output rows break 16-byte
// alignment (computed into a padded scratch), Gemm's C accumulated in place,
// batched and broadcast MatMuls, FusedGemm with bias, GELU and residual
// epilogues over a padded weight (the aligned_weights pass), a transposed
// weight padded with zero rows, and a product by a Transpose read in place
// (the product_transpose pass); each with the algorithm timed and with the
// heuristic's first, which must agree. Then no
// timing while the stream is captured, none (and no failure) where the
// device has no memory left for it, the option's environment switch, and
// GPT-2 sessions with an odd vocabulary as CUDA graphs across releases.
// Then the skinny kernel for M of 1 to 8 (skinny_gemm.hpp), forced by
// COOLBENCH_GEMM_SKINNY=force: [K, N] and [N, K] weights over decode's sizes
// and odd ones, every epilogue, the lm_head, a CUDA graph replayed twice
// (its split-K counters must be back at 0), and timed beside cuBLASLt's (=1).
// Then Y's unaligned rows written in place in row phases (gemm_choice.hpp): forced
// (COOLBENCH_GEMM_ROW_PHASES=force) over odd N and few rows, by size (=1) on an exported
// lm_head at many tokens, and replayed in a CUDA graph.
// Allocations are poisoned with 0xFF bytes, so an element the padded copy
// (or a kernel) leaves unwritten fails. Needs a GPU (ctest label gpu); skips without one.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "coolbench/core/error.hpp"
#include "coolbench/device.hpp"
#include "coolbench/engine/session.hpp"
#include "engine/backends/cuda/backend.hpp"
#include "engine/backends/registry.hpp"
#include "engine/fusion_cases.hpp"
#include "engine/gpu_present.hpp"

namespace coolbench::engine {
namespace {

using namespace fusion_cases;  // NOLINT(google-build-using-namespace): the cases' vocabulary

using testing_gpu::gpu_count;

std::unique_ptr<backend> cuda_backend_with(bool tuning, bool poison = true) {
  auto b = make_cuda_backend(0);
  auto& cuda = dynamic_cast<cuda::cuda_backend&>(*b);
  cuda.poison_allocations(poison);
  cuda.set_product_tuning(tuning);
  return b;
}

// |got - want| <= atol + rtol (|want| + |added|) element by element: float32's
// product sums in another order, a 16-bit output rounds once either way.
// `added`, a term summed into the output after the product (a residual):
// the CPU rounds the product to 16 bits before the sum, the epilogue does
// not, so where the sum cancels the product's rounding is what differs.
void expect_close(const tensor& got, const tensor& want, const std::string& label,
                  const tensor* added = nullptr) {
  ASSERT_EQ(got.shape(), want.shape()) << label;
  ASSERT_EQ(got.type(), want.type()) << label;
  if (added != nullptr) {
    ASSERT_EQ(added->shape(), want.shape()) << label;
  }
  const bool wide = want.type() == dtype::float32;
  const double rtol = wide ? 1e-4 : 1e-2, atol = wide ? 1e-4 : 1e-2;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < static_cast<std::size_t>(want.size()); ++i) {
    const double a = get(got, i), b = get(want, i);
    const double scale = std::abs(b) + (added != nullptr ? std::abs(get(*added, i)) : 0.0);
    if (!(std::abs(a - b) <= atol + rtol * scale) && bad++ == 0) {
      ADD_FAILURE() << label << "[" << i << "]: cuda " << a << ", cpu " << b;
    }
  }
  EXPECT_EQ(bad, 0U) << label << ": elements out of tolerance";
}

// One product node over graph inputs in0, in1, ... with the given shapes.
struct product_case {
  std::string label;
  std::string op;
  std::vector<shape_t> inputs;
  shape_t output;
  std::map<std::string, attribute> attributes;
};

graph one_node(const product_case& c, dtype type) {
  graph g;
  g.name = c.label;
  g.opset = 20;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    names.push_back("in" + std::to_string(i));
    g.inputs.push_back(declared(names.back(), type, c.inputs[i]));
  }
  g.nodes.push_back(make_node(c.op, names, {"y"}, c.attributes));
  g.outputs = {declared("y", type, c.output)};
  return g;
}

// g's one node run on `gpu` into a recording, the inputs copied in first (the recording
// abandoned where the run throws): the device inputs, the output and the work to replay.
struct recorded_node {
  std::vector<tensor> inputs;
  std::vector<const tensor*> in;
  std::vector<tensor> out = std::vector<tensor>(1);
  std::unique_ptr<recorded_work> work;
};

recorded_node record_node(backend& gpu, const graph& g,
                          const std::map<std::string, tensor>& inputs) {
  recorded_node r;
  for (const auto& v : g.inputs) r.inputs.push_back(gpu.copy_in(inputs.at(v.name)));
  for (const auto& t : r.inputs) r.in.push_back(&t);
  gpu.prepare_recording();
  gpu.begin_recording();
  try {
    gpu.run(g.nodes[0], r.in, r.out);
  } catch (...) {
    gpu.abandon_recording();
    throw;
  }
  r.work = gpu.end_recording();
  return r;
}

std::map<std::string, tensor> case_inputs(const product_case& c, dtype type) {
  std::map<std::string, tensor> inputs;
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    // B scaled by 1/sqrt(K) keeps outputs near 1, where the tolerances mean something.
    const float scale = i == 1 ? 1.0F / std::sqrt(static_cast<float>(c.inputs[1].front())) : 1.0F;
    inputs["in" + std::to_string(i)] =
        random_tensor(type, c.inputs[i], 40 + static_cast<unsigned>(i), scale);
  }
  return inputs;
}

// Every FusedGemm of `fused` computed all of its weight's padded columns: N = 1001
// rounded to 16 bytes, 1004 in float32 and 1008 in 16 bits.
void expect_all_padded_columns_computed(const graph& fused, const backend& gpu, dtype type) {
  const std::string columns = type == dtype::float32 ? "1004" : "1008";
  for (const node& n : fused.nodes) {
    if (n.op_type != "FusedGemm") continue;
    const std::string detail = gpu.node_detail(n);
    EXPECT_NE(detail.find("all " + columns + " computed"), std::string::npos) << detail;
  }
}

std::vector<product_case> product_cases() {
  using attrs = std::map<std::string, attribute>;
  const attrs trans_b = {{"transB", std::int64_t{1}}};
  return {
      // B's rows unaligned (1001 columns): cuBLASLt's unaligned kernels, no padding.
      {"MatMul N 1001", "MatMul", {{128, 256}, {256, 1001}}, {128, 1001}, {}},
      // Odd K: A's rows unaligned.
      {"MatMul K 33", "MatMul", {{37, 33}, {33, 19}}, {37, 19}, {}},
      // The built-in lm_head: B [N, K] rows aligned, Y's rows not: a padded Y.
      {"Gemm transB N 1001", "Gemm", {{128, 256}, {1001, 256}}, {128, 1001}, trans_b},
      {"Gemm transB N 7", "Gemm", {{5, 64}, {7, 64}}, {5, 7}, trans_b},
      // C accumulated in place (Y starts as C, beta != 0), into the padded Y.
      {"Gemm transB C[N] beta 0.5",
       "Gemm",
       {{128, 256}, {1001, 256}, {1001}},
       {128, 1001},
       {{"transB", std::int64_t{1}}, {"alpha", 0.7F}, {"beta", 0.5F}}},
      {"Gemm transA transB C[M,N]",
       "Gemm",
       {{256, 64}, {999, 256}, {64, 999}},
       {64, 999},
       {{"transA", std::int64_t{1}}, {"transB", std::int64_t{1}}}},
      // Batched, broadcast, and broadcast along some batch dims only.
      {"MatMul batched N 29", "MatMul", {{3, 17, 64}, {3, 64, 29}}, {3, 17, 29}, {}},
      {"MatMul broadcast B", "MatMul", {{3, 17, 64}, {64, 29}}, {3, 17, 29}, {}},
      {"MatMul partial broadcast", "MatMul", {{2, 1, 5, 16}, {3, 16, 7}}, {2, 3, 5, 7}, {}},
  };
}

TEST(cuda_gemm, odd_products_match_the_cpu_timed_and_untimed) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  const auto cpu = make_backend("cpu");
  for (const dtype type : {dtype::float32, dtype::float16, dtype::bfloat16}) {
    for (const auto& c : product_cases()) {
      const std::string label = std::string(to_string(type)) + " " + c.label;
      SCOPED_TRACE(label);
      const graph g = one_node(c, type);
      const auto inputs = case_inputs(c, type);
      const tensor want = run_graph(g, *cpu, inputs).at("y");
      std::map<bool, tensor> got;
      for (const bool tuning : {true, false}) {
        const auto gpu = cuda_backend_with(tuning);
        got[tuning] = run_graph(g, *gpu, inputs).at("y");
        expect_close(got[tuning], want, label + (tuning ? " timed" : " heuristic"));
        const std::string detail = gpu->node_detail(g.nodes[0]);
        EXPECT_NE(detail.find("cuBLASLt algo"), std::string::npos) << detail;
        EXPECT_EQ(detail.find("gemm_autotune off") != std::string::npos, !tuning) << detail;
        // Every Gemm case has aligned A and B rows and unaligned Y rows; every
        // MatMul case's B rows are as unaligned as Y's (or A's are).
        EXPECT_EQ(detail.find("padded") != std::string::npos, c.op == "Gemm") << detail;
        std::printf("RECORD %s %s: %s\n", label.c_str(), tuning ? "timed" : "heuristic",
                    detail.c_str());
      }
      // The two choices may sum in another order: equal within the same tolerance.
      expect_close(got[true], got[false], label + " timed vs heuristic");
    }
  }
}

TEST(cuda_gemm, fused_epilogues_over_a_padded_weight_match_the_cpu) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  const auto cpu = make_backend("cpu");
  for (const dtype type : {dtype::float32, dtype::float16, dtype::bfloat16}) {
    for (const std::string tail : {"none", "relu", "gelu_new", "gelu", "residual"}) {
      for (const bool tuning : {true, false}) {
        const std::string label =
            std::string(to_string(type)) + " N 1001 " + tail + (tuning ? " timed" : " heuristic");
        SCOPED_TRACE(label);
        const graph g = gemm_graph(type, {2, 64, 256}, 1001, tail);
        const auto gpu = cuda_backend_with(tuning);
        graph fused = g;
        const auto counts = specialize_and_fuse(fused, *gpu);
        EXPECT_EQ(counts.count("gemm_epilogue"), 1U) << label;
        EXPECT_EQ(counts.count("aligned_weights"), 1U) << label;
        std::map<std::string, tensor> inputs{{"x", random_tensor(type, {2, 64, 256}, 3)}};
        if (tail == "residual") inputs["r"] = random_tensor(type, {2, 64, 1001}, 4);
        const auto want = run_graph(g, *cpu, inputs);
        const auto got = run_graph(fused, *gpu, inputs);
        const tensor* added = tail == "residual" ? &inputs.at("r") : nullptr;
        for (const auto& [name, w] : want) expect_close(got.at(name), w, label, added);
        for (const node& n : fused.nodes) {
          if (n.op_type != "FusedGemm") continue;
          EXPECT_EQ(n.get<std::int64_t>("b_columns", 0), 1001);
          const std::string detail = gpu->node_detail(n);
          EXPECT_NE(detail.find("padded from 1001 to"), std::string::npos) << detail;
        }
      }
    }
  }
}

TEST(cuda_gemm, a_transposed_weight_padded_with_zero_rows_is_computed_whole_and_matches_the_cpu) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  // The built-in GPT-2's lm_head in small: Gemm(x, w, transB) with w [1001, 256],
  // w also read by a Gather (a tied embedding), so the original stays beside the copy.
  const auto cpu = make_backend("cpu");
  for (const dtype type : {dtype::float32, dtype::float16, dtype::bfloat16}) {
    const std::string label(to_string(type));
    SCOPED_TRACE(label);
    graph g;
    g.name = "tied_head";
    g.opset = 20;
    g.inputs = {declared("x", type, {128, 256}), declared("ids", dtype::int64, {4})};
    g.initializers["w"] = random_tensor(type, {1001, 256}, 21, 1.0F / 16.0F);
    g.nodes.push_back(make_node("Gemm", {"x", "w"}, {"y"}, {{"transB", std::int64_t{1}}}));
    g.nodes.push_back(make_node("Gather", {"w", "ids"}, {"e"}));
    g.outputs = {declared("y", type, {128, 1001}), declared("e", type, {4, 256})};
    tensor ids(dtype::int64, {4});
    for (std::int64_t i = 0; i < 4; ++i) ids.data<std::int64_t>()[i] = i * 333;
    const std::map<std::string, tensor> inputs{{"x", random_tensor(type, {128, 256}, 22)},
                                               {"ids", ids}};
    const auto gpu = cuda_backend_with(true);
    graph fused = g;
    EXPECT_EQ(specialize_and_fuse(fused, *gpu).count("aligned_weights"), 1U);
    const auto want = run_graph(g, *cpu, inputs);
    const auto got = run_graph(fused, *gpu, inputs);
    for (const auto& [name, w] : want) expect_close(got.at(name), w, label + " " + name);
    expect_all_padded_columns_computed(fused, *gpu, type);
  }
}

TEST(cuda_gemm, a_product_by_a_transpose_reads_the_weight_in_place_and_matches_the_cpu) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  // The dynamo export's tied LM head in small: ids -> Gather(w) -> MatMul(., Transpose(w)),
  // w [1001, 128] (past the constant folder's 64 Ki elements, as GPT-2's wte is): the
  // product_transpose pass drops the Transpose, aligned_weights pads w to 1008 (1004) rows.
  const auto cpu = make_backend("cpu");
  for (const dtype type : {dtype::float32, dtype::float16, dtype::bfloat16}) {
    const std::string label(to_string(type));
    SCOPED_TRACE(label);
    graph g;
    g.name = "tied_head_by_transpose";
    g.opset = 20;
    g.inputs = {declared("ids", dtype::int64, {2, 64})};
    g.initializers["w"] = random_tensor(type, {1001, 128}, 31, 1.0F / 8.0F);
    g.nodes.push_back(make_node("Gather", {"w", "ids"}, {"e"}));
    g.nodes.push_back(
        make_node("Transpose", {"w"}, {"wt"}, {{"perm", std::vector<std::int64_t>{1, 0}}}));
    g.nodes.push_back(make_node("MatMul", {"e", "wt"}, {"y"}));
    g.outputs = {declared("y", type, {2, 64, 1001})};
    tensor ids(dtype::int64, {2, 64});
    for (std::int64_t i = 0; i < 128; ++i) ids.data<std::int64_t>()[i] = (i * 37) % 1001;
    const std::map<std::string, tensor> inputs{{"ids", ids}};
    const auto gpu = cuda_backend_with(true);
    graph fused = g;
    const auto counts = specialize_and_fuse(fused, *gpu);
    EXPECT_EQ(counts.count("product_transpose"), 1U);
    EXPECT_EQ(counts.count("aligned_weights"), 1U);
    for (const node& n : fused.nodes) EXPECT_NE(n.op_type, "Transpose");
    const auto want = run_graph(g, *cpu, inputs);
    const auto got = run_graph(fused, *gpu, inputs);
    expect_close(got.at("y"), want.at("y"), label);
    expect_all_padded_columns_computed(fused, *gpu, type);
  }
}

TEST(cuda_gemm, nothing_is_timed_while_the_stream_is_captured) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  // A signature no other test uses; its blocks made first by an untimed
  // backend, so the captured run's allocations come from the device
  // layer's cache (a capture may not allocate device memory).
  const product_case c{
      "captured", "Gemm", {{96, 128}, {333, 128}}, {96, 333}, {{"transB", std::int64_t{1}}}};
  const graph g = one_node(c, dtype::float16);
  const auto inputs = case_inputs(c, dtype::float16);
  const auto cpu = make_backend("cpu");
  const tensor want = run_graph(g, *cpu, inputs).at("y");
  {
    const auto warm = cuda_backend_with(false, false);
    static_cast<void>(run_graph(g, *warm, inputs));
  }
  const auto gpu = cuda_backend_with(true, false);
  recorded_node rec = record_node(*gpu, g, inputs);
  const auto& in = rec.in;
  auto& out = rec.out;
  const auto& work = rec.work;
  EXPECT_NE(gpu->node_detail(g.nodes[0]).find("not timed: the stream was being captured"),
            std::string::npos)
      << gpu->node_detail(g.nodes[0]);
  work->launch();
  gpu->synchronize();
  expect_close(gpu->copy_out(out[0]), want, "captured");
  // The next uncaptured run times the signature.
  std::vector<tensor> eager(1);
  gpu->run(g.nodes[0], in, eager);
  const std::string detail = gpu->node_detail(g.nodes[0]);
  EXPECT_EQ(detail.find("not timed"), std::string::npos) << detail;
  expect_close(gpu->copy_out(eager[0]), want, "after the capture");
  gpu->end_run();
}

// Device memory taken by the test itself (cudaMalloc, around the device
// layer) until no more than `left` bytes and a MiB remain free; freed again
// when it goes.
class memory_fill {
 public:
  explicit memory_fill(std::size_t left) {
    for (std::size_t piece = std::size_t{1} << 30; piece >= (std::size_t{1} << 20); piece /= 2) {
      for (;;) {
        std::size_t free = 0, total = 0;
        if (cudaMemGetInfo(&free, &total) != cudaSuccess || free < left + piece) break;
        void* block = nullptr;
        if (cudaMalloc(&block, piece) != cudaSuccess) {
          static_cast<void>(cudaGetLastError());
          break;
        }
        m_blocks.push_back(block);
      }
    }
  }
  ~memory_fill() {
    for (void* block : m_blocks) static_cast<void>(cudaFree(block));
  }
  memory_fill(const memory_fill&) = delete;
  memory_fill& operator=(const memory_fill&) = delete;
  memory_fill(memory_fill&&) = delete;
  memory_fill& operator=(memory_fill&&) = delete;

 private:
  std::vector<void*> m_blocks;
};

// Timing takes an L2-sized flush block; on a device with less free memory
// than that the product runs untimed (the heuristic's first) instead of
// failing, and says so.
TEST(cuda_gemm, a_product_runs_untimed_where_timing_finds_no_memory) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  const auto cpu = make_backend("cpu");
  // A signature no other test uses, N = 40 halves: aligned, no padded Y.
  const product_case c{
      "no memory to time", "Gemm", {{48, 64}, {40, 64}}, {48, 40}, {{"transB", std::int64_t{1}}}};
  const graph g = one_node(c, dtype::float16);
  const auto inputs = case_inputs(c, dtype::float16);
  const tensor want = run_graph(g, *cpu, inputs).at("y");
  const auto gpu = cuda_backend_with(true, false);
  // Its cuBLASLt handle and workspace made by another product first, then
  // the device layer's cached blocks (that product's flush among them) freed.
  const product_case warm = product_cases()[3];
  static_cast<void>(
      run_graph(one_node(warm, dtype::float16), *gpu, case_inputs(warm, dtype::float16)));
  gpu->end_run();
  gpu->trim();
  int l2_bytes = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, 0), cudaSuccess);
  tensor got;
  std::string detail;
  {
    const memory_fill fill(static_cast<std::size_t>(l2_bytes) / 4);
    got = run_graph(g, *gpu, inputs).at("y");
    detail = gpu->node_detail(g.nodes[0]);
    gpu->end_run();
  }
  EXPECT_NE(detail.find("not timed: no device memory left for timing"), std::string::npos)
      << detail;
  expect_close(got, want, "untimed for want of memory");
}

TEST(cuda_gemm, the_environment_turns_tuning_off) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  const auto gpu = make_cuda_backend(0);
  auto& cuda = dynamic_cast<cuda::cuda_backend&>(*gpu);
  EXPECT_TRUE(cuda.product_tuning());
  ::setenv("COOLBENCH_GEMM_AUTOTUNE", "0", 1);
  EXPECT_FALSE(cuda.product_tuning());
  ::setenv("COOLBENCH_GEMM_AUTOTUNE", "1", 1);
  EXPECT_TRUE(cuda.product_tuning());
  ::unsetenv("COOLBENCH_GEMM_AUTOTUNE");
  cuda.set_product_tuning(false);
  EXPECT_FALSE(cuda.product_tuning());
}

graph odd_vocabulary_gpt2(dtype type) {
  gpt2_config config;
  config.layers = 2;
  config.hidden = 64;
  config.heads = 4;
  config.vocab = 1001;  // rows of 1001 halves: the logits are padded
  config.positions = 64;
  config.sequence = 16;
  config.element_type = type;
  return parse_onnx(make_gpt2_model(config), ".", "gpt2.onnx");
}

void set_tokens(session& s) {
  tensor ids(dtype::int64, {1, 16});
  for (std::int64_t i = 0; i < 16; ++i) ids.data<std::int64_t>()[i] = (i * 37) % 1001;
  s.set_input(s.inputs().at(0).name, ids);
}

bool same_bytes(const tensor& a, const tensor& b) {
  return a.type() == b.type() && a.shape() == b.shape() &&
         std::memcmp(a.raw().data(), b.raw().data(), a.bytes()) == 0;
}

TEST(cuda_gemm, gpt2_graph_sessions_run_timed_and_release) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  for (const dtype type : {dtype::float32, dtype::float16}) {
    SCOPED_TRACE(std::string(to_string(type)));
    session_options untimed_options;
    untimed_options.gemm_autotune = false;
    session timed(odd_vocabulary_gpt2(type), "cuda:0");
    session untimed(odd_vocabulary_gpt2(type), untimed_options, "cuda:0");
    for (session* s : {&timed, &untimed}) {
      set_tokens(*s);
      for (int i = 0; i < 3; ++i) s->run();  // record, capture, replay
      EXPECT_EQ(s->execution().mode, execution_mode::graph) << s->execution().reason;
    }
    const tensor first = timed.output(0);
    expect_close(first, untimed.output(0), "timed vs heuristic session");
    if (type == dtype::float32) {
      session cpu(odd_vocabulary_gpt2(type));
      set_tokens(cpu);
      cpu.run();
      const tensor& want = cpu.output(0);
      for (std::size_t i = 0; i < static_cast<std::size_t>(want.size()); ++i) {
        ASSERT_NEAR(get(first, i), get(want, i), 1e-3) << i;
      }
    }
    // What each product chose, as coolbench nodes shows it.
    bool lm_head_padded = false;
    for (const auto& t : timed.node_times(2)) {
      if (t.op_type == "Gemm" || t.op_type == "FusedGemm" || t.op_type == "MatMul") {
        EXPECT_NE(t.detail.find("cuBLASLt algo"), std::string::npos) << t.name;
        std::printf("RECORD %s %s: %s\n", t.name.c_str(), t.op_type.c_str(), t.detail.c_str());
      }
      lm_head_padded = lm_head_padded || t.detail.find("padded from 1001") != std::string::npos;
    }
    // 1001 columns are 4004 or 2002 bytes a row; wte's rows (the transposed
    // B) are 64 wide: the logits are computed padded in both dtypes.
    EXPECT_TRUE(lm_head_padded);
    // A device release drops the descriptors; the choices stay, so the same bytes.
    const auto report = device::device::get(0).release();
    EXPECT_TRUE(report.released) << report.note;
    timed.run();
    EXPECT_TRUE(same_bytes(timed.output(0), first));
    timed.release();
    set_tokens(timed);
    timed.run();
    EXPECT_TRUE(same_bytes(timed.output(0), first));
    EXPECT_EQ(timed.execution().mode, execution_mode::graph) << timed.execution().reason;
  }
}

// An environment variable set for the scope (products made meanwhile read it), unset after.
class env_set {
 public:
  env_set(const char* name, const char* value) : m_name(name) { ::setenv(name, value, 1); }
  ~env_set() { ::unsetenv(m_name); }
  env_set(const env_set&) = delete;
  env_set& operator=(const env_set&) = delete;
  env_set(env_set&&) = delete;
  env_set& operator=(env_set&&) = delete;

 private:
  const char* m_name;
};

// COOLBENCH_GEMM_SKINNY set for the scope.
struct skinny_mode_set : env_set {
  explicit skinny_mode_set(const char* value) : env_set("COOLBENCH_GEMM_SKINNY", value) {}
};

bool ran_skinny(const std::string& detail) {
  return detail.rfind("skinny kernel", 0) == 0;  // the choice leads the detail
}

// x [M, K] times W [K, N] (MatMul) or W [N, K] (Gemm, transB), W scaled by 1/sqrt(K) so
// that the outputs stay near 1.
product_case skinny_case(std::int64_t m, std::int64_t k, std::int64_t n, bool trans_b) {
  const std::string sizes =
      " M " + std::to_string(m) + " K " + std::to_string(k) + " N " + std::to_string(n);
  if (trans_b) {
    return {"Gemm transB" + sizes, "Gemm", {{m, k}, {n, k}}, {m, n}, {{"transB", std::int64_t{1}}}};
  }
  return {"MatMul" + sizes, "MatMul", {{m, k}, {k, n}}, {m, n}, {}};
}

std::map<std::string, tensor> skinny_inputs(const product_case& c, dtype type, std::int64_t k) {
  std::map<std::string, tensor> inputs;
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    const float scale = i == 1 ? 1.0F / std::sqrt(static_cast<float>(k)) : 1.0F;
    inputs["in" + std::to_string(i)] =
        random_tensor(type, c.inputs[i], 60 + static_cast<unsigned>(i), scale);
  }
  return inputs;
}

// A case's graph (one_node), its inputs (skinny_inputs) and the CPU's output.
struct cpu_answer {
  graph g;
  std::map<std::string, tensor> inputs;
  tensor want;
};

cpu_answer answer_on_cpu(backend& cpu, const product_case& c, dtype type, std::int64_t k) {
  cpu_answer answer{one_node(c, type), skinny_inputs(c, type, k), tensor()};
  answer.want = run_graph(answer.g, cpu, answer.inputs).at("y");
  return answer;
}

TEST(cuda_gemm, the_skinny_kernel_forced_matches_the_cpu) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  const skinny_mode_set forced("force");
  const auto cpu = make_backend("cpu");
  const auto gpu = cuda_backend_with(false);
  for (const dtype type : {dtype::float16, dtype::bfloat16, dtype::float32}) {
    for (const std::int64_t m : {1, 2, 5, 8}) {
      // K of 100: not a whole number of the splits' 8-row steps, nor of 16-byte pieces.
      for (const std::int64_t k : {8, 64, 768, 3072, 100}) {
        for (const std::int64_t n : {8, 768, 2304, 3072}) {
          for (const bool trans_b : {false, true}) {
            const product_case c = skinny_case(m, k, n, trans_b);
            const std::string label = std::string(to_string(type)) + " " + c.label;
            SCOPED_TRACE(label);
            const auto [g, inputs, want] = answer_on_cpu(*cpu, c, type, k);
            expect_close(run_graph(g, *gpu, inputs).at("y"), want, label);
            // [N, K] rows of 100 halves (200 bytes) are off 16-byte boundaries: cuBLASLt's.
            const bool fits = !(trans_b && k == 100 && type != dtype::float32);
            const std::string detail = gpu->node_detail(g.nodes[0]);
            EXPECT_EQ(ran_skinny(detail), fits) << detail;
          }
        }
      }
    }
  }
}

TEST(cuda_gemm, the_skinny_kernel_forced_computes_the_lm_head) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  const skinny_mode_set forced("force");
  const auto cpu = make_backend("cpu");
  const auto gpu = cuda_backend_with(false);
  for (const dtype type : {dtype::float16, dtype::bfloat16}) {
    for (const std::int64_t m : {1, 8}) {
      // The padded wte (whole 16-byte rows of Y), and the vocabulary itself: Y's rows of 50257
      // halves go through run_product's padded scratch, the kernel computing 50257 of them.
      for (const std::int64_t n : {50264, 50257}) {
        const product_case c = skinny_case(m, 768, n, true);
        const std::string label = std::string(to_string(type)) + " lm_head " + c.label;
        SCOPED_TRACE(label);
        const auto [g, inputs, want] = answer_on_cpu(*cpu, c, type, 768);
        expect_close(run_graph(g, *gpu, inputs).at("y"), want, label);
        const std::string detail = gpu->node_detail(g.nodes[0]);
        EXPECT_TRUE(ran_skinny(detail)) << detail;
        EXPECT_EQ(detail.find("padded from 50257") != std::string::npos, n == 50257) << detail;
      }
    }
  }
}

TEST(cuda_gemm, the_skinny_kernel_forced_applies_every_epilogue_as_the_cpu) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  const skinny_mode_set forced("force");
  const auto cpu = make_backend("cpu");
  const auto gpu = cuda_backend_with(false);
  const std::pair<std::int64_t, std::int64_t> sizes[] = {{768, 2304}, {3072, 768}, {64, 8}};
  for (const dtype type : {dtype::float16, dtype::bfloat16, dtype::float32}) {
    for (const std::int64_t m : {1, 5, 8}) {
      for (const auto& [k, n] : sizes) {
        // FusedGemm: bias always, then ReLU, GELU (the exporters' tanh form and the op's),
        // or a residual (C apart from Y, beta 1).
        for (const std::string tail : {"none", "relu", "gelu_new", "gelu_tanh_op", "residual"}) {
          const std::string label = std::string(to_string(type)) + " M " + std::to_string(m) +
                                    " K " + std::to_string(k) + " N " + std::to_string(n) + " " +
                                    tail;
          SCOPED_TRACE(label);
          const graph g = gemm_graph(type, {m, k}, n, tail);
          graph fused = g;
          EXPECT_EQ(specialize_and_fuse(fused, *gpu).count("gemm_epilogue"), 1U);
          std::map<std::string, tensor> inputs{{"x", random_tensor(type, {m, k}, 5)}};
          if (tail == "residual") inputs["r"] = random_tensor(type, {m, n}, 6);
          const auto want = run_graph(g, *cpu, inputs);
          const auto got = run_graph(fused, *gpu, inputs);
          const tensor* added = tail == "residual" ? &inputs.at("r") : nullptr;
          for (const auto& [name, w] : want) expect_close(got.at(name), w, label, added);
          for (const node& product_node : fused.nodes) {
            if (product_node.op_type != "FusedGemm") continue;
            EXPECT_TRUE(ran_skinny(gpu->node_detail(product_node)))
                << gpu->node_detail(product_node);
          }
        }
        // Gemm's alpha and beta, C in Y (Y starts as C): [N] broadcast and [M, N].
        for (const bool full_c : {false, true}) {
          const std::map<std::string, attribute> attributes = {
              {"transB", std::int64_t{full_c ? 1 : 0}}, {"alpha", 0.7F}, {"beta", 0.5F}};
          const shape_t w_shape = full_c ? shape_t{n, k} : shape_t{k, n};
          const shape_t c_shape = full_c ? shape_t{m, n} : shape_t{n};
          const product_case c{
              std::string(full_c ? "Gemm transB C[M,N]" : "Gemm C[N]") + " alpha 0.7 beta 0.5",
              "Gemm",
              {{m, k}, w_shape, c_shape},
              {m, n},
              attributes};
          const std::string label = std::string(to_string(type)) + " M " + std::to_string(m) +
                                    " K " + std::to_string(k) + " N " + std::to_string(n) + " " +
                                    c.label;
          SCOPED_TRACE(label);
          const auto [g, inputs, want] = answer_on_cpu(*cpu, c, type, k);
          // C [M, N] is a term summed after the product (the tolerance's `added`).
          expect_close(run_graph(g, *gpu, inputs).at("y"), want, label,
                       full_c ? &inputs.at("in2") : nullptr);
          EXPECT_TRUE(ran_skinny(gpu->node_detail(g.nodes[0]))) << gpu->node_detail(g.nodes[0]);
        }
      }
    }
  }
}

TEST(cuda_gemm, the_skinny_kernel_in_a_cuda_graph_replays_with_its_counters_back_at_zero) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  const skinny_mode_set forced("force");
  const auto cpu = make_backend("cpu");
  // K of 3072 is 3 splits at least (1,024 rows a block at most) on any GPU, more on most:
  // each tile's last block sums them and must leave its counter at 0 for the next replay.
  for (const bool trans_b : {false, true}) {
    const product_case c = skinny_case(8, 3072, 768, trans_b);
    SCOPED_TRACE(c.label);
    const graph g = one_node(c, dtype::float16);
    const auto inputs = skinny_inputs(c, dtype::float16, 3072);
    const tensor want = run_graph(g, *cpu, inputs).at("y");
    {  // the blocks the captured run allocates, cached by an eager run first
      const auto warm = cuda_backend_with(false, false);
      static_cast<void>(run_graph(g, *warm, inputs));
    }
    const auto gpu = cuda_backend_with(false, false);
    recorded_node rec = record_node(*gpu, g, inputs);
    const auto& in = rec.in;
    auto& out = rec.out;
    const auto& work = rec.work;
    const std::string detail = gpu->node_detail(g.nodes[0]);
    ASSERT_TRUE(ran_skinny(detail)) << detail;
    EXPECT_EQ(detail.find("split K 1 "), std::string::npos) << detail;
    for (int replay = 0; replay < 2; ++replay) {
      // NaN in Y first: a tile whose last block did not see the others' arrivals (a counter
      // left above 0) is never stored, and fails.
      ASSERT_EQ(cudaMemsetAsync(out[0].device_data(), 0xFF, out[0].bytes(),
                                static_cast<cudaStream_t>(gpu->stream())),
                cudaSuccess);
      work->launch();
      gpu->synchronize();
      expect_close(gpu->copy_out(out[0]), want, "replay " + std::to_string(replay));
    }
    std::vector<tensor> eager(1);
    gpu->run(g.nodes[0], in, eager);
    expect_close(gpu->copy_out(eager[0]), want, "eager after the replays");
    gpu->end_run();
  }
}

TEST(cuda_gemm, the_skinny_kernel_is_timed_beside_cublaslt) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  const skinny_mode_set timed("1");
  const auto cpu = make_backend("cpu");
  for (const std::int64_t m : {1, 8}) {
    const product_case c = skinny_case(m, 768, 2304, false);
    SCOPED_TRACE(c.label);
    const graph g = one_node(c, dtype::float16);
    const auto inputs = skinny_inputs(c, dtype::float16, 768);
    const tensor want = run_graph(g, *cpu, inputs).at("y");
    for (const bool tuning : {true, false}) {
      const auto gpu = cuda_backend_with(tuning);
      expect_close(run_graph(g, *gpu, inputs).at("y"), want, tuning ? "timed" : "untimed");
      const std::string detail = gpu->node_detail(g.nodes[0]);
      std::printf("RECORD skinny timed %s %s: %s\n", c.label.c_str(), tuning ? "timed" : "untimed",
                  detail.c_str());
      if (tuning) {  // chosen, or named with its time beside cuBLASLt's choice
        EXPECT_TRUE(ran_skinny(detail) || detail.find("the skinny kernel ") != std::string::npos)
            << detail;
      } else {  // untimed: the heuristic's first, as without the kernel
        EXPECT_NE(detail.find("gemm_autotune off"), std::string::npos) << detail;
      }
    }
  }
}

// COOLBENCH_GEMM_ROW_PHASES set for the scope.
struct row_phase_mode_set : env_set {
  explicit row_phase_mode_set(const char* value) : env_set("COOLBENCH_GEMM_ROW_PHASES", value) {}
};

bool ran_in_row_phases(const std::string& detail) {
  return detail.find("row phases") != std::string::npos;
}

TEST(cuda_gemm, row_phases_forced_write_unaligned_rows_in_place_and_match_the_cpu) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  // Gemm(x, w, transB): Y's rows of N = 1001, 15 or 30522 break the 16-byte alignment; forced,
  // every product takes the phases (fewer rows than phases included), the edges' kernel the
  // columns at the rows' ends. Allocations start as 0xFF bytes (NaN): an element no part
  // writes fails. With C (beta != 0) the product keeps the padded scratch.
  const row_phase_mode_set forced("force");
  const auto cpu = make_backend("cpu");
  for (const dtype type : {dtype::float16, dtype::bfloat16, dtype::float32}) {
    for (const std::int64_t m : {1, 5, 13, 128}) {
      for (const std::int64_t k : {64, 264}) {
        for (const std::int64_t n : {15, 1001, 30522}) {
          if (n == 30522 && m != 13) continue;
          const product_case c = skinny_case(m, k, n, true);
          const std::string label = std::string(to_string(type)) + " " + c.label;
          SCOPED_TRACE(label);
          const auto [g, inputs, want] = answer_on_cpu(*cpu, c, type, k);
          for (const bool tuning : {true, false}) {
            const auto gpu = cuda_backend_with(tuning);
            expect_close(run_graph(g, *gpu, inputs).at("y"), want, label);
            const std::string detail = gpu->node_detail(g.nodes[0]);
            // Every case's rows break the alignment (float32 rows of 30522 are 122088 bytes, 8
            // past a 16-byte step: 2 phases), so each takes the phases.
            EXPECT_TRUE(ran_in_row_phases(detail)) << detail;
          }
        }
      }
    }
  }
  for (const dtype type : {dtype::float16, dtype::float32}) {
    const product_case c{"Gemm transB C[N] beta 0.5",
                         "Gemm",
                         {{128, 256}, {1001, 256}, {1001}},
                         {128, 1001},
                         {{"transB", std::int64_t{1}}, {"alpha", 0.7F}, {"beta", 0.5F}}};
    const graph g = one_node(c, type);
    const auto inputs = case_inputs(c, type);
    const auto gpu = cuda_backend_with(true);
    expect_close(run_graph(g, *gpu, inputs).at("y"), run_graph(g, *cpu, inputs).at("y"), c.label);
    const std::string detail = gpu->node_detail(g.nodes[0]);
    EXPECT_FALSE(ran_in_row_phases(detail)) << detail;
    EXPECT_NE(detail.find("padded from 1001"), std::string::npos) << detail;
  }
}

TEST(cuda_gemm, an_exported_lm_head_at_many_tokens_takes_the_row_phases_by_size) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  const row_phase_mode_set by_size("1");
  // MatMul(x, w), x [4, 1024, 64], w [64, 1001] (an exported, untied lm_head in small): the
  // aligned_weights pass copies w transposed and padded, and 4,096 rows are 512 a phase in 16
  // bits (8 phases) and 1,024 in float32 (4): the phases (COOLBENCH_GEMM_ROW_PHASES=1), the
  // batch flattened into rows. At 4 x 128 tokens (64 a phase) the padded scratch, as before.
  const auto cpu = make_backend("cpu");
  for (const dtype type : {dtype::float16, dtype::bfloat16, dtype::float32}) {
    for (const std::int64_t sequence : {1024, 128}) {
      const std::string label = std::string(to_string(type)) + " 4 x " + std::to_string(sequence);
      SCOPED_TRACE(label);
      graph g;
      g.name = "exported_head";
      g.opset = 20;
      g.inputs = {declared("x", type, {4, sequence, 64})};
      g.initializers["w"] = random_tensor(type, {64, 1001}, 23, 1.0F / 8.0F);
      g.nodes.push_back(make_node("MatMul", {"x", "w"}, {"y"}));
      g.outputs = {declared("y", type, {4, sequence, 1001})};
      const std::map<std::string, tensor> inputs{{"x", random_tensor(type, {4, sequence, 64}, 24)}};
      const auto gpu = cuda_backend_with(true);
      graph fused = g;
      EXPECT_EQ(specialize_and_fuse(fused, *gpu).count("aligned_weights"), 1U);
      ASSERT_EQ(fused.nodes.size(), 1U);
      EXPECT_EQ(fused.nodes[0].get<std::int64_t>("transB", 0), 1);
      expect_close(run_graph(fused, *gpu, inputs).at("y"), run_graph(g, *cpu, inputs).at("y"),
                   label);
      const std::string detail = gpu->node_detail(fused.nodes[0]);
      std::printf("RECORD row phases %s: %s\n", label.c_str(), detail.c_str());
      EXPECT_EQ(ran_in_row_phases(detail), sequence == 1024) << detail;
    }
  }
}

TEST(cuda_gemm, row_phases_in_a_cuda_graph_replay_and_write_every_element) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  const row_phase_mode_set forced("force");
  const auto cpu = make_backend("cpu");
  for (const dtype type : {dtype::float16, dtype::float32}) {
    const product_case c = skinny_case(37, 256, 1001, true);
    SCOPED_TRACE(std::string(to_string(type)));
    const auto [g, inputs, want] = answer_on_cpu(*cpu, c, type, 256);
    {  // the algorithms timed by an eager run first: no timing while captured
      const auto warm = cuda_backend_with(true, false);
      static_cast<void>(run_graph(g, *warm, inputs));
    }
    const auto gpu = cuda_backend_with(true, false);
    recorded_node rec = record_node(*gpu, g, inputs);
    const std::string detail = gpu->node_detail(g.nodes[0]);
    ASSERT_TRUE(ran_in_row_phases(detail)) << detail;
    for (int replay = 0; replay < 2; ++replay) {
      ASSERT_EQ(cudaMemsetAsync(rec.out[0].device_data(), 0xFF, rec.out[0].bytes(),
                                static_cast<cudaStream_t>(gpu->stream())),
                cudaSuccess);
      rec.work->launch();
      gpu->synchronize();
      expect_close(gpu->copy_out(rec.out[0]), want, "replay " + std::to_string(replay));
    }
    gpu->end_run();
  }
}

}  // namespace
}  // namespace coolbench::engine
