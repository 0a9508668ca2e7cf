// The live progress line (cli/live_line.hpp): its text, nothing written to what is not a
// terminal or when quiet, and on a pseudo-terminal the line drawn in place and taken off.
#include "cli/live_line.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <unistd.h>

#include <string>

namespace coolbench::cli {
namespace {

measure::run_status burst_status(double elapsed_s) {
  measure::run_status s;
  s.phase = "measuring";
  s.label = "B";
  s.burst = 3;
  s.kept = 1234;
  s.rel_ci_now = 0.0042;
  s.elapsed_s = elapsed_s;
  return s;
}

/// What is waiting on `fd`, without blocking.
std::string drain(int fd) {
  (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::string out;
  char buffer[1024];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n <= 0) return out;
    out.append(buffer, static_cast<std::size_t>(n));
  }
}

TEST(LiveLine, SaysWhereTheRunIs) {
  EXPECT_EQ(live_line::text(burst_status(12.4)),
            "B burst 3 | 1234 samples kept | CI now ±0.42% | 12 s");
  measure::run_status gating;
  gating.phase = "gating";
  gating.target_temp_c = 45;
  gating.temp_c = 52;
  gating.elapsed_s = 3;
  EXPECT_EQ(live_line::text(gating), "gating to 45 C (now 52 C) | 0 samples kept | 3 s");
}

TEST(LiveLine, WritesNothingToAPipe) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  {
    live_line line(false, fds[1]);
    EXPECT_FALSE(line.enabled());
    line.update(burst_status(10));
  }
  EXPECT_EQ(drain(fds[0]), "");
  close(fds[0]);
  close(fds[1]);
}

TEST(LiveLine, OnATerminalDrawsInPlaceAfterAFewSecondsAndClears) {
  int master = -1;
  int slave = -1;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  {
    live_line quiet(true, slave);
    EXPECT_FALSE(quiet.enabled());
    quiet.update(burst_status(10));
  }
  EXPECT_EQ(drain(master), "");
  {
    live_line line(false, slave);
    EXPECT_TRUE(line.enabled());
    line.update(burst_status(1));  // a short run gets no line
    EXPECT_EQ(drain(master), "");
    line.update(burst_status(10));
    EXPECT_EQ(drain(master), "\rB burst 3 | 1234 samples kept | CI now ±0.42% | 10 s\x1b[K");
    line.clear();
    EXPECT_EQ(drain(master), "\r\x1b[K");
    line.clear();  // once off, nothing more
    EXPECT_EQ(drain(master), "");
    line.update(burst_status(11));
  }
  // Destroyed while shown: taken off.
  EXPECT_EQ(drain(master), "\rB burst 3 | 1234 samples kept | CI now ±0.42% | 11 s\x1b[K\r\x1b[K");
  close(slave);
  close(master);
}

}  // namespace
}  // namespace coolbench::cli
