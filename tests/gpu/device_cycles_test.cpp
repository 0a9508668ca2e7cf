// run -> release -> run on a real GPU: identical outputs every cycle, the
// kernel attribute re-applied in every new context, no memory growth, and
// after each release NVML no longer lists the process. Run it under
// compute-sanitizer too (scripts/device-check.sh does).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "coolbench/core/error.hpp"
#include "coolbench/device.hpp"
#include "coolbench/telemetry.hpp"
#include "gpu/cycle_workload.hpp"
#if COOLBENCH_TEST_ENGINE
#include <cstring>
#include <random>

#include "coolbench/engine/model.hpp"
#include "coolbench/engine/session.hpp"
#endif

namespace coolbench {
namespace {

std::optional<std::uint64_t> this_process_memory(const telemetry::gpu_telemetry& gpu) {
  for (const auto& p : gpu.processes()) {
    if (p.pid == static_cast<std::uint32_t>(getpid()) && p.used_memory_bytes.ok())
      return p.used_memory_bytes.value;
  }
  return std::nullopt;
}

TEST(device_cycles, run_release_run_gives_identical_outputs_and_leaves_nothing_behind) {
  int count = 0;
  try {
    count = device::device::count();
  } catch (const error& e) {
    GTEST_SKIP() << "no GPU here: " << e.what();
  }
  if (count == 0) GTEST_SKIP() << "no GPU here: CUDA sees none";
  // COOLBENCH_CYCLES lowers the count under compute-sanitizer, which is slow.
  const char* cycles_env = std::getenv("COOLBENCH_CYCLES");
  const int cycles = cycles_env != nullptr ? std::atoi(cycles_env) : 200;
  const telemetry::gpu_telemetry nvml(0);
  auto& gpu = device::device::get(0);
  constexpr int n = 1 << 20;

  std::vector<float> first;
  std::string last_check;
  std::optional<std::uint64_t> first_memory;
  for (int cycle = 0; cycle < cycles; ++cycle) {
    {
      auto lease = gpu.acquire();
      testing::register_cycle_workload(lease);
      const auto out = testing::run_cycle_workload(lease, n, 1234U);
      if (cycle == 0) {
        first = out;
        first_memory = this_process_memory(nvml);
        // How soon NVML's figure shows the work just done (its kernels' code,
        // its stream): read again over the next 100 ms.
        std::string reads;
        const auto start = std::chrono::steady_clock::now();
        for (const int ms : {0, 1, 2, 5, 10, 20, 50, 100}) {
          std::this_thread::sleep_until(start + std::chrono::milliseconds(ms));
          const auto m = this_process_memory(nvml);
          reads += " " + std::to_string(ms) +
                   " ms: " + (m ? std::to_string(*m >> 10U) + " KiB" : std::string("none"));
        }
        std::printf("RECORD NVML after the first cycle's work:%s\n", reads.c_str());
      } else {
        ASSERT_EQ(out, first) << "cycle " << cycle << " computed something else";
        const auto memory = this_process_memory(nvml);
        if (first_memory && memory) {
          ASSERT_LE(*memory, *first_memory + (4U << 20U)) << "cycle " << cycle << ": memory grew";
        }
      }
    }
    const auto report = gpu.release();
    ASSERT_TRUE(report.released) << "cycle " << cycle << ": " << report.note;
    last_check = report.foreign_check;
    if (cycle == 0)
      std::printf("RECORD first release: %s, %.3f s\n", last_check.c_str(), report.seconds);
    ASSERT_TRUE(report.context_reset);
    // coolbench made the context; its blocks and its kernel's code are its own.
    ASSERT_EQ(report.foreign_state, "none") << "cycle " << cycle << ": " << report.foreign_check;
    ASSERT_EQ(report.bytes_freed, 2U * (4U << 20U)) << cycle;  // two 4 MiB blocks
    if (report.process_listed_after) {
      ASSERT_FALSE(*report.process_listed_after)
          << "cycle " << cycle << ": still listed after release";
    }
  }
  const auto status = gpu.status();
  EXPECT_EQ(status.releases, static_cast<std::uint64_t>(cycles));
  EXPECT_FALSE(status.context_active);
  EXPECT_EQ(status.live_bytes + status.cached_bytes, 0U);
  if (first_memory)
    std::printf("RECORD cycles: %d run/release cycles, process memory while running %llu MiB\n",
                cycles, static_cast<unsigned long long>(*first_memory >> 20U));
  std::printf("RECORD last check: %s\n", last_check.c_str());
}

#if COOLBENCH_TEST_ENGINE
// The same cycle with a model: a GPT-2 session on cuda:0, run -> device
// release -> run, identical logits every time and nothing left on the device.
TEST(device_cycles, a_model_session_runs_identically_across_releases) {
  int count = 0;
  try {
    count = device::device::count();
  } catch (const error& e) {
    GTEST_SKIP() << "no GPU here: " << e.what();
  }
  if (count == 0) GTEST_SKIP() << "no GPU here: CUDA sees none";
  const char* cycles_env = std::getenv("COOLBENCH_CYCLES");
  const int cycles = cycles_env != nullptr ? std::atoi(cycles_env) : 200;
  engine::gpt2_config config;
  config.layers = 2;
  config.hidden = 64;
  config.heads = 4;
  config.vocab = 300;
  config.positions = 32;
  config.sequence = 16;
  engine::session s(engine::parse_onnx(engine::make_gpt2_model(config), ".", "gpt2.onnx"),
                    "cuda:0");
  engine::tensor ids(engine::dtype::int64, {1, 16});
  std::mt19937 rng(3);
  for (auto& id : ids.data<std::int64_t>())
    id = std::uniform_int_distribution<std::int64_t>(0, 299)(rng);
  auto& gpu = device::device::get(0);
  engine::tensor first;
  for (int cycle = 0; cycle < cycles; ++cycle) {
    s.set_input(s.inputs().at(0).name, ids);
    s.run();
    // The default path: the whole plan as one CUDA graph over the arena,
    // taken and recorded again after each release.
    ASSERT_EQ(s.execution().mode, engine::execution_mode::graph)
        << "cycle " << cycle << ": " << s.execution().reason;
    if (cycle > 0) s.run();  // a replay of the graph recorded in this context
    const engine::tensor& logits = s.output(0);
    if (cycle == 0) {
      first = logits;
    } else {
      ASSERT_EQ(std::memcmp(logits.raw().data(), first.raw().data(), first.bytes()), 0)
          << "cycle " << cycle << " computed other logits";
    }
    const auto report = gpu.release();
    ASSERT_TRUE(report.released) << "cycle " << cycle << ": " << report.note;
    ASSERT_GT(report.bytes_freed, 0U) << "cycle " << cycle << ": the session held no device memory";
    ASSERT_EQ(gpu.status().live_bytes + gpu.status().cached_bytes, 0U) << cycle;
  }
  std::printf(
      "RECORD model cycles: %d run/release cycles of a GPT-2 session on cuda:0 (CUDA graph, "
      "arena of %zu bytes)\n",
      cycles, s.execution().arena_bytes);
}
#endif

}  // namespace
}  // namespace coolbench
