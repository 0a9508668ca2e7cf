// `coolbench release-check` run as a child process where no GPU is needed: the documented exit
// codes of bad command lines and of a machine without the driver, and the help text
// (docs/cli/release-check.md). tests/gpu/release_check_gpu_test.cpp runs it on a GPU.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, not in unistd.h

namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct result {
  int code = -1;
  std::string out;
  std::string err;
};

class release_check_test : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::path(::testing::TempDir()) / "coolbench_rc_test.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr) << std::strerror(errno);
    m_dir = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(m_dir, ignored);
  }

  /// Runs coolbench with `args`; `extra_env` entries ("NAME=value") replace this process's.
  result run(const std::vector<std::string>& args, const std::vector<std::string>& extra_env = {}) {
    std::vector<std::string> argv_text = {COOLBENCH_EXE};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<std::string> env_text;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      const std::string name = entry.substr(0, entry.find('='));
      const bool replaced = std::any_of(extra_env.begin(), extra_env.end(), [&](const auto& x) {
        return x.substr(0, x.find('=')) == name;
      });
      if (!replaced && !name.starts_with("FAKE_")) env_text.push_back(entry);
    }
    env_text.insert(env_text.end(), extra_env.begin(), extra_env.end());
    std::vector<char*> argv;
    for (auto& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (auto& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);

    const std::string out_path = (m_dir / "out").string();
    const std::string err_path = (m_dir / "err").string();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid = -1;
    const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    result r;
    if (spawned != 0) {
      ADD_FAILURE() << "cannot start " << argv[0] << ": " << std::strerror(spawned);
      return r;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) r.code = WEXITSTATUS(status);
    r.out = read_file(out_path);
    r.err = read_file(err_path);
    return r;
  }

  [[nodiscard]] const fs::path& dir() const noexcept { return m_dir; }

 private:
  fs::path m_dir;
};

std::string describe(const result& r) {
  return "--- exit " + std::to_string(r.code) + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
}

void expect_one_line(const std::string& err, const std::string& needle) {
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_TRUE(err.starts_with("coolbench release-check: ")) << err;
  EXPECT_NE(err.find(needle), std::string::npos) << err;
}

// No NVIDIA driver: NVML cannot be opened (the CUDA driver is the test double, so nothing real
// is touched either).
std::vector<std::string> without_driver() {
  return {"COOLBENCH_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1",
          std::string("COOLBENCH_CUDA_LIBRARY=") + FAKE_CUDA_PATH};
}

TEST_F(release_check_test, bad_values_are_usage_errors) {
  for (const auto& [args, option] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"release-check", "--hold", "-1"}, "--hold"},
           {{"release-check", "--hold", "x"}, "--hold"},
           {{"release-check", "--timeout", "0"}, "--timeout"},
           {{"release-check", "--device", "-2"}, "--device"},
           {{"release-check", "--bogus"}, "--bogus"}}) {
    const result r = run(args, without_driver());
    EXPECT_EQ(r.code, 2) << describe(r);
    EXPECT_EQ(r.out, "");
    expect_one_line(r.err, option);
  }
}

TEST_F(release_check_test, without_a_driver_exits_3_with_one_line) {
  const result r = run({"release-check", "--hold", "0"}, without_driver());
  EXPECT_EQ(r.code, 3) << describe(r);
  EXPECT_EQ(r.out, "");
  expect_one_line(r.err, "/nonexistent/libnvidia-ml.so.1");
}

TEST_F(release_check_test, an_unwritable_json_file_exits_4_before_anything_runs) {
  const std::string json = (dir() / "no-such-folder" / "out.json").string();
  const result r = run({"release-check", "--json", json}, without_driver());
  EXPECT_EQ(r.code, 4) << describe(r);
  expect_one_line(r.err, json);
}

TEST_F(release_check_test, help_prints_the_documentation) {
  const std::string doc =
      read_file(fs::path(PROJECT_SOURCE_DIR) / "docs" / "cli" / "release-check.md");
  ASSERT_FALSE(doc.empty());
  for (const char* flag : {"--help", "-h"}) {
    const result r = run({"release-check", flag}, without_driver());
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_EQ(r.out, doc);
    EXPECT_EQ(r.err, "");
  }
  // The child's options are not for users.
  EXPECT_EQ(doc.find("--child"), std::string::npos);
  const result top = run({"--help"}, without_driver());
  EXPECT_NE(top.out.find("release-check"), std::string::npos) << top.out;
}

}  // namespace
