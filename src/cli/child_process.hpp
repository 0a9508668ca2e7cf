// A child process of this binary that the parent talks to line by line: the parent starts
// /proc/self/exe again with the arguments it chooses, and the two exchange text lines over a
// Unix socket pair (the child finds its end on file descriptor `child_socket_fd`). release-check
// uses it for its process-exit mode, where the context must end with a process of its own.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace coolbench::cli {

/// The descriptor on which the child finds its end of the socket.
inline constexpr int child_socket_fd = 3;

/// Starts the child and, when it goes out of scope before wait(), kills and reaps it.
class child_process {
 public:
  /// Runs this binary with `args` (argv[0] first), its end of the socket on child_socket_fd.
  /// Throws coolbench::error when the socket pair or the fork fails.
  explicit child_process(std::vector<std::string> args);
  ~child_process();
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;
  child_process(child_process&&) = delete;
  child_process& operator=(child_process&&) = delete;

  [[nodiscard]] pid_t pid() const noexcept { return m_pid; }
  /// The parent's end of the socket.
  [[nodiscard]] int fd() const noexcept { return m_fd; }

  /// Waits for the child's exit; its exit status, or 128 + signal.
  int wait();

 private:
  pid_t m_pid = -1;
  int m_fd = -1;
};

/// Writes `line` (with its newline) to the socket. MSG_NOSIGNAL: a peer that died is an error
/// here (coolbench::error), not a SIGPIPE.
void send_line(int fd, const std::string& line);

/// Reads one line, without its newline, waiting at most `limit`; empty when the peer closed the
/// socket, time ran out, or (with `stop_on_interrupt`) the user interrupted.
[[nodiscard]] std::optional<std::string> receive_line(int fd,
                                                      std::chrono::steady_clock::duration limit,
                                                      bool stop_on_interrupt);

}  // namespace coolbench::cli
