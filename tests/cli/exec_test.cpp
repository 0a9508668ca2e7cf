// `coolbench exec` as a child process over the doubles of NVML and the CUDA driver, with sh
// one-liners as the measured command (docs/cli/exec.md): each context a fresh process, the
// figure the mean of the processes' medians, and the errors a command can cause.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "cli/run_coolbench.hpp"

namespace {

using coolbench::testing::describe;
using coolbench::testing::env_map;
using coolbench::testing::read_file;
using coolbench::testing::run_result;

env_map with_fakes() {
  env_map env = coolbench::testing::inherited_environment({"COOLBENCH_", "FAKE_"});
  env["COOLBENCH_NVML_LIBRARY"] = FAKE_NVML_PATH;
  env["COOLBENCH_CUDA_LIBRARY"] = FAKE_CUDA_PATH;
  return env;
}

class exec_test : public coolbench::testing::coolbench_test {
 protected:
  exec_test() : coolbench_test("coolbench_exec_test") {}
  // GPU 1 of the doubles: GPU 0 reports the power cap, which the gate waits out.
  run_result exec(const std::vector<std::string>& args, const env_map& env = with_fakes()) {
    std::vector<std::string> all{"exec", "--device", "1"};
    all.insert(all.end(), args.begin(), args.end());
    return run(all, env);
  }
};

// Two levels 3 % apart, drawn by the process id's parity: a lottery per process.
const std::string two_levels =
    "l=0.25; [ $(($$ % 2)) -eq 0 ] && l=0.2575; while :; do echo \"latency_ms $l\"; done";

TEST_F(exec_test, each_context_is_a_fresh_process_and_the_figure_their_mean) {
  const std::string json = (dir() / "run.json").string();
  const run_result r = exec({"--rel-ci", "0.02", "--json", json, "--", "sh", "-c", two_levels});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("measuring command: sh -c"), std::string::npos) << r.out;
  const auto doc = nlohmann::json::parse(read_file(json));
  const auto& contexts = doc["summary"]["contexts"];
  ASSERT_TRUE(contexts.is_object()) << doc["summary"].dump(1);
  EXPECT_GE(contexts["count"].get<int>(), 5);
  double sum = 0;
  for (const auto& c : contexts["per_context"]) {
    const double median = c["median_ms"].get<double>();
    EXPECT_TRUE(median == 0.25 || median == 0.2575) << median;
    sum += median;
  }
  const double mean = contexts["mean_ms"].get<double>();
  EXPECT_NEAR(mean, sum / contexts["count"].get<double>(), 1e-12);
  EXPECT_LE(contexts["ci_ms"][0].get<double>(), mean);
  EXPECT_GE(contexts["ci_ms"][1].get<double>(), mean);
  EXPECT_GT(doc["summary"]["releases"].get<int>(), 0);
}

TEST_F(exec_test, a_command_that_ends_fails_the_run_saying_why) {
  const run_result r = exec({"--", "sh", "-c", "echo 'latency_ms 1'; echo 'latency_ms 1'"});
  EXPECT_EQ(r.code, 1) << describe(r);
  EXPECT_NE((r.out + r.err).find("loop forever"), std::string::npos) << describe(r);
}

TEST_F(exec_test, a_first_line_that_is_no_latency_is_a_usage_error) {
  const run_result r = exec({"--", "sh", "-c", "while :; do echo 'latency_ms fast'; done"});
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_NE(r.err.find("one positive number"), std::string::npos) << describe(r);
}

TEST_F(exec_test, no_command_is_a_usage_error) {
  const run_result r = exec({});
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_NE(r.err.find("coolbench exec"), std::string::npos) << describe(r);
}

TEST_F(exec_test, without_a_driver_it_exits_3) {
  env_map env = with_fakes();
  env["COOLBENCH_NVML_LIBRARY"] = "/nonexistent/libnvidia-ml.so.1";
  const run_result r = exec({"--", "sh", "-c", two_levels}, env);
  EXPECT_EQ(r.code, 3) << describe(r);
}

}  // namespace
