// coolbench release-check: the user's scenario as one command. A context does a tiny Add and is
// held, then handed back by a release; NVML is watched until the GPU is idle. Then the same with
// a child process that exits instead of releasing, the anchor a release is measured against.
// The idle rules and the watch are cli/release_check_idle.hpp, the child cli/child_process.hpp,
// the records and what is printed report/release_check_report.hpp.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli/child_process.hpp"
#include "cli/command.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help.hpp"
#include "cli/interrupt.hpp"
#include "cli/release_check_idle.hpp"
#include "coolbench/core/clock.hpp"
#include "coolbench/core/error.hpp"
#include "coolbench/device.hpp"
#include "coolbench/device/probe.hpp"
#include "report/format.hpp"
#include "report/release_check_report.hpp"

namespace coolbench::cli {
namespace {

using namespace std::chrono_literals;
using report::mode_record;

constexpr auto sample_period = 50ms;
constexpr auto baseline_window = 500ms;
constexpr double trace_step_s = 0.25;
constexpr double trace_until_s = 4.0;
constexpr double probe_tolerance = 1e-6;
// How long the child may take to create its context and run the probe, or to exit after its
// hold, before the check gives up on it.
constexpr auto child_grace = 60s;

struct release_check_options {
  int device = 0;
  double hold_s = 5;
  double timeout_s = 30;
  std::string json_path;
  bool child = false;  // hidden: the process-exit mode's child
  int child_fd = -1;   // hidden: the child's end of the socket to the parent
};

double seconds(std::int64_t from_ns, std::int64_t to_ns) {
  return static_cast<double>(to_ns - from_ns) / 1e9;
}

std::chrono::steady_clock::duration to_duration(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

void check_probe(double max_error, std::string_view mode) {
  if (!(max_error < probe_tolerance)) {
    throw error(
        fmt::format("the probe Add of the {} mode computed a wrong sum (max abs error {}): "
                    "the GPU or its driver is not working",
                    mode, max_error));
  }
}

double run_probe(device::lease& l) {
#if defined(COOLBENCH_HAVE_CUDA)
  return device::run_probe_add(l);
#else
  (void)l;
  throw not_available("this coolbench was built without the CUDA toolkit: release-check needs it");
#endif
}

// ---- The child of the process-exit mode ------------------------------------------------------

int run_child(const release_check_options& options) {
  if (options.child_fd < 0) throw invalid_argument("--child needs --child-fd");
  auto& gpu = device::device::get(options.device);
  double max_error = 0;
  {
    auto l = gpu.acquire();
    max_error = run_probe(l);
  }
  send_line(options.child_fd, fmt::format("ready {} {:.17g}\n", getpid(), max_error));
  std::this_thread::sleep_for(to_duration(options.hold_s));
  send_line(options.child_fd, "held\n");
  // The parent reads NVML while this process still holds its context, then says "exit" (or
  // closes the socket, if it died).
  (void)receive_line(options.child_fd, child_grace, false);
  // No release: the context goes with the process, which is the point of this mode.
  return exit_ok;
}

// ---- The parent --------------------------------------------------------------------------------

class release_check {
 public:
  explicit release_check(const release_check_options& options)
      : m_options(options),
        m_watch(options.device, sample_period),
        // Checked before any sampling: without CUDA the check fails at once, in one line.
        m_device(device::device::get(options.device)) {}

  int run();

 private:
  void take_baseline();
  void finish_watch(mode_record& mode, watch_result&& result);
  bool run_release_mode();
  bool wait_idle_again();
  bool run_exit_mode();
  [[nodiscard]] std::vector<idle_watch::poll> polls_at_hold_end(const mode_record& mode) const;
  void write_json() const;

  release_check_options m_options;
  idle_watch m_watch;
  device::device& m_device;
  report::release_check_record m_record;
};

void release_check::take_baseline() {
  m_watch.take_baseline(baseline_window);
  m_record.gpu = m_watch.identity();
  m_record.hold_s = m_options.hold_s;
  m_record.timeout_s = m_options.timeout_s;
  m_record.period = sample_period;
  m_record.baseline_samples = m_watch.baseline_samples();
  m_record.baseline_processes = m_watch.baseline_processes();
  m_record.baseline_idle = m_watch.baseline_idle();
  fmt::print("{}", report::format_baseline(m_record.gpu, m_record.baseline_samples.back(),
                                           m_record.baseline_processes, m_record.baseline_idle,
                                           m_watch.current_criteria(), sample_period));
  std::fflush(stdout);
}

// Listed at the end of the hold as the hold's view says.
std::vector<idle_watch::poll> release_check::polls_at_hold_end(const mode_record& mode) const {
  return {{mode.hold_end_ns, m_watch.listed(mode.view.processes, mode.view.rule, mode.pid)}};
}

void release_check::finish_watch(mode_record& mode, watch_result&& result) {
  mode.summary.trace = std::move(result.trace);
  mode.summary.times = result.times;
  mode.summary.hold_end_to_event_s = seconds(mode.hold_end_ns, mode.event_ns);
  mode.summary.timeout_s = m_options.timeout_s;
  mode.criteria = result.criteria;
  mode.ran = true;
  m_record.interrupted = m_record.interrupted || result.interrupted;
}

bool release_check::run_release_mode() {
  auto& mode = m_record.release;
  mode.summary.name = "release";
  mode.pid = static_cast<std::uint32_t>(getpid());
  fmt::print("\nRelease (this process, pid {})\n", mode.pid);
  {
    auto l = m_device.acquire();
    mode.probe_error = run_probe(l);
  }
  fmt::print("  probe: c = a + b on two 1x2x3x3 float tensors, max abs error {}\n",
             mode.probe_error);
  std::fflush(stdout);
  check_probe(mode.probe_error, "release");
  if (!sleep_unless_interrupted(to_duration(m_options.hold_s))) return false;
  mode.view = m_watch.take_view(mode.pid);
  fmt::print("{}", report::format_hold_view(mode, m_options.hold_s));
  mode.hold_end_ns = steady_now_ns();
  try {
    mode.report = m_device.release();
  } catch (const device::release_refused& e) {
    // Nothing else in this process uses the GPU, so forcing frees nothing that is in use.
    mode.release_forced_because = e.what();
    fmt::print("  release refused ({}); forcing it: nothing else in this process uses the GPU\n",
               e.what());
    mode.report = m_device.release({.force = true});
  }
  mode.event_ns = steady_now_ns();
  const auto& r = *mode.report;
  fmt::print("{}", report::format_release(r));
  std::fflush(stdout);
  std::vector<idle_watch::poll> polls = polls_at_hold_end(mode);
  if (mode.view.rule == listing_rule::by_pid) {
    polls.emplace_back(mode.event_ns, r.process_listed_after);
  }
  finish_watch(mode, m_watch.watch(mode.hold_end_ns, mode.event_ns, mode.view.rule, mode.pid,
                                   std::move(polls), trace_until_s, m_options.timeout_s));
  fmt::print("{}", report::format_mode_result(mode, "the release returned", m_options.timeout_s));
  std::fflush(stdout);
  return !m_record.interrupted;
}

bool release_check::wait_idle_again() {
  const std::int64_t now = steady_now_ns();
  const auto result = m_watch.watch(now, now, m_record.release.view.rule, m_record.release.pid, {},
                                    0, m_options.timeout_s);
  m_record.interrupted = m_record.interrupted || result.interrupted;
  m_record.idle_again_reached = result.times.at(milestone::idle).has_value();
  m_record.idle_again_s = seconds(now, steady_now_ns());
  if (!m_record.idle_again_reached && !m_record.interrupted) {
    fmt::print(
        "warning: the GPU is not idle {:.0f} s after the release mode; the process-exit "
        "mode starts from a different state\n",
        m_options.timeout_s);
  }
  return !m_record.interrupted;
}

bool release_check::run_exit_mode() {
  auto& mode = m_record.exit;
  mode.summary.name = "process exit";
  // The child is this binary again, in its hidden --child mode.
  child_process child({"coolbench", "release-check", "--child", "--child-fd",
                       std::to_string(child_socket_fd), "--device",
                       std::to_string(m_options.device), "--hold",
                       fmt::format("{}", m_options.hold_s)});
  mode.pid = static_cast<std::uint32_t>(child.pid());
  fmt::print("\nProcess exit (child pid {})\n", mode.pid);
  std::fflush(stdout);
  const auto child_failed = [&](std::string_view when) {
    if (interrupted()) return error("interrupted");
    const int status = child.wait();
    return error(
        fmt::format("the child process (pid {}) {} (exit status {}); its message, if "
                    "any, is above",
                    mode.pid, when, status));
  };
  const auto ready = receive_line(child.fd(), child_grace, true);
  if (!ready || !ready->starts_with("ready ")) {
    if (interrupted()) return false;
    throw child_failed("ended before its probe ran");
  }
  {
    unsigned pid = 0;
    if (std::sscanf(ready->c_str(), "ready %u %lf", &pid, &mode.probe_error) != 2) {
      throw error("the child process said '" + *ready + "', not 'ready <pid> <error>'");
    }
  }
  fmt::print("  probe: max abs error {}\n", mode.probe_error);
  std::fflush(stdout);
  check_probe(mode.probe_error, "process exit");
  const auto held = receive_line(child.fd(), to_duration(m_options.hold_s) + child_grace, true);
  if (!held || *held != "held") {
    if (interrupted()) return false;
    throw child_failed("ended during its hold");
  }
  mode.view = m_watch.take_view(mode.pid);
  fmt::print("{}", report::format_hold_view(mode, m_options.hold_s));
  mode.hold_end_ns = steady_now_ns();
  send_line(child.fd(), "exit\n");
  mode.child_exit_status = child.wait();
  mode.event_ns = steady_now_ns();
  fmt::print("  exit: the child exited with status {} without releasing\n",
             *mode.child_exit_status);
  std::fflush(stdout);
  if (*mode.child_exit_status != 0) {
    throw error(
        fmt::format("the child process (pid {}) exited with status {}; its message, if "
                    "any, is above",
                    mode.pid, *mode.child_exit_status));
  }
  // Listed until the first poll after the exit says otherwise.
  std::vector<idle_watch::poll> polls = polls_at_hold_end(mode);
  finish_watch(mode, m_watch.watch(mode.hold_end_ns, mode.event_ns, mode.view.rule, mode.pid,
                                   std::move(polls), trace_until_s, m_options.timeout_s));
  fmt::print("{}", report::format_mode_result(mode, "the child exited", m_options.timeout_s));
  std::fflush(stdout);
  return !m_record.interrupted;
}

void release_check::write_json() const {
  if (m_options.json_path.empty()) return;
  report::write_text_atomically(m_options.json_path, report::to_json(m_record).dump(2) + "\n");
}

int release_check::run() {
  take_baseline();
  const bool finished =
      !m_record.interrupted && run_release_mode() && wait_idle_again() && run_exit_mode();
  m_watch.stop();
  if (!finished || m_record.interrupted) {
    write_json();
    fmt::print(stderr, "coolbench release-check: interrupted\n");
    return exit_interrupted;
  }
  fmt::print("{}", report::format_release_check_summary(m_record, trace_step_s, trace_until_s));
  std::fflush(stdout);
  write_json();
  if (!m_record.release.reached_idle() || !m_record.exit.reached_idle()) {
    std::string which = !m_record.release.reached_idle() ? "the release" : "";
    if (!m_record.exit.reached_idle())
      which += which.empty() ? "the process exit" : " and the process exit";
    fmt::print(stderr,
               "coolbench release-check: the GPU did not reach idle within {:.0f} s after {} "
               "(raise --timeout, or see `coolbench who`)\n",
               m_options.timeout_s, which);
    return exit_timeout;
  }
  return exit_ok;
}

// Fails before the long run when the JSON file cannot be written.
void check_writable(const std::string& path) {
  if (path.empty()) return;
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) {
    throw invalid_argument("cannot write --json " + path + ": " + std::strerror(errno));
  }
  std::fclose(f);
  std::remove(tmp.c_str());
}

int run_release_check(const release_check_options& options) {
  if (options.child) return run_child(options);
  check_writable(options.json_path);
  catch_interrupts();
  release_check check(options);
  return check.run();
}

// CLI::Range on doubles prints its bounds with six decimals; this says it plainly.
CLI::Validator seconds_in(double low, double high) {
  return {[low, high](const std::string& text) {
            double value = 0;
            if (!CLI::detail::lexical_cast(text, value) || !(value >= low && value <= high)) {
              return fmt::format("{} is not a number of seconds from {} to {}", text, low, high);
            }
            return std::string();
          },
          fmt::format("SECONDS in [{}, {}]", low, high)};
}

}  // namespace

command add_release_check_command(CLI::App& parent) {
  auto options = std::make_shared<release_check_options>();
  auto* app = parent.add_subcommand(
      "release-check", "Compare handing the GPU back by a release with a process exit");
  add_device_option(*app, options->device);
  app->add_option("--hold", options->hold_s,
                  "Seconds to hold the idle context before handing it back")
      ->check(seconds_in(0, 3600));
  app->add_option("--timeout", options->timeout_s,
                  "Seconds to wait for idle after each release or exit")
      ->check(seconds_in(0.1, 3600));
  app->add_option("--json", options->json_path, "Also write everything, raw samples too, to FILE");
  // The process-exit mode runs this binary again as its child.
  app->add_flag("--child", options->child)->group("");
  app->add_option("--child-fd", options->child_fd)->group("");
  return {app, [options] { return run_release_check(*options); }, help::release_check()};
}

}  // namespace coolbench::cli
