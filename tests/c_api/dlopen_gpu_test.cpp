// On a GPU: another runtime (the CUDA runtime, linked here directly) makes the primary context
// exist, and libcoolbench.so, loaded with dlopen, hands the GPU back; that runtime then works
// again on a fresh context. Skips, saying why, where there is no GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "c_api/loaded_coolbench.hpp"

namespace {

using coolbench::testing::loaded_coolbench;
using nlohmann::json;

struct call_result {
  int code;
  json report;
};

call_result release(const loaded_coolbench& library, unsigned flags) {
  char report[4096];
  const int code = library.release_device(0, flags, report, sizeof report);
  return {code, json::parse(report)};
}

TEST(c_api_dlopen_gpu_test, releases_a_context_another_runtime_made_and_it_works_again) {
  static const loaded_coolbench library(COOLBENCH_SHARED_PATH);
  using release_type = int (*)(int, unsigned, char*, std::size_t);
  auto* cuda_reset =
      reinterpret_cast<release_type>(library.find_function("device_api.cuda_reset"));  // NOLINT
  ASSERT_NE(cuda_reset, nullptr);

  // No context yet in this process: nothing to release, or no GPU at all.
  const int first = cuda_reset(0, 0, nullptr, 0);
  if (first == COOLBENCH_NO_DEVICE) GTEST_SKIP() << "no GPU: " << library.last_error();
  ASSERT_EQ(first, COOLBENCH_NOTHING_TO_RELEASE) << library.last_error();

  // Another library (cudart) makes the primary context exist, and holds one byte.
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaFree(nullptr), cudaSuccess);
  void* one_byte = nullptr;
  ASSERT_EQ(cudaMalloc(&one_byte, 1), cudaSuccess);
  const auto refused = release(library, 0);
  if (refused.code == COOLBENCH_REFUSED &&
      std::string(library.last_error()).find("foreign memory live") != std::string::npos) {
    std::printf("RECORD one live byte of cudart: refused: %s\n", library.last_error());
  } else if (std::string(library.last_error()).find("NVML gives no figure") == std::string::npos) {
    ADD_FAILURE() << "one live byte of another runtime was not refused: " << refused.code << " "
                  << library.last_error();
  }
  ASSERT_EQ(cudaFree(one_byte), cudaSuccess);  // untouched: the refusal changed nothing
  char state[1024];
  ASSERT_EQ(library.device_state(0, state, sizeof state), COOLBENCH_OK) << library.last_error();
  EXPECT_EQ(json::parse(state)["context_active"], false) << state;  // not coolbench's context

  auto released = release(library, 0);
  if (released.code == COOLBENCH_REFUSED &&
      std::string(library.last_error()).find("NVML does not report") != std::string::npos) {
    // NVML cannot see this process (another PID namespace): only force releases, and nothing
    // else in this test process uses the GPU.
    std::printf("NVML cannot see this process; releasing with force: %s\n", library.last_error());
    released = release(library, COOLBENCH_RELEASE_FORCE);
  }
  ASSERT_EQ(released.code, COOLBENCH_OK) << library.last_error();
  std::printf("release report: %s\n", released.report.dump(2).c_str());
  EXPECT_EQ(released.report["released"], true);
  EXPECT_EQ(released.report["context_reset"], true);
  if (!released.report["process_bytes"].is_null()) {
    // cudart's bare context: nothing of its memory, checked against the bare context's figure
    // (measured by coolbench-context-probe, or read from the cache).
    EXPECT_EQ(released.report["foreign_state"], "foreign context state without memory")
        << released.report.dump();
    EXPECT_EQ(released.report["foreign_bytes"], 0) << released.report.dump();
    EXPECT_EQ(released.report["process_bytes"], released.report["baseline_bytes"]);
    EXPECT_NE(released.report["baseline_source"].get<std::string>().find("bare context"),
              std::string::npos);
    std::printf(
        "RECORD cudart's context: NVML %s MiB, baseline %s MiB (%s), step %s MiB, %.3f s\n",
        std::to_string(released.report["process_bytes"].get<std::uint64_t>() >> 20U).c_str(),
        std::to_string(released.report["baseline_bytes"].get<std::uint64_t>() >> 20U).c_str(),
        released.report["baseline_source"].get<std::string>().c_str(),
        std::to_string(released.report["granularity_bytes"].get<std::uint64_t>() >> 20U).c_str(),
        released.report["seconds"].get<double>());
  }
  if (!released.report["process_listed_after"].is_null()) {
    EXPECT_EQ(released.report["process_listed_after"], false) << released.report.dump();
  }

  const auto again = release(library, 0);
  EXPECT_EQ(again.code, COOLBENCH_NOTHING_TO_RELEASE) << library.last_error();
  EXPECT_EQ(again.report["released"], false);

  // The other runtime re-acquires: a fresh context, usable.
  ASSERT_EQ(cudaFree(nullptr), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
  void* memory = nullptr;
  ASSERT_EQ(cudaMalloc(&memory, 1 << 20), cudaSuccess);
  EXPECT_EQ(cudaMemset(memory, 0, 1 << 20), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaFree(memory), cudaSuccess);
}

}  // namespace
