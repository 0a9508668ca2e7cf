#include "device/detail/context_probe_runner.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <ctime>
#include <vector>

#include <nlohmann/json.hpp>

#include "coolbench/core/error.hpp"

extern char** environ;  // NOLINT: POSIX

namespace coolbench::device::detail {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* probe_name = "coolbench-context-probe";
constexpr auto probe_timeout = 30s;

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::array<char, 32> text{};
  std::strftime(text.data(), text.size(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text.data();
}

/// The child's stdout, read until it exits or the time-out kills it.
std::string read_child(pid_t pid, int fd) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + probe_timeout;
  std::array<char, 4096> buffer{};
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      kill(pid, SIGKILL);
      break;
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = read(fd, buffer.data(), buffer.size());
    if (n <= 0) break;
    out.append(buffer.data(), static_cast<std::size_t>(n));
  }
  return out;
}

/// Runs the probe once, with CUDA_MODULE_LOADING=`loading`; its JSON answer.
json run_once(const std::filesystem::path& probe, int ordinal, const char* api, const char* loading,
              bool granularity) {
  std::vector<std::string> args = {probe.string(), "--ordinal", std::to_string(ordinal), "--api",
                                   api};
  if (granularity) args.insert(args.end(), {"--allocate", "1"});
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "CUDA_MODULE_LOADING=", 20) != 0) env.emplace_back(*e);
  }
  env.push_back(std::string("CUDA_MODULE_LOADING=") + loading);
  std::vector<char*> argv;
  std::vector<char*> envp;
  for (auto& a : args) argv.push_back(a.data());
  for (auto& e : env) envp.push_back(e.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);

  std::array<int, 2> pipe_fds{};
  // Close-on-exec: a probe another GPU's thread spawns meanwhile must not inherit this pipe
  // (it would hold the write end open, and this read would wait for that child too).
  if (pipe2(pipe_fds.data(), O_CLOEXEC) != 0) throw error("cannot run the probe: pipe() failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (spawned != 0) {
    close(pipe_fds[0]);
    throw error("cannot run " + probe.string() + ": " + std::strerror(spawned));
  }
  const std::string out = read_child(pid, pipe_fds[0]);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  json answer;
  try {
    answer = json::parse(out);
  } catch (const json::exception&) {
    throw error(probe.string() + " (" + api + " API, " + loading + ") gave no answer" +
                (WIFSIGNALED(status) ? " (killed: it ran over 30 s or crashed)" : ""));
  }
  if (answer.contains("error")) {
    throw error(probe.string() + " (" + api + " API, " + loading +
                "): " + answer["error"].get<std::string>());
  }
  return answer;
}

}  // namespace

std::optional<std::filesystem::path> find_context_probe(std::string& tried) {
  std::vector<std::filesystem::path> candidates;
  if (const char* set = std::getenv("COOLBENCH_CONTEXT_PROBE"); set != nullptr && *set != '\0')
    candidates.emplace_back(set);
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&find_context_probe), &info) != 0 &&  // NOLINT
      info.dli_fname != nullptr) {
    std::error_code ec;
    const auto here = std::filesystem::canonical(info.dli_fname, ec).parent_path();
    if (!ec) {
      for (const char* dir : {".", "../bin", "../libexec/coolbench", "../../bin"})
        candidates.push_back((here / dir / probe_name).lexically_normal());
    }
  }
#ifdef COOLBENCH_CONTEXT_PROBE_INSTALLED
  candidates.emplace_back(COOLBENCH_CONTEXT_PROBE_INSTALLED);
#endif
#ifdef COOLBENCH_CONTEXT_PROBE_BUILT
  candidates.emplace_back(COOLBENCH_CONTEXT_PROBE_BUILT);
#endif
  for (const auto& c : candidates) {
    if (access(c.c_str(), X_OK) == 0) return c;
    tried += (tried.empty() ? "" : ", ") + c.string();
  }
  return std::nullopt;
}

bare_context_figures run_context_probe(int ordinal, const baseline_key& key) {
  std::string tried;
  const auto probe = find_context_probe(tried);
  if (!probe) {
    throw error(std::string(probe_name) + " was not found (looked at " + tried +
                "); set COOLBENCH_CONTEXT_PROBE to its path");
  }
  bare_context_figures f;
  const json runtime_lazy = run_once(*probe, ordinal, "runtime", "LAZY", true);
  if (runtime_lazy.value("uuid", "") != key.uuid ||
      runtime_lazy.value("driver_version", "") != key.driver_version ||
      runtime_lazy.value("cuda_driver_version", 0) != key.cuda_driver_version) {
    throw error("the probe saw another GPU or driver than this process (" +
                runtime_lazy.value("uuid", "?") + ", driver " +
                runtime_lazy.value("driver_version", "?") + ")");
  }
  f.runtime_lazy = runtime_lazy.at("context_bytes").get<std::uint64_t>();
  const auto& steps = runtime_lazy.at("allocations");
  if (steps.empty()) throw error("the probe's 1-byte allocation gave no figure");
  f.granularity = steps.at(0).at("delta_bytes").get<std::uint64_t>();
  f.runtime_eager =
      run_once(*probe, ordinal, "runtime", "EAGER", false).at("context_bytes").get<std::uint64_t>();
  f.driver_lazy =
      run_once(*probe, ordinal, "driver", "LAZY", false).at("context_bytes").get<std::uint64_t>();
  f.driver_eager =
      run_once(*probe, ordinal, "driver", "EAGER", false).at("context_bytes").get<std::uint64_t>();
  f.measured_at = utc_now();
  f.probe = probe->string();
  return f;
}

void touch_with_context_probe(int ordinal) {
  std::string tried;
  const auto probe = find_context_probe(tried);
  if (!probe) {
    throw error(std::string(probe_name) + " was not found (looked at " + tried +
                "); set COOLBENCH_CONTEXT_PROBE to its path");
  }
  (void)run_once(*probe, ordinal, "runtime", "LAZY", false);
}

}  // namespace coolbench::device::detail
