// The coolbench command run as a child process: the documented exit codes (docs/cli/*.md), the
// one-line errors, the help texts, and every command over the doubles of NVML and the CUDA
// driver (tests/telemetry/fake), scripted through the child's environment.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli/run_coolbench.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using coolbench::testing::child;
using coolbench::testing::env_map;
using coolbench::testing::read_file;
using coolbench::testing::run_result;

// Above PID_MAX_LIMIT (2^22): no process has this pid, so NVML names it "fakeproc<pid>".
constexpr unsigned absent_pid = 4194304 + 77;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::size_t count_of(const std::string& text, char c) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), c));
}

std::size_t csv_cells(const std::string& line) { return count_of(line, ',') + 1; }

// The environment of this process without the variables that script coolbench or the doubles.
env_map clean_environment() {
  return coolbench::testing::inherited_environment({"COOLBENCH_", "FAKE_"});
}

// coolbench over the doubles, with `script` added (FAKE_NVML_PROCESSES=…).
env_map with_fakes(const env_map& script = {}) {
  env_map env = clean_environment();
  env["COOLBENCH_NVML_LIBRARY"] = FAKE_NVML_PATH;
  env["COOLBENCH_CUDA_LIBRARY"] = FAKE_CUDA_PATH;
  for (const auto& [name, value] : script) env[name] = value;
  return env;
}

// coolbench on a machine without the NVIDIA driver.
env_map without_driver() {
  env_map env = with_fakes();
  env["COOLBENCH_NVML_LIBRARY"] = "/nonexistent/libnvidia-ml.so.1";
  return env;
}

class cli_test : public coolbench::testing::coolbench_test {
 protected:
  cli_test() : coolbench_test("coolbench_cli_test") {}

  run_result run(const std::vector<std::string>& args, const env_map& env = with_fakes()) {
    return coolbench_test::run(args, env);
  }
};

std::string describe(const std::vector<std::string>& args, const run_result& r) {
  std::string text = "coolbench";
  for (const auto& a : args) text += " " + a;
  return text + "\n--- exit " + std::to_string(r.code) + "\n--- stdout\n" + r.out + "--- stderr\n" +
         r.err;
}

// An error the way coolbench reports one: exactly one line on stderr.
void expect_one_line(const std::string& err, const std::string& prefix) {
  EXPECT_EQ(count_of(err, '\n'), 1U) << err;
  EXPECT_TRUE(err.ends_with("\n")) << err;
  EXPECT_TRUE(err.starts_with(prefix)) << err;
}

std::string doc(const std::string& name) {
  const fs::path path = fs::path(PROJECT_SOURCE_DIR) / "docs" / "cli" / (name + ".md");
  std::string text = read_file(path);
  EXPECT_FALSE(text.empty()) << path;
  return text;
}

// ---- The command line ------------------------------------------------------------------------

TEST_F(cli_test, no_command_is_a_usage_error_with_the_help_on_stderr) {
  const run_result r = run({});
  EXPECT_EQ(r.code, 2) << describe({}, r);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("Usage: coolbench <command>"), std::string::npos) << r.err;
}

TEST_F(cli_test, an_unknown_flag_is_one_line_naming_it) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--bogus-flag"},
                                               {"info", "--bogus-flag"},
                                               {"monitor", "--bogus-flag"},
                                               {"who", "--bogus-flag"}}) {
    const run_result r = run(args);
    EXPECT_EQ(r.code, 2) << describe(args, r);
    EXPECT_EQ(r.out, "") << describe(args, r);
    expect_one_line(r.err, "coolbench");
    EXPECT_NE(r.err.find("--bogus-flag"), std::string::npos) << r.err;
  }
}

TEST_F(cli_test, bad_values_are_usage_errors) {
  // The command line, and the option the one-line error must name.
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"monitor", "--period", "0"}, "--period"},
      {{"monitor", "--period", "1001"}, "--period"},
      {{"monitor", "--duration", "-1"}, "--duration"},
      {{"info", "--device", "x"}, "--device"},
      {{"wait-cool", "--below", "50", "--period", "5"}, "--period"},
      {{"wait-cool", "--below", "121"}, "--below"},
      {{"hidden-state", "--checks", "0"}, "--checks"},
      {{"hidden-state", "--checks", "101"}, "--checks"},
      {{"hidden-state", "--checks", "x"}, "--checks"},
      {{"hidden-state", "--device", "-2"}, "--device"},
      {{"hidden-state", "--json"}, "--json"},
      {{"hidden-state", "--bogus"}, "--bogus"}};
  for (const auto& [args, option] : cases) {
    const run_result r = run(args);
    EXPECT_EQ(r.code, 2) << describe(args, r);
    expect_one_line(r.err, "coolbench " + args[0] + ": ");
    EXPECT_NE(r.err.find(option), std::string::npos) << r.err;
  }
}

TEST_F(cli_test, wait_cool_needs_below) {
  const run_result r = run({"wait-cool"});
  EXPECT_EQ(r.code, 2) << describe({"wait-cool"}, r);
  expect_one_line(r.err, "coolbench wait-cool: ");
  EXPECT_NE(r.err.find("--below"), std::string::npos) << r.err;
}

TEST_F(cli_test, help_prints_the_documentation) {
  for (const char* flag : {"--help", "-h"}) {
    const run_result r = run({flag});
    EXPECT_EQ(r.code, 0) << describe({flag}, r);
    EXPECT_EQ(r.out, doc("coolbench"));
    EXPECT_EQ(r.err, "");
  }
  for (const std::string command : {"info", "monitor", "who", "wait-cool", "hidden-state"}) {
    const run_result r = run({command, "--help"});
    EXPECT_EQ(r.code, 0) << describe({command, "--help"}, r);
    EXPECT_EQ(r.out, doc(command)) << command;
    EXPECT_EQ(r.err, "") << command;
  }
  // Help wins over what else is on the line, and needs no GPU.
  const run_result r = run({"wait-cool", "--help"}, without_driver());
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, doc("wait-cool"));
}

// Every command the top-level help lists prints its page of docs/cli/ as its help, byte for
// byte (a golden test of each help text: a new command cannot go without one). `model` is
// listed but exists only with the engine built.
TEST_F(cli_test, every_listed_command_prints_its_documented_help) {
  const std::string top = doc("coolbench");
  const std::size_t from = top.find("Commands:\n");
  ASSERT_NE(from, std::string::npos);
  std::vector<std::string> commands;
  for (const std::string& line : lines_of(top.substr(from + 10))) {
    if (line.empty()) break;
    // "  run         measure ..." names a command; deeper indents continue its description.
    if (line.size() > 2 && line.starts_with("  ") && line[2] != ' ') {
      commands.push_back(line.substr(2, line.find(' ', 2) - 2));
    }
  }
  EXPECT_GE(commands.size(), 8U) << top;
  for (const std::string& command : commands) {
    const run_result r = run({command, "--help"}, without_driver());
    if (command == "model" && r.code == 2) continue;  // built without the engine
    EXPECT_EQ(r.code, 0) << describe({command, "--help"}, r);
    EXPECT_EQ(r.out, doc(command)) << command;
    EXPECT_EQ(r.err, "") << command;
  }
}

TEST_F(cli_test, version_prints_one_line) {
  const run_result r = run({"--version"});
  EXPECT_EQ(r.code, 0) << describe({"--version"}, r);
  EXPECT_TRUE(r.out.starts_with("coolbench ")) << r.out;
  EXPECT_EQ(count_of(r.out, '\n'), 1U) << r.out;
  EXPECT_EQ(r.err, "");
}

// ---- Without the NVIDIA driver --------------------------------------------------------------

TEST_F(cli_test, info_without_a_driver_shows_the_host_and_exits_3) {
  const run_result r = run({"info"}, without_driver());
  EXPECT_EQ(r.code, 3) << describe({"info"}, r);
  EXPECT_NE(r.out.find("Host sensors"), std::string::npos) << r.out;
  expect_one_line(r.err, "coolbench info: ");
  EXPECT_NE(r.err.find("driver"), std::string::npos) << r.err;

  const run_result j = run({"info", "--json"}, without_driver());
  EXPECT_EQ(j.code, 3) << describe({"info", "--json"}, j);
  expect_one_line(j.err, "coolbench info: ");
  const nlohmann::json report = nlohmann::json::parse(j.out);
  EXPECT_TRUE(report.contains("host")) << j.out;
  EXPECT_TRUE(report["gpus"].empty()) << j.out;
}

TEST_F(cli_test, gpu_commands_without_a_driver_exit_3_with_one_line) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"who"},
                                               {"monitor"},
                                               {"monitor", "--duration", "1"},
                                               {"wait-cool", "--below", "50"},
                                               {"hidden-state"}}) {
    const run_result r = run(args, without_driver());
    EXPECT_EQ(r.code, 3) << describe(args, r);
    expect_one_line(r.err, "coolbench " + args[0] + ": ");
    EXPECT_NE(r.err.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << r.err;
  }
}

TEST_F(cli_test, a_driver_that_is_not_loaded_exits_3) {
  const run_result r = run({"who"}, with_fakes({{"FAKE_NVML_INIT_RESULT", "9"}}));
  EXPECT_EQ(r.code, 3) << describe({"who"}, r);
  expect_one_line(r.err, "coolbench who: ");
  EXPECT_NE(r.err.find("NVML_ERROR_DRIVER_NOT_LOADED"), std::string::npos) << r.err;
}

// ---- Over the doubles ------------------------------------------------------------------------

TEST_F(cli_test, info_shows_every_gpu) {
  const run_result r = run({"info"});
  EXPECT_EQ(r.code, 0) << describe({"info"}, r);
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("Host sensors"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GPU 0: Fake GPU 0\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GPU 1: Fake GPU 1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("temperature [C]       GPU 40, memory 35"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("power [W]             now 120.0, average 110.0"), std::string::npos)
      << r.out;
}

TEST_F(cli_test, info_of_several_gpus_shows_how_they_are_connected) {
  const run_result r =
      run({"info"}, with_fakes({{"FAKE_NVML_GPUS", "3"}, {"FAKE_CUDA_DEVICES", "0,1,2"}}));
  ASSERT_EQ(r.code, 0) << describe({"info"}, r);
  // GPUs 0 and 1 are NVLink partners on one PCIe switch; GPU 2 is across NUMA nodes.
  EXPECT_NE(r.out.find("Topology (NVML"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  GPU0        X    NV4    SYS\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  GPU2      SYS    SYS      X\n"), std::string::npos) << r.out;
  const run_result j = run({"info", "--json"});
  ASSERT_EQ(j.code, 0) << describe({"info", "--json"}, j);
  const nlohmann::json topology = nlohmann::json::parse(j.out)["topology"];
  ASSERT_EQ(topology.size(), 2U) << j.out;  // 0 -> 1 and 1 -> 0
  EXPECT_EQ(topology[0]["from"], 0);
  EXPECT_EQ(topology[0]["to"], 1);
  EXPECT_EQ(topology[0]["label"], "NV4");
  EXPECT_EQ(topology[0]["pcie_path"], "PIX");
  EXPECT_EQ(topology[0]["direct_nvlinks"], 4);
  EXPECT_EQ(topology[0]["nvlink_p2p"], true);
  const run_result one = run({"info", "--device", "0"});
  EXPECT_EQ(one.out.find("Topology"), std::string::npos) << one.out;  // one GPU: no matrix
}

TEST_F(cli_test, info_json_of_one_device) {
  const run_result r = run({"info", "--device", "0", "--json"});
  ASSERT_EQ(r.code, 0) << describe({"info", "--device", "0", "--json"}, r);
  EXPECT_EQ(r.err, "");
  const nlohmann::json report = nlohmann::json::parse(r.out);
  ASSERT_TRUE(report.contains("host"));
  ASSERT_EQ(report["gpus"].size(), 1U) << r.out;
  const nlohmann::json& gpu = report["gpus"][0];
  EXPECT_EQ(gpu["identity"]["name"], "Fake GPU 0");
  EXPECT_EQ(gpu["identity"]["pci_bus_id"], "00000000:00:00.0");
  EXPECT_EQ(gpu["identity"]["compute_capability"], 90);
  EXPECT_EQ(gpu["sample"]["temp_gpu_c"], 40);
  EXPECT_EQ(gpu["sample"]["power_w"], 120.0);
  EXPECT_FALSE(gpu["sample"].contains("unsupported")) << gpu["sample"].dump();
  EXPECT_TRUE(gpu["processes"].is_array());
}

TEST_F(cli_test, info_json_marks_unsupported_readings) {
  const run_result r = run({"info", "--device", "1", "--json"},
                           with_fakes({{"FAKE_NVML_UNSUPPORTED", "nvmlDeviceGetTemperature"}}));
  ASSERT_EQ(r.code, 0) << describe({"info", "--device", "1", "--json"}, r);
  const nlohmann::json sample = nlohmann::json::parse(r.out)["gpus"][0]["sample"];
  EXPECT_TRUE(sample["temp_gpu_c"].is_null()) << sample.dump();
  EXPECT_EQ(sample["unsupported"], nlohmann::json::array({"temp_gpu_c"})) << sample.dump();
}

TEST_F(cli_test, a_device_that_does_not_exist_exits_4) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"info", "--device", "5"},
                                               {"monitor", "--device", "5", "--duration", "1"},
                                               {"wait-cool", "--below", "50", "--device", "5"}}) {
    const run_result r = run(args);
    EXPECT_EQ(r.code, 4) << describe(args, r);
    expect_one_line(r.err, "coolbench " + args[0] + ": ");
    EXPECT_NE(r.err.find("CUDA sees 2 GPU(s)"), std::string::npos) << r.err;
  }
}

TEST_F(cli_test, who_lists_the_processes) {
  const std::string pid = std::to_string(absent_pid);
  const env_map env = with_fakes({{"FAKE_NVML_PROCESSES", pid + ":1048576"}});
  const run_result r = run({"who"}, env);
  EXPECT_EQ(r.code, 0) << describe({"who"}, r);
  EXPECT_EQ(r.err, "");
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 4U) << r.out;
  EXPECT_TRUE(lines[0].starts_with("GPU 0: Fake GPU 0 (00000000:00:00.0): 1 process holds"))
      << r.out;
  EXPECT_NE(lines[2].find(pid), std::string::npos) << r.out;
  EXPECT_NE(lines[2].find("compute"), std::string::npos) << r.out;
  EXPECT_NE(lines[2].find("fakeproc" + pid), std::string::npos) << r.out;
  EXPECT_EQ(lines[3], "GPU 1: Fake GPU 1 (00000000:01:00.0): no process holds a context");

  const run_result j = run({"who", "--json"}, env);
  ASSERT_EQ(j.code, 0) << describe({"who", "--json"}, j);
  const nlohmann::json report = nlohmann::json::parse(j.out);
  ASSERT_EQ(report.size(), 2U);
  ASSERT_EQ(report[0]["processes"].size(), 1U);
  EXPECT_EQ(report[0]["processes"][0]["pid"], absent_pid);
  EXPECT_EQ(report[0]["processes"][0]["used_memory_bytes"], 1048576);
  EXPECT_TRUE(report[1]["processes"].empty());
}

TEST_F(cli_test, who_without_gpus_says_so) {
  const run_result r = run({"who"}, with_fakes({{"FAKE_CUDA_INIT_RESULT", "100"}}));
  EXPECT_EQ(r.code, 0) << describe({"who"}, r);
  EXPECT_NE(r.out.find("No GPU is visible to CUDA"), std::string::npos) << r.out;
}

// The CSV's rows: each a whole line with the header's columns.
void expect_complete_csv(const std::string& csv, std::size_t min_rows) {
  ASSERT_FALSE(csv.empty());
  EXPECT_TRUE(csv.ends_with("\n")) << "the last line is cut: " << csv.substr(csv.rfind('\n'));
  const std::vector<std::string> lines = lines_of(csv);
  ASSERT_GE(lines.size(), 1 + min_rows) << csv;
  EXPECT_TRUE(lines[0].starts_with("time_s,unix_time_s,gpu,power_w,")) << lines[0];
  const std::size_t columns = csv_cells(lines[0]);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    EXPECT_EQ(csv_cells(lines[i]), columns) << "row " << i << ": " << lines[i];
    EXPECT_TRUE(lines[i].find(",120.000,110.000,40,35,") != std::string::npos) << lines[i];
  }
}

TEST_F(cli_test, monitor_prints_and_writes_a_line_per_sample) {
  const std::string csv = (dir() / "monitor.csv").string();
  const std::vector<std::string> args = {"monitor", "--period", "10", "--duration",
                                         "0.3",     "--csv",    csv};
  const run_result r = run(args);
  ASSERT_EQ(r.code, 0) << describe(args, r);
  EXPECT_EQ(r.err, "");
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_GE(lines.size(), 2U + 10U) << r.out;
  EXPECT_TRUE(lines[0].starts_with("#")) << r.out;
  EXPECT_NE(lines[0].find("gtemp"), std::string::npos) << r.out;
  EXPECT_TRUE(lines[1].starts_with("#")) << r.out;
  for (std::size_t i = 2; i < lines.size(); ++i) {
    EXPECT_NE(lines[i].find(" 40 "), std::string::npos) << lines[i];
    EXPECT_EQ(lines[i].find("n/a"), std::string::npos) << lines[i];
  }
  const std::string text = read_file(csv);
  expect_complete_csv(text, 10);
  // One CSV row per printed line.
  EXPECT_EQ(lines_of(text).size() - 1, lines.size() - 2);
}

TEST_F(cli_test, monitor_cannot_write_its_csv_exits_4) {
  const std::string csv = (dir() / "no-such-folder" / "monitor.csv").string();
  const std::vector<std::string> args = {"monitor", "--duration", "1", "--csv", csv};
  const run_result r = run(args);
  EXPECT_EQ(r.code, 4) << describe(args, r);
  expect_one_line(r.err, "coolbench monitor: ");
  EXPECT_NE(r.err.find(csv), std::string::npos) << r.err;
}

TEST_F(cli_test, monitor_ends_at_ctrl_c_with_a_complete_csv) {
  const std::string csv = (dir() / "interrupted.csv").string();
  const std::vector<std::string> args = {"monitor", "--period", "10", "--csv", csv};
  child c(args, with_fakes(), dir());
  ASSERT_GT(c.pid(), 0);
  // The header is written after the handler is installed: from then on SIGINT is Ctrl-C. Waiting
  // for 10 rows too keeps the test deterministic on a loaded machine.
  const auto start = std::chrono::steady_clock::now();
  while (lines_of(read_file(csv)).size() < 11 && std::chrono::steady_clock::now() - start < 10s) {
    std::this_thread::sleep_for(5ms);
  }
  std::this_thread::sleep_until(start + 300ms);
  ASSERT_EQ(kill(c.pid(), SIGINT), 0) << std::strerror(errno);
  const run_result r = c.wait();
  EXPECT_EQ(r.code, 0) << describe(args, r);
  EXPECT_EQ(r.err, "");
  expect_complete_csv(read_file(csv), 10);
}

TEST_F(cli_test, wait_cool_returns_once_cool_enough) {
  const std::vector<std::string> args = {"wait-cool", "--below", "50"};
  const run_result r = run(args);
  EXPECT_EQ(r.code, 0) << describe(args, r);
  EXPECT_NE(r.out.find("GPU 0: 40 C <= 50 C"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "");
  const run_result quiet = run({"wait-cool", "--below", "40", "--quiet", "--device", "0"});
  EXPECT_EQ(quiet.code, 0);
  EXPECT_EQ(quiet.out, "");
}

TEST_F(cli_test, wait_cool_times_out_with_exit_5) {
  const std::vector<std::string> args = {"wait-cool", "--below",  "30", "--timeout",
                                         "0.5",       "--period", "50"};
  const auto start = std::chrono::steady_clock::now();
  const run_result r = run(args);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.code, 5) << describe(args, r);
  expect_one_line(r.err, "coolbench wait-cool: ");
  EXPECT_NE(r.err.find("40 C"), std::string::npos) << r.err;
  EXPECT_GE(took, 500ms);
  EXPECT_LT(took, 10s);
}

TEST_F(cli_test, wait_cool_on_a_gpu_without_a_temperature_exits_3) {
  const std::vector<std::string> args = {"wait-cool", "--below", "50"};
  const run_result r =
      run(args, with_fakes({{"FAKE_NVML_UNSUPPORTED", "nvmlDeviceGetTemperature"}}));
  EXPECT_EQ(r.code, 3) << describe(args, r);
  expect_one_line(r.err, "coolbench wait-cool: ");
}

}  // namespace
