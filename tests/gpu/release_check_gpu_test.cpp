// `coolbench release-check` on a real GPU: the probe's sum is exact, the release frees memory,
// and both the release and the process exit reach idle with the process gone. Needs a GPU;
// skips with the reason otherwise. Prints the command's output, whose table and verdict are the
// figures to quote.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "coolbench/core/error.hpp"
#include "coolbench/telemetry.hpp"

namespace {

namespace fs = std::filesystem;

TEST(release_check_gpu, both_modes_reach_idle) {
  try {
    if (coolbench::telemetry::gpu_telemetry::device_count() == 0) {
      GTEST_SKIP() << "no GPU visible to CUDA";
    }
  } catch (const coolbench::error& e) {
    GTEST_SKIP() << "no GPU here: " << e.what();
  }
  const fs::path json_path =
      fs::path(::testing::TempDir()) / ("release_check_" + std::to_string(getpid()) + ".json");
  const std::string command =
      std::string(COOLBENCH_EXE) + " release-check --hold 1 --json " + json_path.string() + " 2>&1";
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) output += buffer.data();
  const int status = pclose(pipe);
  std::printf("%s", output.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << output;
  EXPECT_EQ(WEXITSTATUS(status), 0) << output;

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
