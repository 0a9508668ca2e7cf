// `coolbench hidden-state` on a real GPU: it checks the sentinel as found, touches, calibrates,
// judges, writes its JSON and exits 0, and leaves no context of its own behind. Needs a GPU;
// skips with the reason otherwise. Prints the command's output (the two levels and the
// verdict are the figures to quote).
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

TEST(hidden_state_gpu, checks_touches_judges_and_writes_its_json) {
  COOLBENCH_SKIP_WITHOUT_A_GPU();
  const fs::path json_path =
      fs::path(::testing::TempDir()) / ("hidden_state_" + std::to_string(getpid()) + ".json");
  const auto done = coolbench::testing::run_command(
      std::string(COOLBENCH_EXE) + " hidden-state --checks 4 --json " + json_path.string());
  const std::string& output = done.output;
  std::printf("%s", output.c_str());
  ASSERT_TRUE(done.exited) << output;
  ASSERT_EQ(done.code, 0) << output;
  EXPECT_NE(output.find("as found:"), std::string::npos) << output;
  EXPECT_NE(output.find("after a touch:"), std::string::npos) << output;

  std::ifstream in(json_path);
  ASSERT_TRUE(in.good()) << "no JSON at " << json_path;
  const nlohmann::json j = nlohmann::json::parse(in);
  fs::remove(json_path);
  EXPECT_EQ(j["device"], 0);
  EXPECT_EQ(j["sentinel"], "gemm-chain");
  EXPECT_EQ(j["isolation"], "touch");
  EXPECT_GT(j["as_found_ms"].get<double>(), 0.0);
  EXPECT_EQ(j["calibration"]["checks"], 4);
  const double level = j["calibration"]["median_ms"].get<double>();
  EXPECT_GT(level, 0.0);
  // The shift is the first check against the level after the touch.
  EXPECT_NEAR(j["shift"].get<double>(), j["as_found_ms"].get<double>() / level - 1, 1e-9);
  EXPECT_TRUE(j["judged"].get<bool>()) << j.dump(2);
  EXPECT_EQ(j["hidden_state"].get<bool>(),
            j["moved"].get<bool>() && j["sensors_unchanged"].get<bool>());
  EXPECT_FALSE(j["release"].get<std::string>().empty());
}

}  // namespace
