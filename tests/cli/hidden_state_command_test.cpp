// `coolbench hidden-state` run as a child process where no GPU is needed: the
// documented exit codes of bad command lines and of a machine without the
// driver, and the help text (docs/cli/hidden-state.md). On a GPU it runs in
// tests/gpu/hidden_state_gpu_test.
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

class hidden_state_command_test : public coolbench::testing::coolbench_test {
 protected:
  hidden_state_command_test() : coolbench_test("coolbench_hidden_state_test") {}
};

void expect_one_line(const std::string& err, const std::string& needle) {
  coolbench::testing::expect_one_line(err, "hidden-state", needle);
}

env_map without_driver() { return coolbench::testing::without_driver(FAKE_CUDA_PATH); }

TEST_F(hidden_state_command_test, bad_values_are_usage_errors) {
  for (const auto& [args, needle] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"hidden-state", "--checks", "0"}, "--checks"},
           {{"hidden-state", "--checks", "101"}, "--checks"},
           {{"hidden-state", "--checks", "x"}, "--checks"},
           {{"hidden-state", "--device", "-2"}, "--device"},
           {{"hidden-state", "--json"}, "--json"},
           {{"hidden-state", "--bogus"}, "--bogus"}}) {
    const run_result r = run(args, without_driver());
    EXPECT_EQ(r.code, 2) << describe(r);
    EXPECT_EQ(r.out, "");
    expect_one_line(r.err, needle);
  }
}

TEST_F(hidden_state_command_test, without_a_driver_exits_3_with_one_line) {
  const run_result r = run({"hidden-state"}, without_driver());
  EXPECT_EQ(r.code, 3) << describe(r);
  EXPECT_EQ(r.out, "");
  expect_one_line(r.err, "/nonexistent/libnvidia-ml.so.1");
}

TEST_F(hidden_state_command_test, help_prints_the_documentation) {
  const std::string doc =
      read_file(fs::path(PROJECT_SOURCE_DIR) / "docs" / "cli" / "hidden-state.md");
  ASSERT_FALSE(doc.empty());
  for (const char* flag : {"--help", "-h"}) {
    const run_result r = run({"hidden-state", flag}, without_driver());
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_EQ(r.out, doc);
    EXPECT_EQ(r.err, "");
  }
  const run_result top = run({"--help"}, without_driver());
  EXPECT_NE(top.out.find("hidden-state"), std::string::npos) << top.out;
}

}  // namespace
