// The built coolbench executable (COOLBENCH_EXE, defined by tests/cli/CMakeLists.txt) run as a
// child process with a chosen environment, its exit code, stdout and stderr collected: the
// plumbing of the tests that run the command.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, not in unistd.h

namespace coolbench::testing {

using env_map = std::map<std::string, std::string>;

/// The whole content of `path`; empty when it cannot be read.
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The environment of this process without the variables whose names start with one of
/// `dropped_prefixes` (those that script coolbench or the doubles).
inline env_map inherited_environment(std::initializer_list<std::string_view> dropped_prefixes) {
  env_map env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::size_t equals = text.find('=');
    if (equals == std::string::npos) continue;
    const std::string name = text.substr(0, equals);
    const bool dropped =
        std::any_of(dropped_prefixes.begin(), dropped_prefixes.end(),
                    [&](const std::string_view prefix) { return name.starts_with(prefix); });
    if (!dropped) env[name] = text.substr(equals + 1);
  }
  return env;
}

struct run_result {
  int code = -1;  ///< exit status; -1 when the child did not exit normally
  std::string out;
  std::string err;
};

/// A coolbench child whose stdin is /dev/null and whose stdout and stderr go to files in `dir`.
class child {
 public:
  child(const std::vector<std::string>& args, const env_map& env,
        const std::filesystem::path& dir) {
    static int serial = 0;
    const std::string stem = "run" + std::to_string(++serial);
    m_out_path = dir / (stem + ".out");
    m_err_path = dir / (stem + ".err");
    // Everything the child needs is built before fork: it only dup2s and execs.
    std::vector<std::string> argv_text = {COOLBENCH_EXE};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<std::string> env_text;
    for (const auto& [name, value] : env) env_text.push_back(name + "=" + value);
    std::vector<char*> argv;
    for (auto& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (auto& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    const int out = open(m_out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    const int err = open(m_err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out < 0 || err < 0 || null < 0) {
      ADD_FAILURE() << "cannot open the output files in " << dir << ": " << std::strerror(errno);
      for (const int fd : {out, err, null}) {
        if (fd >= 0) close(fd);
      }
      return;
    }
    m_pid = fork();
    if (m_pid == 0) {
      if (dup2(null, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0 ||
          dup2(err, STDERR_FILENO) < 0) {
        _exit(126);
      }
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    if (m_pid < 0) ADD_FAILURE() << "fork failed: " << std::strerror(errno);
    close(out);
    close(err);
    close(null);
  }
  ~child() {
    if (m_pid > 0) {
      kill(m_pid, SIGKILL);
      waitpid(m_pid, nullptr, 0);
    }
  }
  child(const child&) = delete;
  child& operator=(const child&) = delete;
  child(child&&) = delete;
  child& operator=(child&&) = delete;

  /// For signals (SIGINT is Ctrl-C); not positive when the child could not be started.
  [[nodiscard]] pid_t pid() const noexcept { return m_pid; }

  /// Waits for the child to end (killing it after `limit`) and collects its output.
  run_result wait(std::chrono::seconds limit = std::chrono::seconds(20)) {
    run_result r;
    if (m_pid <= 0) return r;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (true) {
      const pid_t done = waitpid(m_pid, &status, WNOHANG);
      if (done == m_pid) break;
      if (done < 0 && errno != EINTR) {
        ADD_FAILURE() << "waitpid failed: " << std::strerror(errno);
        return r;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "coolbench still runs after " << limit.count() << " s: killed";
        kill(m_pid, SIGKILL);
        waitpid(m_pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    m_pid = -1;
    if (WIFEXITED(status)) {
      r.code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      ADD_FAILURE() << "coolbench died of signal " << WTERMSIG(status);
    }
    r.out = read_file(m_out_path);
    r.err = read_file(m_err_path);
    return r;
  }

 private:
  pid_t m_pid = -1;
  std::filesystem::path m_out_path;
  std::filesystem::path m_err_path;
};

/// The environment of a machine without the NVIDIA driver: NVML cannot be
/// opened, and the CUDA driver is the test double at `fake_cuda` (so nothing
/// real is touched either). The CUDA runtime linked into coolbench is told to
/// see no GPU too, so on a GPU machine the command does not pick GPU 0 for a
/// model and then find NVML missing.
inline env_map without_driver(const std::string& fake_cuda) {
  env_map env = inherited_environment({"COOLBENCH_", "FAKE_", "CUDA_VISIBLE_DEVICES"});
  env["COOLBENCH_NVML_LIBRARY"] = "/nonexistent/libnvidia-ml.so.1";
  env["COOLBENCH_CUDA_LIBRARY"] = fake_cuda;
  env["CUDA_VISIBLE_DEVICES"] = "";
  return env;
}

/// Exit code, stdout and stderr, for a failed expectation's message.
inline std::string describe(const run_result& r) {
  return "--- exit " + std::to_string(r.code) + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
}

/// `err` is one line, "coolbench COMMAND: ...", that contains `needle`.
inline void expect_one_line(const std::string& err, std::string_view command,
                            const std::string& needle) {
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_TRUE(err.starts_with("coolbench " + std::string(command) + ": ")) << err;
  EXPECT_NE(err.find(needle), std::string::npos) << err;
}

/// A fixture that gives each test a fresh folder (removed after it) and runs coolbench there.
class coolbench_test : public ::testing::Test {
 protected:
  /// `stem`: the folder's name in ::testing::TempDir(), before the random suffix.
  explicit coolbench_test(std::string stem) : m_stem(std::move(stem)) {}

  void SetUp() override {
    std::string pattern =
        (std::filesystem::path(::testing::TempDir()) / (m_stem + ".XXXXXX")).string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr) << std::strerror(errno);
    m_dir = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(m_dir, ignored);
  }

  /// Runs coolbench with `args` and exactly the environment `env` to its end.
  run_result run(const std::vector<std::string>& args, const env_map& env) {
    child c(args, env, m_dir);
    return c.wait();
  }

  [[nodiscard]] const std::filesystem::path& dir() const noexcept { return m_dir; }

 private:
  std::string m_stem;
  std::filesystem::path m_dir;
};

}  // namespace coolbench::testing
