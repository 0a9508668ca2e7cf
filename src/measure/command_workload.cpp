// A command that prints its own latencies, as a workload (docs/cli/exec.md): prepare() starts
// it with its standard output on a pipe, run() reads its next `latency_ms VALUE` line, release()
// stops it. So the protocol gates with the command gone, and each context is a fresh process.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "coolbench/core/clock.hpp"
#include "coolbench/core/error.hpp"
#include "coolbench/measure/workload.hpp"

extern char** environ;  // POSIX, not declared by unistd.h without _GNU_SOURCE

namespace coolbench::measure {
namespace {

constexpr std::string_view k_prefix = "latency_ms";

/// The value of a `latency_ms VALUE` line (a positive number of milliseconds); empty for any
/// other line. Throws invalid_argument for a latency line whose value is not one.
std::optional<double> latency_of(std::string_view line) {
  if (!line.starts_with(k_prefix)) return std::nullopt;
  line.remove_prefix(k_prefix.size());
  if (line.empty() || (line.front() != ' ' && line.front() != '\t')) return std::nullopt;
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) {
    line.remove_suffix(1);
  }
  double value = 0;
  const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), value);
  if (ec != std::errc{} || end != line.data() + line.size() || !(value > 0) ||
      !std::isfinite(value)) {
    throw invalid_argument("the command printed '" + std::string(k_prefix) + " " +
                           std::string(line) +
                           "': a latency line holds one positive number, in milliseconds");
  }
  return value;
}

class command_workload final : public workload {
 public:
  command_workload(std::vector<std::string> argv, int device, std::chrono::seconds line_timeout)
      : m_argv(std::move(argv)), m_device(device), m_line_timeout(line_timeout) {
    if (m_argv.empty() || m_argv.front().empty()) {
      throw invalid_argument("no command given: put it after '--', e.g. -- python3 bench.py");
    }
  }
  ~command_workload() override { stop(); }
  command_workload(const command_workload&) = delete;
  command_workload& operator=(const command_workload&) = delete;
  command_workload(command_workload&&) = delete;
  command_workload& operator=(command_workload&&) = delete;

  [[nodiscard]] std::string describe() const override {
    std::string text = "command:";
    for (const auto& a : m_argv) text += " " + a;
    return text;
  }
  [[nodiscard]] std::optional<int> device() const override { return m_device; }

  void prepare() override {
    if (m_pid > 0) return;
    start();
  }

  timing run() override {
    prepare();
    for (;;) {
      const std::string line = next_line();
      if (const auto ms = latency_of(line)) {
        timing t;
        t.end_ns = steady_now_ns();
        t.start_ns = t.end_ns - static_cast<std::int64_t>(std::llround(*ms * 1e6));
        t.latency_ms = *ms;
        ++m_latencies;
        return t;
      }
    }
  }

  void release() override { stop(); }

 private:
  void start() {
    // Everything the child needs is made before the fork: between fork and exec a child of a
    // threaded process (the telemetry sampler runs) may not allocate.
    std::vector<char*> args;
    for (auto& a : m_argv) args.push_back(a.data());
    args.push_back(nullptr);
    std::vector<std::string> environment{"COOLBENCH_DEVICE=" + std::to_string(m_device)};
    for (char** e = environ; *e != nullptr; ++e) {
      if (!std::string_view(*e).starts_with("COOLBENCH_DEVICE=")) environment.emplace_back(*e);
    }
    std::vector<char*> envp;
    for (auto& e : environment) envp.push_back(e.data());
    envp.push_back(nullptr);
    const std::string cannot = "coolbench exec: cannot run '" + m_argv[0] + "'\n";
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw error(std::string("pipe: ") + std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      throw error(std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
      // A process group of its own, so stop() ends whatever it started too (sh -c '...');
      // stdout to the pipe (dup2 clears close-on-exec on the copy), then the command.
      ::setpgid(0, 0);
      ::dup2(fds[1], STDOUT_FILENO);
      ::execvpe(args[0], args.data(), envp.data());
      (void)!::write(STDERR_FILENO, cannot.data(), cannot.size());
      ::_exit(127);
    }
    ::setpgid(pid, pid);  // as the child does: whichever runs first, the group exists
    ::close(fds[1]);
    m_pid = pid;
    m_fd = fds[0];
    m_buffer.clear();
    m_latencies = 0;
  }

  /// The next line of the command's output; throws when it ends or falls silent.
  std::string next_line() {
    const auto deadline = std::chrono::steady_clock::now() + m_line_timeout;
    for (;;) {
      if (const auto newline = m_buffer.find('\n'); newline != std::string::npos) {
        std::string line = m_buffer.substr(0, newline);
        m_buffer.erase(0, newline + 1);
        return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        stop();
        throw error("the command printed no line for " + std::to_string(m_line_timeout.count()) +
                    " s: it must keep printing 'latency_ms VALUE' lines, flushed, until coolbench "
                    "stops it (docs/cli/exec.md)");
      }
      pollfd p{m_fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 200))) <= 0) continue;
      char chunk[4096];
      const ssize_t got = ::read(m_fd, chunk, sizeof chunk);
      if (got > 0) {
        m_buffer.append(chunk, static_cast<std::size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        ended();
      }
    }
  }

  [[noreturn]] void ended() {
    const int status = reap(false);
    const int latencies = m_latencies;
    throw error("the command ended (" +
                (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                   : "signal " + std::to_string(WTERMSIG(status))) +
                ") after " + std::to_string(latencies) +
                " latencies: it must keep printing 'latency_ms VALUE' lines until coolbench "
                "stops it (loop forever; docs/cli/exec.md)");
  }

  /// Ends the command and its process group (SIGTERM, then SIGKILL after 2 s) and reaps it.
  void stop() {
    if (m_pid > 0) (void)reap(true);
  }

  /// Waits (2 s at most, then SIGKILL) until the command has exited, ends what it left in its
  /// group (while it is a zombie its group id cannot be reused), reaps it; its wait status.
  int reap(bool terminate) {
    if (terminate) ::kill(-m_pid, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    siginfo_t info{};
    while (::waitid(P_PID, static_cast<id_t>(m_pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           info.si_pid == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(-m_pid, SIGKILL);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ::kill(-m_pid, SIGKILL);
    int status = 0;
    ::waitpid(m_pid, &status, 0);
    ::close(m_fd);
    m_pid = -1;
    m_fd = -1;
    m_buffer.clear();
    return status;
  }

  std::vector<std::string> m_argv;
  int m_device;
  std::chrono::seconds m_line_timeout;
  pid_t m_pid = -1;
  int m_fd = -1;
  std::string m_buffer;
  int m_latencies = 0;
};

}  // namespace

std::unique_ptr<workload> make_command_workload(std::vector<std::string> argv, int device,
                                                std::chrono::seconds line_timeout) {
  return std::make_unique<command_workload>(std::move(argv), device, line_timeout);
}

}  // namespace coolbench::measure
