// summarize_kernel_runs on made-up records: runs split at the marker, the
// marker left out, per-name totals, the span and the busy time per run.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coolbench/device/kernel_trace.hpp"

namespace coolbench::device {
namespace {

kernel_record kernel(std::string name, std::uint64_t start_us, std::uint64_t end_us) {
  kernel_record r;
  r.name = std::move(name);
  r.start_ns = start_us * 1000;
  r.end_ns = end_us * 1000;
  return r;
}

TEST(kernel_runs, runs_split_at_the_marker_and_idle_time_is_what_no_kernel_covers) {
  // Out of order on purpose; the first "gemm" precedes any marker: no run.
  // A kernel whose name only contains the marker's is no marker.
  std::vector<kernel_record> records = {
      kernel("gemm", 110, 120),   kernel("void ns::hold_kernel(unsigned long)", 100, 109),
      kernel("gemm", 1, 5),       kernel("threshold_kernel", 121, 122),
      kernel("a_norm", 123, 125), kernel("hold_kernel(unsigned long)", 200, 205),
      kernel("gemm", 206, 214),   kernel("a_norm", 218, 220),
      kernel("a_norm", 221, 226),
  };
  records[0].dynamic_shared = 1024;
  records[6].dynamic_shared = 4096;  // the last gemm call's
  const kernel_runs s = summarize_kernel_runs(records, "hold_kernel");
  EXPECT_TRUE(s.marked);
  EXPECT_EQ(s.runs, 2U);
  EXPECT_EQ(s.kernels_per_run, 3U);                // the first run's
  EXPECT_DOUBLE_EQ(s.span_us, (15.0 + 20.0) / 2);  // 110..125 and 206..226
  EXPECT_DOUBLE_EQ(s.busy_us, (13.0 + 15.0) / 2);
  ASSERT_EQ(s.kernels.size(), 3U);
  // By total time, not by name: gemm 18, a_norm 9, threshold_kernel 1.
  EXPECT_EQ(s.kernels[0].name, "gemm");
  EXPECT_EQ(s.kernels[0].calls, 2U);
  EXPECT_DOUBLE_EQ(s.kernels[0].total_us, 18.0);
  EXPECT_DOUBLE_EQ(s.kernels[0].least_us, 8.0);  // the second call's
  EXPECT_EQ(s.kernels[0].dynamic_shared, 4096);
  EXPECT_EQ(s.kernels[1].name, "a_norm");
  EXPECT_EQ(s.kernels[1].calls, 3U);
  EXPECT_DOUBLE_EQ(s.kernels[1].total_us, 9.0);
  EXPECT_DOUBLE_EQ(s.kernels[1].least_us, 2.0);
  EXPECT_EQ(s.kernels[2].name, "threshold_kernel");
}

TEST(kernel_runs, overlapping_kernels_are_busy_once_and_no_marker_is_one_run) {
  const std::vector<kernel_record> records = {kernel("a", 0, 10), kernel("b", 5, 12),
                                              kernel("c", 20, 21)};
  const kernel_runs s = summarize_kernel_runs(records, "hold_kernel");
  EXPECT_FALSE(s.marked);
  EXPECT_EQ(s.runs, 1U);
  EXPECT_EQ(s.kernels_per_run, 3U);
  EXPECT_DOUBLE_EQ(s.span_us, 21.0);
  EXPECT_DOUBLE_EQ(s.busy_us, 13.0);
  EXPECT_EQ(summarize_kernel_runs({}, "hold_kernel").runs, 0U);
  // A marker with nothing after it is no run.
  const std::vector<kernel_record> only_marker = {kernel("hold_kernel", 0, 3)};
  EXPECT_EQ(summarize_kernel_runs(only_marker, "hold_kernel").runs, 0U);
}

TEST(kernel_runs, short_names_keep_the_function_and_its_template_arguments) {
  EXPECT_EQ(short_kernel_name("void coolbench::engine::cuda::(anonymous namespace)::"
                              "split_keys_kernel<__half, 64>(const __half*, int)"),
            "split_keys_kernel<__half, 64>");
  EXPECT_EQ(short_kernel_name("void ns::f<ns::g<int>::type, (bool)1>(ns::h<float>)"),
            "f<ns::g<int>::type, (bool)1>");
  EXPECT_EQ(short_kernel_name("add_kernel(const float*, const float*, float*, int)"), "add_kernel");
  EXPECT_EQ(short_kernel_name("nvjet_sm90_hsh_128x64_64x4_1x2_h_bz_coopA_NNN"),
            "nvjet_sm90_hsh_128x64_64x4_1x2_h_bz_coopA_NNN");
  EXPECT_EQ(short_kernel_name("void cublasLt::splitKreduce_kernel<32, 16, int, "
                              "float>(cublasLt::cublasSplitKParams<float>)"),
            "splitKreduce_kernel<32, 16, int, float>");
}

}  // namespace
}  // namespace coolbench::device
