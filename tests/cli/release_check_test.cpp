// `coolbench release-check` run as a child process where no GPU is needed: the documented exit
// codes of bad command lines and of a machine without the driver, and the help text
// (docs/cli/release-check.md). tests/gpu/release_check_gpu_test.cpp runs it on a GPU.
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

class release_check_test : public coolbench::testing::coolbench_test {
 protected:
  release_check_test() : coolbench_test("coolbench_rc_test") {}
};

void expect_one_line(const std::string& err, const std::string& needle) {
  coolbench::testing::expect_one_line(err, "release-check", needle);
}

env_map without_driver() { return coolbench::testing::without_driver(FAKE_CUDA_PATH); }

TEST_F(release_check_test, bad_values_are_usage_errors) {
  for (const auto& [args, option] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"release-check", "--hold", "-1"}, "--hold"},
           {{"release-check", "--hold", "x"}, "--hold"},
           {{"release-check", "--timeout", "0"}, "--timeout"},
           {{"release-check", "--device", "-2"}, "--device"},
           {{"release-check", "--bogus"}, "--bogus"}}) {
    const run_result r = run(args, without_driver());
    EXPECT_EQ(r.code, 2) << describe(r);
    EXPECT_EQ(r.out, "");
    expect_one_line(r.err, option);
  }
}

TEST_F(release_check_test, without_a_driver_exits_3_with_one_line) {
  const run_result r = run({"release-check", "--hold", "0"}, without_driver());
  EXPECT_EQ(r.code, 3) << describe(r);
  EXPECT_EQ(r.out, "");
  expect_one_line(r.err, "/nonexistent/libnvidia-ml.so.1");
}

TEST_F(release_check_test, an_unwritable_json_file_exits_4_before_anything_runs) {
  const std::string json = (dir() / "no-such-folder" / "out.json").string();
  const run_result r = run({"release-check", "--json", json}, without_driver());
  EXPECT_EQ(r.code, 4) << describe(r);
  expect_one_line(r.err, json);
}

TEST_F(release_check_test, help_prints_the_documentation) {
  const std::string doc =
      read_file(fs::path(PROJECT_SOURCE_DIR) / "docs" / "cli" / "release-check.md");
  ASSERT_FALSE(doc.empty());
  for (const char* flag : {"--help", "-h"}) {
    const run_result r = run({"release-check", flag}, without_driver());
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_EQ(r.out, doc);
    EXPECT_EQ(r.err, "");
  }
  // The child's options are not for users.
  EXPECT_EQ(doc.find("--child"), std::string::npos);
  const run_result top = run({"--help"}, without_driver());
  EXPECT_NE(top.out.find("release-check"), std::string::npos) << top.out;
}

}  // namespace
