// A command that prints its own latencies, as a workload (docs/cli/exec.md): the line format,
// a fresh process after each release, and the errors when the command ends, falls silent,
// prints a bad latency or cannot be started. The commands are sh one-liners.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "coolbench/core/error.hpp"
#include "coolbench/measure/workload.hpp"

namespace coolbench::measure {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<workload> shell(const std::string& script, int device = 0,
                                std::chrono::seconds timeout = 10s) {
  return make_command_workload({"sh", "-c", script}, device, timeout);
}

/// The message of the coolbench::error that `f` throws (fails the test when none is thrown).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return {};
}

TEST(CommandWorkload, ReadsTheLatencyLinesAndSkipsTheRest) {
  auto w = shell(
      "echo 'loading the model'; i=1; while :; do echo \"latency_ms 0.2$i\"; "
      "echo 'latency_msX 9'; printf 'latency_ms\\t  1.5e-1 \\n'; i=$((i+1)); done");
  EXPECT_EQ(w->device(), 0);
  EXPECT_NE(w->describe().find("sh -c"), std::string::npos) << w->describe();
  EXPECT_DOUBLE_EQ(w->run().latency_ms, 0.21);
  EXPECT_DOUBLE_EQ(w->run().latency_ms, 0.15);
  const timing t = w->run();
  EXPECT_DOUBLE_EQ(t.latency_ms, 0.22);
  EXPECT_EQ(t.end_ns - t.start_ns, 220'000);
  w->release();
}

TEST(CommandWorkload, EachPrepareAfterAReleaseIsAFreshProcess) {
  // The latency is the shell's process id: a new process gives a new one.
  auto w = shell("while :; do echo \"latency_ms $$\"; done");
  const double first = w->run().latency_ms;
  EXPECT_EQ(w->run().latency_ms, first);
  w->release();
  w->prepare();
  EXPECT_NE(w->run().latency_ms, first);
}

TEST(CommandWorkload, TheCommandFindsItsDeviceInTheEnvironment) {
  auto w = shell("while :; do echo \"latency_ms $((COOLBENCH_DEVICE + 1))\"; done", 3);
  EXPECT_DOUBLE_EQ(w->run().latency_ms, 4.0);
  EXPECT_EQ(w->device(), 3);
}

TEST(CommandWorkload, ACommandThatEndsIsAnErrorThatSaysToLoop) {
  auto w = shell("echo 'latency_ms 1'; echo 'latency_ms 2'; exit 3");
  EXPECT_DOUBLE_EQ(w->run().latency_ms, 1.0);
  EXPECT_DOUBLE_EQ(w->run().latency_ms, 2.0);
  const std::string why = error_of([&] { (void)w->run(); });
  EXPECT_NE(why.find("exit status 3"), std::string::npos) << why;
  EXPECT_NE(why.find("after 2 latencies"), std::string::npos) << why;
  EXPECT_NE(why.find("loop forever"), std::string::npos) << why;
}

TEST(CommandWorkload, ABadLatencyIsAnInvalidArgument) {
  for (const std::string value : {"abc", "-1", "0", "1.5ms", "nan"}) {
    SCOPED_TRACE(value);
    auto w = shell("while :; do echo 'latency_ms " + value + "'; done");
    EXPECT_THROW((void)w->run(), invalid_argument);
  }
}

TEST(CommandWorkload, ASilentCommandTimesOut) {
  auto w = shell("sleep 30", 0, 1s);
  const auto started = std::chrono::steady_clock::now();
  const std::string why = error_of([&] { (void)w->run(); });
  EXPECT_NE(why.find("no line for 1 s"), std::string::npos) << why;
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);  // the sleep was ended, not awaited
}

TEST(CommandWorkload, ACommandThatCannotStartSaysSo) {
  auto w = make_command_workload({"/nonexistent/coolbench-test-command"}, 0, 10s);
  const std::string why = error_of([&] { (void)w->run(); });
  EXPECT_NE(why.find("exit status 127"), std::string::npos) << why;
}

TEST(CommandWorkload, NoCommandIsAnInvalidArgument) {
  EXPECT_THROW((void)make_command_workload({}, 0), invalid_argument);
  EXPECT_THROW((void)make_command_workload({""}, 0), invalid_argument);
}

}  // namespace
}  // namespace coolbench::measure
