// The CUPTI kernel trace on a real GPU: the probe kernel launched a known
// number of times is recorded that many times, with GPU timestamps, its
// grid and the device; one trace at a time. Skips without a GPU.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "coolbench/core/error.hpp"
#include "coolbench/device.hpp"
#include "coolbench/device/kernel_trace.hpp"
#include "coolbench/device/probe.hpp"

namespace coolbench::device {
namespace {

int gpus() {
  try {
    return device::count();
  } catch (const error&) {
    return 0;
  }
}

TEST(kernel_trace, records_every_launch_of_the_probe_kernel) {
  if (gpus() == 0) GTEST_SKIP() << "no GPU here: the kernel trace cannot run";
  auto& gpu = device::get(0);
  {
    auto warm = gpu.acquire();  // the context and module loaded before the trace
    ASSERT_LT(run_probe_add(warm), 1e-6);
  }
  std::optional<kernel_trace> started;
  try {
    started.emplace();
  } catch (const kernel_trace_unavailable& e) {
    GTEST_SKIP() << "no kernel trace here: " << e.what();
  }
  kernel_trace& trace = *started;
  EXPECT_THROW(kernel_trace second, invalid_argument);
  {
    auto lease = gpu.acquire();
    for (int i = 0; i < 5; ++i) ASSERT_LT(run_probe_add(lease), 1e-6);
  }  // run_probe_add synchronizes
  const auto records = trace.stop();
  EXPECT_EQ(trace.dropped(), 0U);
  int adds = 0;
  for (const auto& r : records) {
    if (r.name.find("add_kernel") == std::string::npos) continue;
    ++adds;
    EXPECT_LT(r.start_ns, r.end_ns);
    EXPECT_GE(r.grid[0], 1);
    EXPECT_GE(r.block[0], 1);
    EXPECT_EQ(r.graph_node, 0U);
  }
  EXPECT_EQ(adds, 5) << records.size() << " kernels recorded";
  const kernel_runs runs = summarize_kernel_runs(records, "");
  EXPECT_EQ(runs.runs, 1U);
  EXPECT_GT(runs.busy_us, 0.0);
  std::printf("RECORD kernel trace: %zu kernels, %.2f us busy in a span of %.2f us\n",
              records.size(), runs.busy_us, runs.span_us);
  kernel_trace again;  // the first one stopped: a new trace may start
  EXPECT_TRUE(again.stop().empty());
  // No release here: CUPTI keeps device memory of its own in the context
  // (14 MiB on an H200), which the device layer counts as foreign memory
  // and so refuses to reset under (docs/cli/nodes.md says so).
}

}  // namespace
}  // namespace coolbench::device
