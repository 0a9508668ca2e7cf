#include "cli/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "cli/interrupt.hpp"
#include "coolbench/core/error.hpp"

namespace coolbench::cli {

child_process::child_process(std::vector<std::string> args) {
  int fds[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw error(std::string("cannot create a socket pair for the child: ") + std::strerror(errno));
  }
  m_fd = fds[0];
  // Everything the child needs is built before fork: between fork and exec it only calls
  // async-signal-safe functions (this process has threads).
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  m_pid = fork();
  if (m_pid == 0) {
    if (fds[1] == child_socket_fd) {
      if (fcntl(child_socket_fd, F_SETFD, 0) != 0) _exit(126);
    } else if (dup2(fds[1], child_socket_fd) < 0) {
      _exit(126);
    }
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  const int fork_errno = errno;
  close(fds[1]);
  if (m_pid < 0) {
    close(m_fd);
    throw error(std::string("cannot start the child process: ") + std::strerror(fork_errno));
  }
}

child_process::~child_process() {
  if (m_pid > 0) {
    kill(m_pid, SIGKILL);
    waitpid(m_pid, nullptr, 0);
  }
  if (m_fd >= 0) close(m_fd);
}

int child_process::wait() {
  int status = 0;
  while (waitpid(m_pid, &status, 0) < 0) {
    if (errno != EINTR) throw error(std::string("waitpid failed: ") + std::strerror(errno));
  }
  m_pid = -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

void send_line(int fd, const std::string& line) {
  std::size_t sent = 0;
  while (sent < line.size()) {
    const ssize_t n = send(fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw error(std::string("cannot talk to the other process: ") + std::strerror(errno));
    sent += static_cast<std::size_t>(n);
  }
}

std::optional<std::string> receive_line(int fd, std::chrono::steady_clock::duration limit,
                                        bool stop_on_interrupt) {
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (stop_on_interrupt && interrupted()) return std::nullopt;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, 100);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return std::nullopt;
    if (ready == 0) continue;
    char c = 0;
    const ssize_t n = read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    if (c == '\n') return line;
    line += c;
  }
  return std::nullopt;
}

}  // namespace coolbench::cli
