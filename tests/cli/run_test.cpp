// `coolbench run` as a child process where no GPU is needed: the documented
// exit codes of bad command lines, a missing model and a missing driver, the
// help text, and a short run of a tiny GPT-2 on the CPU backend with its
// JSON (docs/run-json.md) and CSV. The protocol itself is tested on a
// simulated GPU in tests/measure.
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
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

class run_test : public coolbench::testing::coolbench_test {
 protected:
  run_test() : coolbench_test("coolbench_run_test") {}

  // No NVIDIA driver; the CUDA driver is the test double.
  run_result run(const std::vector<std::string>& args) {
    return coolbench_test::run(args, coolbench::testing::without_driver(FAKE_CUDA_PATH));
  }

  std::string tiny_model() {
    const std::string path = (dir() / "tiny.onnx").string();
    const run_result r = run({"model", "gpt2", "--layers", "1", "--hidden", "16", "--heads", "2",
                              "--vocab", "50", "--seq", "4", "--positions", "8", "-o", path});
    EXPECT_EQ(r.code, 0) << describe(r);
    return path;
  }
};

void expect_one_line(const std::string& err, const std::string& needle) {
  coolbench::testing::expect_one_line(err, "run", needle);
}

TEST_F(run_test, impossible_bounds_and_bad_values_are_usage_errors) {
  const std::string model = tiny_model();
  for (const auto& [args, needle] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"run", model, "--min-samples", "10", "--max-samples", "5"}, "--min-samples"},
           {{"run", model, "--min-time", "10", "--max-time", "1"}, "--min-time"},
           {{"run", model, "--target-temp", "50", "--max-temp", "40"}, "--max-temp"},
           {{"run", model, "--dim", "sequence"}, "--dim takes NAME=VALUE"},
           {{"run", model, "--dim", "sequence=0"}, "--dim takes NAME=VALUE"},
           {{"run", model, "--workload", "gemm:fp16:1:1:1"}, "not both"},
           {{"run", "--workload", "gemm:fp8:1:1:1"}, "fp8"},
           {{"run", "--mode", "warm"}, "--mode"},
           {{"run", "--rel-ci", "0"}, "--rel-ci"},
           {{"run", "--bogus"}, "--bogus"},
           {{"run", model, "--device", "gpu"}, "must be cpu or a CUDA ordinal"},
           {{"run", model, "--device", "-1"}, "--device"},
           {{"run", "--workload", "gemm:fp16:1:1:1", "--device", "cpu"}, "--device cpu"}}) {
    const run_result r = run(args);
    EXPECT_EQ(r.code, 2) << describe(r);
    expect_one_line(r.err, needle);
  }
}

TEST_F(run_test, a_missing_model_exits_4_and_no_driver_exits_3) {
  const run_result missing = run({"run", (dir() / "nothing.onnx").string()});
  EXPECT_EQ(missing.code, 4) << describe(missing);
  expect_one_line(missing.err, "nothing.onnx");
  // A file that is no ONNX model fails the same way, before any measuring.
  const fs::path garbage = dir() / "garbage.onnx";
  std::ofstream(garbage) << "this is not a protobuf";
  const run_result corrupt = run({"run", garbage.string()});
  EXPECT_EQ(corrupt.code, 4) << describe(corrupt);
  expect_one_line(corrupt.err, "garbage.onnx: not a valid ONNX model");
  EXPECT_EQ(corrupt.out.find("median"), std::string::npos) << corrupt.out;
  const run_result gpu = run({"run", "--workload", "gemm:fp16:64:64:64"});
  EXPECT_EQ(gpu.code, 3) << describe(gpu);
  expect_one_line(gpu.err, "/nonexistent/libnvidia-ml.so.1");
}

TEST_F(run_test, a_model_on_an_explicit_gpu_without_a_driver_exits_3) {
  const std::string model = tiny_model();
  const run_result r =
      run({"run", model, "--device", "0", "--dim", "batch=1", "--dim", "sequence=4"});
  EXPECT_EQ(r.code, 3) << describe(r);
  EXPECT_EQ(r.out.find("median"), std::string::npos) << r.out;
}

// Several GPUs (docs/cli/run.md, "Several GPUs"): a list is checked before anything runs,
// and without a driver the GPUs are not there (exit 3). The runs themselves are tested on
// simulated GPUs (tests/measure/multi_test.cpp, tests/report/multi_report_test.cpp).
TEST_F(run_test, several_gpus_are_checked_and_need_a_driver) {
  for (const auto& [args, needle] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"run", "--workload", "gemm:fp16:64:64:64", "--device", "0,0"}, "listed twice"},
           {{"run", "--workload", "gemm:fp16:64:64:64", "--device", "0,"}, "'' in '0,'"},
           {{"run", "--workload", "gemm:fp16:64:64:64", "--device", "al"}, "several GPUs"},
           {{"run", "--workload", "gemm:fp16:64:64:64", "--device", "0,1", "--against",
             "gemm:fp16:64:64:65"},
            "--against measures on one GPU"}}) {
    const run_result r = run(args);
    EXPECT_EQ(r.code, 2) << describe(r);
    expect_one_line(r.err, needle);
  }
  for (const char* device : {"all", "0,1", "1,0,2"}) {
    const run_result r = run({"run", "--workload", "gemm:fp16:64:64:64", "--device", device});
    EXPECT_EQ(r.code, 3) << describe(r);
    expect_one_line(r.err, std::string("--device ") + device + " needs the CUDA runtime");
  }
}

TEST_F(run_test, an_explicit_cpu_device_runs_without_the_fallback_line) {
  const std::string model = tiny_model();
  const run_result r = run({"run", model, "--device", "cpu", "--dim", "batch=1", "--dim",
                            "sequence=4", "--min-time", "0.1", "--max-time", "1"});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out.find("running the model on the CPU"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(cpu"), std::string::npos) << r.out;
}

TEST_F(run_test, an_unbound_model_dimension_is_a_usage_error_naming_the_flag) {
  const std::string model = tiny_model();
  const fs::path json_path = dir() / "unbound.json";
  const run_result r = run({"run", model, "--dim", "sequence=4", "--json", json_path.string()});
  EXPECT_EQ(r.code, 2) << describe(r);
  expect_one_line(r.err,
                  "dimension 0 is the symbol 'batch'; bind it (coolbench run --dim batch=1)");
  EXPECT_EQ(r.out.find("median"), std::string::npos) << r.out;  // no empty summary
  // The file is written all the same, marked incomplete.
  const auto doc = nlohmann::json::parse(read_file(json_path));
  EXPECT_FALSE(doc["complete"].get<bool>());
  EXPECT_EQ(doc["summary"]["stop_reason"], "invalid input");
}

TEST_F(run_test, help_prints_the_documentation) {
  const std::string doc = read_file(fs::path(PROJECT_SOURCE_DIR) / "docs" / "cli" / "run.md");
  ASSERT_FALSE(doc.empty());
  const run_result r = run({"run", "--help"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, doc);
}

TEST_F(run_test, a_cpu_model_run_writes_json_and_csv) {
  const std::string model = tiny_model();
  const fs::path json_path = dir() / "run.json";
  const fs::path csv_path = dir() / "run.csv";
  const run_result r =
      run({"run", model, "--dim", "batch=1", "--dim", "sequence=4", "--min-time", "0.2",
           "--max-time", "3", "--json", json_path.string(), "--csv", csv_path.string()});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("median "), std::string::npos) << r.out;
  // No --device and no GPU: the CPU, said in one line.
  EXPECT_NE(r.out.find("no NVIDIA GPU or driver found: running the model on the CPU (choose with "
                       "--device cpu or --device N)\n"),
            std::string::npos)
      << r.out;
  const auto doc = nlohmann::json::parse(read_file(json_path));
  EXPECT_EQ(doc["schema"], "coolbench.run/1");
  EXPECT_TRUE(doc["complete"].get<bool>());
  EXPECT_TRUE(doc["environment"]["gpu"].is_null());
  EXPECT_EQ(doc["configuration"]["mode"], "cold");
  EXPECT_EQ(doc["configuration"]["contexts"], 1);  // a host workload is never spread
  const int kept = doc["summary"]["latency"]["count"].get<int>();
  EXPECT_GE(kept, 30);
  EXPECT_GT(doc["summary"]["latency"]["median_ms"].get<double>(), 0);
  EXPECT_GT(doc["samples"].size(), static_cast<std::size_t>(kept));  // warm-up too
  EXPECT_FALSE(fs::exists(json_path.string() + ".tmp"));
  const std::string csv = read_file(csv_path);
  EXPECT_TRUE(csv.starts_with("phase,burst,start_ns,end_ns,latency_ms,")) << csv.substr(0, 80);
  EXPECT_EQ(static_cast<std::size_t>(std::count(csv.begin(), csv.end(), '\n')),
            doc["samples"].size() + 1);
}

}  // namespace

namespace {

/// `args` run with stdin, stdout and stderr on a pseudo-terminal, as a person at a terminal
/// runs it; everything the terminal received, and the exit code.
std::pair<int, std::string> run_on_a_terminal(const std::vector<std::string>& args,
                                              const env_map& env) {
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid == 0) {
    std::vector<std::string> words{COOLBENCH_EXE};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    std::vector<std::string> assignments;
    for (const auto& [k, v] : env) assignments.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& a : assignments) envp.push_back(a.data());
    envp.push_back(nullptr);
    execve(COOLBENCH_EXE, argv.data(), envp.data());
    _exit(127);
  }
  std::string seen;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(master, buffer, sizeof buffer);
    if (n <= 0) break;  // EIO once the child has closed the terminal
    seen.append(buffer, static_cast<std::size_t>(n));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  close(master);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, seen};
}

}  // namespace

// A run of more than a few seconds on a terminal shows where it is, on one line rewritten in
// place; --quiet, or output that is not a terminal (every other test here), shows none.
TEST_F(run_test, a_long_run_on_a_terminal_shows_a_live_line_and_quiet_does_not) {
  const std::string model = tiny_model();
  const fs::path html = dir() / "run.html";
  const std::vector<std::string> args{"run",        model,        "--dim",  "batch=1",    "--dim",
                                      "sequence=4", "--min-time", "3.5",    "--max-time", "6",
                                      "--rel-ci",   "0.4",        "--html", html.string()};
  const auto env = coolbench::testing::without_driver(FAKE_CUDA_PATH);
  const auto [code, seen] = run_on_a_terminal(args, env);
  ASSERT_EQ(code, 0) << seen;
  EXPECT_NE(seen.find("samples kept"), std::string::npos) << seen;
  EXPECT_NE(seen.find("\r\x1b[K"), std::string::npos) << "the line is taken off again";
  // --html wrote the run's report.
  const std::string page = read_file(html);
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_NE(page.find("id=\"timeline\""), std::string::npos);

  std::vector<std::string> quiet = args;
  quiet.push_back("--quiet");
  const auto [quiet_code, quiet_seen] = run_on_a_terminal(quiet, env);
  ASSERT_EQ(quiet_code, 0) << quiet_seen;
  EXPECT_EQ(quiet_seen.find("samples kept"), std::string::npos) << quiet_seen;
  EXPECT_EQ(quiet_seen.find("\x1b[K"), std::string::npos) << quiet_seen;

  // Not a terminal: the same run prints no live line (the golden tests hold the whole output).
  const run_result piped = run({"run", model, "--dim", "batch=1", "--dim", "sequence=4",
                                "--min-time", "2.5", "--max-time", "4", "--rel-ci", "0.4"});
  ASSERT_EQ(piped.code, 0) << describe(piped);
  EXPECT_EQ(piped.err.find("samples kept"), std::string::npos) << piped.err;
  EXPECT_EQ(piped.out.find("\x1b[K"), std::string::npos);
}
