// `coolbench release-check` on a real GPU: the probe's sum is exact, the release frees memory,
// and both the release and the process exit reach idle with the process gone. Needs a GPU;
// skips with the reason otherwise. Prints the command's output, whose table and verdict are the
// figures to quote.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "gpu/run_command.hpp"

namespace {

namespace fs = std::filesystem;

TEST(release_check_gpu, both_modes_reach_idle) {
  COOLBENCH_SKIP_WITHOUT_A_GPU();
  const fs::path json_path =
      fs::path(::testing::TempDir()) / ("release_check_" + std::to_string(getpid()) + ".json");
  const auto done = coolbench::testing::run_command(
      std::string(COOLBENCH_EXE) + " release-check --hold 1 --json " + json_path.string());
  const std::string& output = done.output;
  std::printf("%s", output.c_str());
  ASSERT_TRUE(done.exited) << output;
  EXPECT_EQ(done.code, 0) << output;

  std::ifstream in(json_path);
  ASSERT_TRUE(in.good()) << "no JSON at " << json_path;
  const nlohmann::json report = nlohmann::json::parse(in);
  fs::remove(json_path);
  EXPECT_FALSE(fs::exists(json_path.string() + ".tmp"));
  for (const char* mode : {"release", "process_exit"}) {
    SCOPED_TRACE(mode);
    const auto& m = report.at(mode);
    EXPECT_EQ(m.at("probe_error"), 0.0);
    EXPECT_TRUE(m.at("reached_idle").get<bool>());
    EXPECT_TRUE(m.at("milestones_s").at("process_gone").is_number())
        << m.at("milestones_s").dump() << " rule " << m.at("hold_view").at("listing_rule");
    EXPECT_TRUE(m.at("milestones_s").at("idle").is_number());
    EXPECT_FALSE(m.at("samples").empty());
  }
  const auto& release = report.at("release").at("release_report");
  EXPECT_TRUE(release.at("released").get<bool>());
  EXPECT_GT(release.at("bytes_freed").get<std::uint64_t>(), 0U);
  EXPECT_EQ(report.at("process_exit").at("child_exit_status"), 0);
}

}  // namespace
