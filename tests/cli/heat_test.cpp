// `coolbench heat` run as a child process where no GPU is needed: the
// documented exit codes of bad command lines and of a machine without the
// driver, and the help text (docs/cli/heat.md). The heater itself runs on a
// GPU in tests/measure/gemm_chain_test.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "cli/run_coolbench.hpp"

namespace {

namespace fs = std::filesystem;
using coolbench::testing::describe;
using coolbench::testing::env_map;
using coolbench::testing::read_file;
using coolbench::testing::run_result;

class heat_test : public coolbench::testing::coolbench_test {
 protected:
  heat_test() : coolbench_test("coolbench_heat_test") {}
};

void expect_one_line(const std::string& err, const std::string& needle) {
  coolbench::testing::expect_one_line(err, "heat", needle);
}

env_map without_driver() { return coolbench::testing::without_driver(FAKE_CUDA_PATH); }

TEST_F(heat_test, bad_values_are_usage_errors) {
  for (const auto& [args, needle] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"heat", "--seconds", "-1"}, "--seconds"},
           {{"heat", "--seconds", "x"}, "--seconds"},
           {{"heat", "--device", "-2"}, "--device"},
           {{"heat", "--workload", "gemm:fp8:1:1:1"}, "DTYPE 'fp8'"},
           {{"heat", "--workload", "gpt2.onnx"}, "must start with 'gemm:'"},
           {{"heat", "--workload", "gemm:bf16:1:1:1:0"}, "COUNT is 0"},
           {{"heat", "--bogus"}, "--bogus"}}) {
    const run_result r = run(args, without_driver());
    EXPECT_EQ(r.code, 2) << describe(r);
    EXPECT_EQ(r.out, "");
    expect_one_line(r.err, needle);
  }
}

TEST_F(heat_test, without_a_driver_exits_3_with_one_line) {
  const run_result r = run({"heat", "--seconds", "1"}, without_driver());
  EXPECT_EQ(r.code, 3) << describe(r);
  EXPECT_EQ(r.out, "");
  expect_one_line(r.err, "/nonexistent/libnvidia-ml.so.1");
}

TEST_F(heat_test, help_prints_the_documentation) {
  const std::string doc = read_file(fs::path(PROJECT_SOURCE_DIR) / "docs" / "cli" / "heat.md");
  ASSERT_FALSE(doc.empty());
  for (const char* flag : {"--help", "-h"}) {
    const run_result r = run({"heat", flag}, without_driver());
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_EQ(r.out, doc);
    EXPECT_EQ(r.err, "");
  }
  const run_result top = run({"--help"}, without_driver());
  EXPECT_NE(top.out.find("heat"), std::string::npos) << top.out;
}

}  // namespace
