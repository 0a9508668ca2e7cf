// Sessions on the CUDA backend: a GPT-2 model against the CPU, refusals at
// session creation, out of memory, and a device release between runs. Needs a
// GPU (ctest label gpu); skips with the reason without one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "coolbench/core/error.hpp"
#include "coolbench/device.hpp"
#include "coolbench/engine/model.hpp"
#include "coolbench/engine/session.hpp"
#include "coolbench/measure/workload.hpp"
#include "engine/backends/registry.hpp"
#include "engine/gpu_present.hpp"

namespace coolbench::engine {
namespace {

using testing_gpu::gpu_count;

graph small_gpt2(dtype type) {
  gpt2_config config;
  config.layers = 2;
  config.hidden = 64;
  config.heads = 4;
  config.vocab = 500;
  config.positions = 64;
  config.sequence = 16;
  config.element_type = type;
  return parse_onnx(make_gpt2_model(config), ".", "gpt2.onnx");
}

tensor token_ids(std::int64_t batch, std::int64_t sequence) {
  tensor ids(dtype::int64, {batch, sequence});
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::int64_t> token(0, 499);
  for (auto& id : ids.data<std::int64_t>()) id = token(rng);
  return ids;
}

void set_inputs(session& s, std::int64_t batch, std::int64_t sequence) {
  for (const auto& input : s.inputs()) {
    if (input.type == dtype::int64) {
      s.set_input(input.name, token_ids(batch, sequence));
    } else {
      FAIL() << "unexpected input " << input.name;
    }
  }
}

float max_difference(const tensor& a, const tensor& b) {
  float worst = 0;
  for (std::size_t i = 0; i < static_cast<std::size_t>(a.size()); ++i) {
    worst = std::max(worst, std::abs(a.data<float>()[i] - b.data<float>()[i]));
  }
  return worst;
}

// Hands the GPU back at the end, so compute-sanitizer's leak check sees
// every block freed (the caching allocator keeps them until a release).
class release_at_exit : public testing::Environment {
 public:
  void TearDown() override {
    if (gpu_count() > 0) static_cast<void>(device::device::get(0).release());
  }
};
const auto* const k_release = testing::AddGlobalTestEnvironment(new release_at_exit);

TEST(cuda_session, gpt2_matches_the_cpu_and_survives_a_device_release) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  session cpu(small_gpt2(dtype::float32));
  session gpu(small_gpt2(dtype::float32), "cuda:0");
  EXPECT_EQ(gpu.backend_name(), "cuda:0");
  set_inputs(cpu, 2, 16);
  set_inputs(gpu, 2, 16);
  cpu.run();
  gpu.run();
  const tensor first = gpu.output(0);
  ASSERT_EQ(first.shape(), cpu.output(0).shape());
  EXPECT_LT(max_difference(first, cpu.output(0)), 1e-3F);
  // A device release frees every tensor and handle; the next run copies the
  // weights in again and computes the same bytes.
  const auto report = device::device::get(0).release();
  EXPECT_TRUE(report.released) << report.note;
  gpu.run();
  EXPECT_EQ(std::memcmp(gpu.output(0).raw().data(), first.raw().data(), first.bytes()), 0);
  gpu.release();
  set_inputs(gpu, 2, 16);
  gpu.run();
  EXPECT_EQ(std::memcmp(gpu.output(0).raw().data(), first.raw().data(), first.bytes()), 0);
  std::printf("RECORD cuda gpt2 fp32: max |cuda - cpu| = %g\n",
              max_difference(first, cpu.output(0)));
}

bool same_bytes(const tensor& a, const tensor& b) {
  return a.type() == b.type() && a.shape() == b.shape() &&
         std::memcmp(a.raw().data(), b.raw().data(), a.bytes()) == 0;
}

session_options graph_options(bool cuda_graph, bool memory_plan) {
  session_options options;
  options.cuda_graph = cuda_graph;
  options.memory_plan = memory_plan;
  return options;
}

// The three ways a static plan runs on the GPU give the same bytes: a CUDA
// graph over the arena, node by node over the arena, and node by node from
// the caching allocator (today's path before the plan).
TEST(cuda_session, graph_arena_and_eager_runs_give_identical_outputs) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  for (const dtype type : {dtype::float32, dtype::float16}) {
    SCOPED_TRACE(std::string(to_string(type)));
    session graph_run(small_gpt2(type), graph_options(true, true), "cuda:0");
    session arena_run(small_gpt2(type), graph_options(false, true), "cuda:0");
    session eager_run(small_gpt2(type), graph_options(false, false), "cuda:0");
    for (session* s : {&graph_run, &arena_run, &eager_run}) {
      set_inputs(*s, 2, 16);
      for (int i = 0; i < 3; ++i) s->run();  // record, capture, replay
    }
    const execution_info graph_info = graph_run.execution();
    EXPECT_EQ(graph_info.mode, execution_mode::graph) << graph_info.reason;
    EXPECT_TRUE(graph_info.arena);
    EXPECT_GT(graph_info.allocations, 0U);
    EXPECT_LE(graph_info.arena_bytes, graph_info.unplanned_bytes);
    EXPECT_EQ(arena_run.execution().mode, execution_mode::eager);
    EXPECT_EQ(arena_run.execution().reason, "cuda_graph is off");
    EXPECT_TRUE(arena_run.execution().arena);
    EXPECT_EQ(eager_run.execution().reason, "memory_plan is off");
    EXPECT_FALSE(eager_run.execution().arena);
    EXPECT_TRUE(same_bytes(graph_run.output(0), eager_run.output(0)));
    EXPECT_TRUE(same_bytes(arena_run.output(0), eager_run.output(0)));
    std::printf(
        "RECORD cuda gpt2 %s: graph mode, arena %zu bytes for %zu allocations "
        "(%zu without reuse), fusions %zu\n",
        std::string(to_string(type)).c_str(), graph_info.arena_bytes, graph_info.allocations,
        graph_info.unplanned_bytes, graph_run.fusion_counts().size());
  }
}

TEST(cuda_session, graph_runs_allocate_nothing_and_survive_releases) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  session s(small_gpt2(dtype::float16), "cuda:0");
  auto& gpu = device::device::get(0);
  set_inputs(s, 1, 16);
  s.run();
  s.run();
  const tensor first = s.output(0);
  ASSERT_EQ(s.execution().mode, execution_mode::graph) << s.execution().reason;
  const std::uint64_t allocations = s.execution().device_allocations;
  const device::device_status before = gpu.status();
  EXPECT_EQ(before.resources[static_cast<std::size_t>(device::resource_kind::graph)], 1U);
  for (int i = 0; i < 20; ++i) {
    s.run();
    ASSERT_TRUE(same_bytes(s.output(0), first)) << "run " << i;
  }
  const device::device_status after = gpu.status();
  EXPECT_EQ(s.execution().device_allocations, allocations) << "a graph run allocated";
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_EQ(after.resources[static_cast<std::size_t>(device::resource_kind::allocation)],
            before.resources[static_cast<std::size_t>(device::resource_kind::allocation)]);
  // A device release destroys the graph and the arena; the next run takes
  // the arena again, records the graph again and computes the same bytes.
  for (int cycle = 0; cycle < 3; ++cycle) {
    const auto report = gpu.release();
    ASSERT_TRUE(report.released) << report.note;
    EXPECT_GE(report.destroyed[static_cast<std::size_t>(device::resource_kind::graph)], 1U);
    s.run();
    EXPECT_EQ(s.execution().mode, execution_mode::graph) << s.execution().reason;
    EXPECT_EQ(gpu.status().resources[static_cast<std::size_t>(device::resource_kind::graph)], 1U);
    ASSERT_TRUE(same_bytes(s.output(0), first)) << "cycle " << cycle;
  }
  // And after the session's own release, with the inputs set again.
  s.release();
  set_inputs(s, 1, 16);
  s.run();
  EXPECT_TRUE(same_bytes(s.output(0), first));
  // Another binding is another plan, with its own arena and graph.
  set_inputs(s, 1, 8);
  s.run();
  EXPECT_EQ(s.output(0).shape()[1], 8);
  EXPECT_EQ(s.execution().mode, execution_mode::graph) << s.execution().reason;
}

// Node timing on the GPU: events between the nodes of an eager run over the
// arena; the graph survives it, and both give the same bytes.
TEST(cuda_session, node_times_run_beside_the_graph) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  session s(small_gpt2(dtype::float16), "cuda:0");
  set_inputs(s, 1, 16);
  s.run();
  const tensor first = s.output(0);
  const std::vector<node_time> times = s.node_times(5);
  ASSERT_EQ(times.size(), s.node_count());
  double total = 0.0;
  for (const node_time& t : times) {
    EXPECT_GT(t.min_ms, 0.0) << t.name << " (" << t.op_type << ")";
    total += t.mean_ms;
  }
  std::printf("RECORD node times: %zu nodes, %.4f ms in all (mean of 5 eager runs)\n", times.size(),
              total);
  EXPECT_TRUE(same_bytes(s.output(0), first));
  s.run();
  EXPECT_EQ(s.execution().mode, execution_mode::graph) << s.execution().reason;
  EXPECT_TRUE(same_bytes(s.output(0), first));
  // After a device release the events are made again.
  ASSERT_TRUE(device::device::get(0).release().released);
  EXPECT_EQ(s.node_times(2).size(), times.size());
}

// The device error flag is still read after a graph launch: an index out of
// range in a captured Gather says so, and the next valid run is fine.
TEST(cuda_session, a_graph_run_still_reports_an_index_out_of_range) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  graph g;
  g.opset = 17;
  g.inputs.push_back({"ids", dtype::int64, {{4, ""}}, true});
  g.outputs.push_back({"y", dtype::float32, {{4, ""}, {2, ""}}, true});
  tensor table(dtype::float32, {5, 2});
  for (std::size_t i = 0; i < 10; ++i) table.data<float>()[i] = static_cast<float>(i);
  g.initializers.emplace("table", table);
  node n;
  n.name = "lookup";
  n.op_type = "Gather";
  n.inputs = {"table", "ids"};
  n.outputs = {"y"};
  g.nodes.push_back(n);
  session s(g, "cuda:0");
  tensor ids(dtype::int64, {4});
  for (std::int64_t i = 0; i < 4; ++i) ids.data<std::int64_t>()[static_cast<std::size_t>(i)] = i;
  s.set_input("ids", ids);
  s.run();
  s.run();
  ASSERT_EQ(s.execution().mode, execution_mode::graph) << s.execution().reason;
  EXPECT_EQ(s.output(0).data<float>()[7], 7.0F);
  ids.data<std::int64_t>()[2] = 9;
  s.set_input("ids", ids);
  try {
    s.run();
    FAIL() << "an index out of range was accepted";
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("node 'lookup' (Gather)"), std::string::npos) << e.what();
  }
  ids.data<std::int64_t>()[2] = 4;
  s.set_input("ids", ids);
  s.run();
  EXPECT_EQ(s.output(0).data<float>()[5], 9.0F);
}

// A Split into aligned ranges returns views of its input (no copy); the
// views are read by later nodes, concatenated in one launch, and one is a
// graph output itself: replayed as a CUDA graph over the arena, with new
// input values, the outputs are the CPU's.
TEST(cuda_session, split_views_and_one_launch_concat_replay_as_a_graph) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  graph g;
  g.opset = 18;
  g.inputs.push_back({"x", dtype::float32, {{1, ""}, {1, ""}, {384, ""}}, true});
  g.outputs.push_back({"y", dtype::float32, {{1, ""}, {1, ""}, {256, ""}}, true});
  g.outputs.push_back({"c", dtype::float32, {{1, ""}, {1, ""}, {128, ""}}, true});
  tensor two(dtype::float32, {});
  two.data<float>()[0] = 2.0F;
  g.initializers.emplace("two", two);
  const auto add_node = [&](std::string op, std::vector<std::string> in,
                            std::vector<std::string> out) {
    node n;
    n.name = op + "_" + out.front();
    n.op_type = std::move(op);
    n.inputs = std::move(in);
    n.outputs = std::move(out);
    g.nodes.push_back(std::move(n));
    return &g.nodes.back();
  };
  add_node("Mul", {"x", "two"}, {"t"});
  add_node("Split", {"t"}, {"a", "b", "c"})->attributes["axis"] = std::int64_t{-1};
  g.nodes.back().attributes["num_outputs"] = std::int64_t{3};
  add_node("Add", {"a", "b"}, {"ab"});
  add_node("Concat", {"ab", "c"}, {"y"})->attributes["axis"] = std::int64_t{-1};
  session gpu(g, "cuda:0");
  session cpu(g, "cpu");
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  for (int round = 0; round < 4; ++round) {  // record, capture, replay with new values
    tensor x(dtype::float32, {1, 1, 384});
    for (auto& v : x.data<float>()) v = normal(rng);
    gpu.set_input("x", x);
    cpu.set_input("x", x);
    gpu.run();
    cpu.run();
    for (std::size_t o = 0; o < 2; ++o) {
      EXPECT_TRUE(same_bytes(gpu.output(o), cpu.output(o))) << "output " << o << ", run " << round;
    }
  }
  EXPECT_EQ(gpu.execution().mode, execution_mode::graph) << gpu.execution().reason;
  EXPECT_TRUE(gpu.execution().arena);
}

// The model workload's figure is CUDA-event time around one launch.
TEST(cuda_session, a_session_workload_is_timed_with_events) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  for (const bool cuda_graph : {true, false}) {
    auto s = std::make_shared<session>(small_gpt2(dtype::float16), graph_options(cuda_graph, true),
                                       "cuda:0");
    std::map<std::string, tensor> inputs{{s->inputs().at(0).name, token_ids(1, 16)}};
    auto w = measure::make_session_workload(s, inputs, "gpt2");
    w->prepare();
    double least = 1e9;
    for (int i = 0; i < 20; ++i) {
      const measure::timing t = w->run();
      EXPECT_GT(t.latency_ms, 0.0);
      EXPECT_LE(t.latency_ms, static_cast<double>(t.end_ns - t.start_ns) / 1e6 + 1e-3);
      least = std::min(least, t.latency_ms);
    }
    EXPECT_EQ(s->execution().mode, cuda_graph ? execution_mode::graph : execution_mode::eager);
    std::printf("RECORD session workload, %s: least of 20 runs %.4f ms\n",
                cuda_graph ? "graph" : "eager (arena)", least);
    w->release();
  }
}

TEST(cuda_session, unsupported_operator_or_dtype_is_one_line_at_creation) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  graph g;
  g.opset = 17;
  g.inputs.push_back({"x", dtype::int32, {{4, ""}}, true});
  g.outputs.push_back({"y", dtype::int32, {{4, ""}}, true});
  node n;
  n.name = "root";
  n.op_type = "Sqrt";
  n.inputs = {"x"};
  n.outputs = {"y"};
  g.nodes.push_back(n);
  try {
    session s(g, "cuda:0");
    FAIL() << "an int32 Sqrt was accepted";
  } catch (const model_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("Sqrt (opset 17) in node 'root' for dtype int32 on the cuda:0 backend"),
              std::string::npos)
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  g.nodes[0].op_type = "NoSuchOp";
  try {
    session s(g, "cuda:0");
    FAIL() << "an unknown operator was accepted";
  } catch (const model_error& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported operator NoSuchOp (opset 17) in node 'root'"),
              std::string::npos)
        << e.what();
  }
}

TEST(cuda_session, out_of_memory_is_an_error_and_leaks_nothing) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  auto gpu = make_backend("cuda:0");
  auto& dev = device::device::get(0);
  const auto before = dev.status();
  try {
    (void)gpu->allocate(dtype::float32, {std::int64_t{1} << 40});  // 4 TiB
    FAIL() << "a 4 TiB tensor was allocated";
  } catch (const cuda_error& e) {
    EXPECT_NE(std::string(e.what()).find("out of device memory"), std::string::npos) << e.what();
  }
  EXPECT_EQ(dev.status().live_bytes, before.live_bytes);
  // Still usable.
  tensor host(dtype::float32, {3});
  host.data<float>()[1] = 2.5F;
  const tensor back = gpu->copy_out(gpu->copy_in(host));
  EXPECT_EQ(back.data<float>()[1], 2.5F);
  gpu->end_run();
}

TEST(cuda_session, backend_names) {
  EXPECT_THROW((void)make_backend("cuda:x"), invalid_argument);
  EXPECT_THROW((void)make_backend("gpu"), invalid_argument);
  if (gpu_count() == 0) GTEST_SKIP() << "no GPU here: cuda:N needs one";
  EXPECT_EQ(make_backend("cuda")->name(), "cuda:0");
  EXPECT_THROW((void)make_backend("cuda:" + std::to_string(gpu_count())), invalid_argument);
}

}  // namespace
}  // namespace coolbench::engine
