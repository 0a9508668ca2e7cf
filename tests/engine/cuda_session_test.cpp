// Sessions on the CUDA backend: a GPT-2 model against the CPU, refusals at
// session creation, out of memory, and a device release between runs. Needs a
// GPU (ctest label gpu); skips with the reason without one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "coolbench/core/error.hpp"
#include "coolbench/device.hpp"
#include "coolbench/engine/model.hpp"
#include "coolbench/engine/session.hpp"
#include "engine/backends/registry.hpp"

namespace coolbench::engine {
namespace {

int gpu_count() {
  try {
    return device::device::count();
  } catch (const error&) {
    return 0;
  }
}

#define REQUIRE_GPU() \
  if (gpu_count() == 0) GTEST_SKIP() << "no GPU here: the CUDA backend cannot run"

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
  REQUIRE_GPU();
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

TEST(cuda_session, unsupported_operator_or_dtype_is_one_line_at_creation) {
  REQUIRE_GPU();
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
  REQUIRE_GPU();
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
