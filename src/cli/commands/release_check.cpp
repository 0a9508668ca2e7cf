// coolbench release-check: the user's scenario as one command. A context does a tiny Add and is
// held, then handed back by a release; NVML is watched until the GPU is idle. Then the same with
// a child process that exits instead of releasing, the anchor a release is measured against.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli/command.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help.hpp"
#include "cli/interrupt.hpp"
#include "cli/release_check_idle.hpp"
#include "coolbench/core/clock.hpp"
#include "coolbench/core/error.hpp"
#include "coolbench/device.hpp"
#include "coolbench/device/json.hpp"
#include "coolbench/device/probe.hpp"
#include "coolbench/report.hpp"
#include "coolbench/telemetry.hpp"

namespace coolbench::cli {
using namespace coolbench::report;  // the renderings the commands print and write
namespace {

using namespace std::chrono_literals;

constexpr auto sample_period = 50ms;
constexpr auto baseline_window = 500ms;
constexpr double trace_step_s = 0.25;
constexpr double trace_until_s = 4.0;
constexpr double probe_tolerance = 1e-6;
// How long the child may take to create its context and run the probe, or to exit after its
// hold, before the check gives up on it.
constexpr auto child_grace = 60s;
constexpr double mib = 1024.0 * 1024.0;

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

std::string show_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < 1024 * 1024) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024.0);
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / mib);
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

// One line to the other end of the socket; MSG_NOSIGNAL so that a peer that died is an error
// here, not a SIGPIPE.
void send_line(int fd, const std::string& line) {
  std::size_t sent = 0;
  while (sent < line.size()) {
    const ssize_t n = send(fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw error(std::string("release-check: cannot talk to the other process: ") +
                  std::strerror(errno));
    sent += static_cast<std::size_t>(n);
  }
}

/// Reads one line, waiting at most `limit`; empty when the peer closed or time ran out.
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

/// How the check tells whether NVML still lists the process that held the context.
enum class listing_rule {
  by_pid,      ///< NVML lists its pid
  by_new_pid,  ///< NVML lists another PID namespace's pids: a pid not listed before the run
  unknown,     ///< NVML did not list it while it held a context: not judged
};

std::string_view to_string(listing_rule rule) {
  switch (rule) {
    case listing_rule::by_pid: return "by_pid";
    case listing_rule::by_new_pid: return "by_new_pid";
    case listing_rule::unknown: return "unknown";
  }
  return "unknown";
}

/// What NVML showed at the end of a hold.
struct hold_view {
  std::vector<telemetry::gpu_process> processes;
  std::optional<telemetry::gpu_sample> sample;
  listing_rule rule = listing_rule::unknown;
  std::optional<std::uint64_t> holder_memory_bytes;
};

/// One mode: release, or process exit.
struct mode_record {
  mode_summary summary;
  std::uint32_t pid = 0;  // the process that held the context
  double probe_error = 0;
  hold_view view;
  idle_criteria criteria;
  std::optional<device::release_report> report;
  std::optional<std::string> release_forced_because;
  std::optional<int> child_exit_status;
  std::int64_t hold_end_ns = 0;
  std::int64_t event_ns = 0;
  bool ran = false;

  [[nodiscard]] bool reached_idle() const { return summary.times.at(milestone::idle).has_value(); }
};

struct watch_result {
  std::vector<trace_point> trace;
  milestone_times times;
  idle_criteria criteria;
  bool interrupted = false;
};

class release_check {
 public:
  explicit release_check(const release_check_options& options)
      : m_options(options),
        m_gpu(options.device),
        // Checked before any sampling: without CUDA the check fails at once, in one line.
        m_device(device::device::get(options.device)),
        m_sampler(telemetry::make_gpu_source(options.device), {.period = sample_period}) {}

  int run();

 private:
  void take_baseline();
  void print_baseline() const;
  [[nodiscard]] idle_criteria current_criteria() const;
  [[nodiscard]] std::optional<bool> listed(const std::vector<telemetry::gpu_process>& processes,
                                           listing_rule rule, std::uint32_t pid) const;
  [[nodiscard]] hold_view take_view(std::uint32_t pid) const;
  void print_view(const mode_record& mode) const;
  using poll = std::pair<std::int64_t, std::optional<bool>>;  // time, process listed
  watch_result watch(std::int64_t from_ns, std::int64_t event_ns, listing_rule rule,
                     std::uint32_t pid, std::vector<poll> polls, double min_s);
  void finish_watch(mode_record& mode, watch_result&& result);
  bool run_release_mode();
  bool wait_idle_again();
  bool run_exit_mode();
  void print_mode_result(const mode_record& mode, std::string_view event) const;
  [[nodiscard]] nlohmann::json to_json() const;
  void write_json() const;

  release_check_options m_options;
  telemetry::gpu_telemetry m_gpu;
  device::device& m_device;
  telemetry::sampler m_sampler;
  std::int64_t m_start_ns = 0;
  std::vector<telemetry::gpu_sample> m_pre_run;
  std::vector<telemetry::gpu_process> m_pre_processes;
  std::set<std::uint32_t> m_pre_pids;
  bool m_pre_idle = false;
  std::optional<unsigned> m_lowest_sm_clock;
  mode_record m_release;
  mode_record m_exit;
  std::optional<double> m_idle_again_s;
  bool m_idle_again_reached = false;
  bool m_interrupted = false;
};

void release_check::take_baseline() {
  m_start_ns = steady_now_ns();
  m_pre_processes = m_gpu.processes();
  for (const auto& p : m_pre_processes) m_pre_pids.insert(p.pid);
  m_sampler.start();
  sleep_unless_interrupted(baseline_window);
  m_pre_run = m_sampler.since(m_start_ns - 1);
  if (m_pre_run.empty()) m_pre_run.push_back(m_gpu.read(telemetry::read_scope::fast));
  m_pre_idle = pre_run_idle(m_pre_run);
  for (const auto& s : m_pre_run) {
    if (s.clock_sm_mhz.ok()) {
      m_lowest_sm_clock =
          std::min(m_lowest_sm_clock.value_or(s.clock_sm_mhz.value), s.clock_sm_mhz.value);
    }
  }
}

idle_criteria release_check::current_criteria() const {
  const auto& supported = m_gpu.identity().supported_clock_reasons;
  const bool offers_idle_bit =
      !supported.ok() ||
      (supported.value & static_cast<std::uint64_t>(telemetry::clock_reason::gpu_idle)) != 0;
  return make_idle_criteria(m_pre_run, m_lowest_sm_clock, offers_idle_bit);
}

void release_check::print_baseline() const {
  const auto& id = m_gpu.identity();
  const auto& s = m_pre_run.back();
  fmt::print("coolbench release-check: GPU {}, {} ({})\n", id.cuda_ordinal, id.name, id.pci_bus_id);
  fmt::print("Before the run: SM {} MHz, {} W, {} C, memory used {} MiB, reasons {}\n",
             show(s.clock_sm_mhz), show(s.power_w, 1), show(s.temp_gpu_c),
             show(telemetry::reading<double>{static_cast<double>(s.memory_used_bytes.value) / mib,
                                             s.memory_used_bytes.status},
                  0),
             s.clock_reasons.ok() ? telemetry::clock_reasons_short(s.clock_reasons.value) : "n/a");
  if (!m_pre_processes.empty()) {
    fmt::print("warning: the baseline is not idle: other processes hold a context already\n{}",
               format_gpu_processes(id, m_pre_processes));
  }
  if (!m_pre_idle) {
    fmt::print(
        "warning: the GPU was not idle before the run (gpu_idle bit not set in every sample): "
        "power is not judged, and the SM clock floor is the lowest clock seen + 10%\n");
  }
  const auto c = current_criteria();
  std::vector<std::string> parts;
  parts.emplace_back("the process not listed");
  if (c.memory_baseline_bytes) {
    parts.push_back(
        fmt::format("memory used <= {:.0f} MiB (baseline + {:.0f} MiB)",
                    static_cast<double>(*c.memory_baseline_bytes + c.memory_tolerance_bytes) / mib,
                    static_cast<double>(c.memory_tolerance_bytes) / mib));
  }
  if (c.sm_clock_floor_mhz) {
    parts.push_back(fmt::format("SM clock <= {} MHz{}", *c.sm_clock_floor_mhz,
                                c.sm_floor_from_baseline ? "" : " (so far)"));
  }
  if (c.power_floor_w) parts.push_back(fmt::format("power <= {:.1f} W", *c.power_floor_w));
  if (c.judge_idle_bit) parts.emplace_back("gpu_idle bit set");
  fmt::print("Idle means: {}; {} samples in a row, {} ms apart\n", fmt::join(parts, ", "),
             c.consecutive, sample_period.count());
  std::fflush(stdout);
}

std::optional<bool> release_check::listed(const std::vector<telemetry::gpu_process>& processes,
                                          listing_rule rule, std::uint32_t pid) const {
  switch (rule) {
    case listing_rule::by_pid:
      return std::any_of(processes.begin(), processes.end(),
                         [pid](const auto& p) { return p.pid == pid; });
    case listing_rule::by_new_pid:
      return std::any_of(processes.begin(), processes.end(),
                         [this](const auto& p) { return !m_pre_pids.contains(p.pid); });
    case listing_rule::unknown: return std::nullopt;
  }
  return std::nullopt;
}

hold_view release_check::take_view(std::uint32_t pid) const {
  hold_view view;
  view.processes = m_gpu.processes();
  if (auto latest = m_sampler.latest()) view.sample = *latest;
  std::vector<const telemetry::gpu_process*> new_ones;
  for (const auto& p : view.processes) {
    if (p.pid == pid) {
      view.rule = listing_rule::by_pid;
      if (p.used_memory_bytes.ok()) view.holder_memory_bytes = p.used_memory_bytes.value;
    }
    if (!m_pre_pids.contains(p.pid)) new_ones.push_back(&p);
  }
  if (view.rule != listing_rule::by_pid && !new_ones.empty()) {
    view.rule = listing_rule::by_new_pid;
    if (new_ones.size() == 1 && new_ones.front()->used_memory_bytes.ok()) {
      view.holder_memory_bytes = new_ones.front()->used_memory_bytes.value;
    }
  }
  return view;
}

void release_check::print_view(const mode_record& mode) const {
  const auto& v = mode.view;
  std::string who;
  switch (v.rule) {
    case listing_rule::by_pid: who = fmt::format("NVML lists pid {}", mode.pid); break;
    case listing_rule::by_new_pid:
      who = fmt::format("NVML lists a new process (not pid {}: another PID namespace)", mode.pid);
      break;
    case listing_rule::unknown:
      who = fmt::format(
          "NVML does not list pid {} (another PID namespace?): 'process gone' is "
          "not judged",
          mode.pid);
      break;
  }
  if (v.holder_memory_bytes) who += " with " + show_bytes(*v.holder_memory_bytes);
  std::string state = "no sample";
  if (v.sample) {
    const auto& s = *v.sample;
    state = fmt::format(
        "SM {} MHz, {} W, {} C, reasons {}", show(s.clock_sm_mhz), show(s.power_w, 1),
        show(s.temp_gpu_c),
        s.clock_reasons.ok() ? telemetry::clock_reasons_short(s.clock_reasons.value) : "n/a");
  }
  fmt::print("  end of the {:.1f} s hold: {}; {}\n", m_options.hold_s, who, state);
}

watch_result release_check::watch(std::int64_t from_ns, std::int64_t event_ns, listing_rule rule,
                                  std::uint32_t pid, std::vector<poll> polls, double min_s) {
  watch_result result;
  // Each sample takes the process listing of the last poll at or before it; `polls` holds what
  // is known from before the watch (the hold's view, the release report).
  std::int64_t last_ns = from_ns - 1;
  while (true) {
    const std::int64_t poll_ns = steady_now_ns();
    polls.emplace_back(poll_ns, listed(m_gpu.processes(), rule, pid));
    for (const auto& s : m_sampler.since(last_ns)) {
      last_ns = s.time_ns;
      if (s.clock_sm_mhz.ok()) {
        m_lowest_sm_clock =
            std::min(m_lowest_sm_clock.value_or(s.clock_sm_mhz.value), s.clock_sm_mhz.value);
      }
      std::optional<bool> at;
      for (auto it = polls.rbegin(); it != polls.rend(); ++it) {
        if (it->first <= s.time_ns) {
          at = it->second;
          break;
        }
      }
      result.trace.push_back({seconds(event_ns, s.time_ns), s, at});
    }
    result.criteria = current_criteria();
    result.criteria.judge_process = rule != listing_rule::unknown;
    result.times = find_milestones(result.criteria, result.trace);
    const double elapsed_s = seconds(event_ns, steady_now_ns());
    if (result.times.at(milestone::idle) && elapsed_s >= min_s) break;
    if (elapsed_s >= m_options.timeout_s) break;
    if (!sleep_unless_interrupted(sample_period)) {
      result.interrupted = true;
      break;
    }
  }
  return result;
}

void release_check::finish_watch(mode_record& mode, watch_result&& result) {
  mode.summary.trace = std::move(result.trace);
  mode.summary.times = result.times;
  mode.summary.hold_end_to_event_s = seconds(mode.hold_end_ns, mode.event_ns);
  mode.summary.timeout_s = m_options.timeout_s;
  mode.criteria = result.criteria;
  mode.ran = true;
  m_interrupted = m_interrupted || result.interrupted;
}

void release_check::print_mode_result(const mode_record& mode, std::string_view event) const {
  const auto& idle = mode.summary.times.at(milestone::idle);
  if (idle) {
    fmt::print("  idle {:.2f} s after {} ({:.2f} s after the end of the hold)\n", *idle, event,
               *idle + mode.summary.hold_end_to_event_s);
  } else {
    fmt::print("  not idle {:.0f} s after {}\n", m_options.timeout_s, event);
  }
  std::fflush(stdout);
}

bool release_check::run_release_mode() {
  auto& mode = m_release;
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
  mode.view = take_view(mode.pid);
  print_view(mode);
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
  std::vector<std::string> resources;
  for (std::size_t i = 0; i < device::resource_kind_count; ++i) {
    if (r.destroyed[i] == 0) continue;
    resources.push_back(fmt::format(
        "{} {}", device::to_string(static_cast<device::resource_kind>(i)), r.destroyed[i]));
  }
  fmt::print(
      "  release: {}, freed {} ({} live), destroyed {}, took {:.0f} ms; NVML lists this "
      "process afterwards: {}\n",
      r.note, show_bytes(r.bytes_freed), show_bytes(r.live_bytes_freed),
      resources.empty() ? std::string("no resources")
                        : fmt::format("{}", fmt::join(resources, ", ")),
      r.seconds * 1e3, r.process_listed_after ? (*r.process_listed_after ? "yes" : "no") : "n/a");
  std::fflush(stdout);
  std::vector<poll> polls = {
      {mode.hold_end_ns, listed(mode.view.processes, mode.view.rule, mode.pid)}};
  if (mode.view.rule == listing_rule::by_pid) {
    polls.emplace_back(mode.event_ns, r.process_listed_after);
  }
  finish_watch(mode, watch(mode.hold_end_ns, mode.event_ns, mode.view.rule, mode.pid,
                           std::move(polls), trace_until_s));
  print_mode_result(mode, "the release returned");
  return !m_interrupted;
}

bool release_check::wait_idle_again() {
  const std::int64_t now = steady_now_ns();
  const auto result = watch(now, now, m_release.view.rule, m_release.pid, {}, 0);
  m_interrupted = m_interrupted || result.interrupted;
  m_idle_again_reached = result.times.at(milestone::idle).has_value();
  m_idle_again_s = seconds(now, steady_now_ns());
  if (!m_idle_again_reached && !m_interrupted) {
    fmt::print(
        "warning: the GPU is not idle {:.0f} s after the release mode; the process-exit "
        "mode starts from a different state\n",
        m_options.timeout_s);
  }
  return !m_interrupted;
}

/// The child of the process-exit mode, started by fork and exec of this binary.
class child_process {
 public:
  child_process(const release_check_options& options) {
    int fds[2] = {-1, -1};
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
      throw error(std::string("cannot create a socket pair for the child: ") +
                  std::strerror(errno));
    }
    m_fd = fds[0];
    constexpr int child_fd = 3;
    // Everything the child needs is built before fork: between fork and exec it only calls
    // async-signal-safe functions (this process has threads).
    std::vector<std::string> args = {"coolbench",
                                     "release-check",
                                     "--child",
                                     "--child-fd",
                                     std::to_string(child_fd),
                                     "--device",
                                     std::to_string(options.device),
                                     "--hold",
                                     fmt::format("{}", options.hold_s)};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fflush(stdout);
    std::fflush(stderr);
    m_pid = fork();
    if (m_pid == 0) {
      if (fds[1] == child_fd) {
        if (fcntl(child_fd, F_SETFD, 0) != 0) _exit(126);
      } else if (dup2(fds[1], child_fd) < 0) {
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
  ~child_process() {
    if (m_pid > 0) {
      kill(m_pid, SIGKILL);
      waitpid(m_pid, nullptr, 0);
    }
    if (m_fd >= 0) close(m_fd);
  }
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;
  child_process(child_process&&) = delete;
  child_process& operator=(child_process&&) = delete;

  [[nodiscard]] pid_t pid() const noexcept { return m_pid; }
  [[nodiscard]] int fd() const noexcept { return m_fd; }

  /// Waits for the child's exit; its exit status, or 128 + signal.
  int wait() {
    int status = 0;
    while (waitpid(m_pid, &status, 0) < 0) {
      if (errno != EINTR) throw error(std::string("waitpid failed: ") + std::strerror(errno));
    }
    m_pid = -1;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  }

 private:
  pid_t m_pid = -1;
  int m_fd = -1;
};

bool release_check::run_exit_mode() {
  auto& mode = m_exit;
  mode.summary.name = "process exit";
  child_process child(m_options);
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
  mode.view = take_view(mode.pid);
  print_view(mode);
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
  std::vector<poll> polls = {
      {mode.hold_end_ns, listed(mode.view.processes, mode.view.rule, mode.pid)}};
  finish_watch(mode, watch(mode.hold_end_ns, mode.event_ns, mode.view.rule, mode.pid,
                           std::move(polls), trace_until_s));
  print_mode_result(mode, "the child exited");
  return !m_interrupted;
}

template <class T>
nlohmann::json reading_json(const telemetry::reading<T>& r) {
  return r.ok() ? nlohmann::json(r.value) : nlohmann::json(nullptr);
}

nlohmann::json criteria_json(const idle_criteria& c) {
  const auto opt = [](const auto& o) { return o ? nlohmann::json(*o) : nlohmann::json(nullptr); };
  return {{"judge_process", c.judge_process},
          {"judge_idle_bit", c.judge_idle_bit},
          {"memory_baseline_bytes", opt(c.memory_baseline_bytes)},
          {"memory_tolerance_bytes", c.memory_tolerance_bytes},
          {"sm_clock_floor_mhz", opt(c.sm_clock_floor_mhz)},
          {"sm_floor_from_baseline", c.sm_floor_from_baseline},
          {"power_floor_w", opt(c.power_floor_w)},
          {"consecutive", c.consecutive}};
}

nlohmann::json mode_json(const mode_record& m) {
  nlohmann::json j = {{"ran", m.ran},
                      {"pid", m.pid},
                      {"probe_error", m.probe_error},
                      {"hold_end_to_event_s", m.summary.hold_end_to_event_s},
                      {"reached_idle", m.reached_idle()},
                      {"criteria", criteria_json(m.criteria)}};
  nlohmann::json milestones = nlohmann::json::object();
  nlohmann::json judged = nlohmann::json::object();
  for (const milestone ms : all_milestones) {
    const auto& t = m.summary.times.at(ms);
    milestones[std::string(key_of(ms))] = t ? nlohmann::json(*t) : nullptr;
    judged[std::string(key_of(ms))] = m.summary.times.is_judged(ms);
  }
  j["milestones_s"] = milestones;
  j["judged"] = judged;
  const auto& idle = m.summary.times.at(milestone::idle);
  j["idle_from_hold_end_s"] =
      idle ? nlohmann::json(*idle + m.summary.hold_end_to_event_s) : nlohmann::json(nullptr);
  j["hold_view"] = {
      {"listing_rule", to_string(m.view.rule)},
      {"holder_memory_bytes",
       m.view.holder_memory_bytes ? nlohmann::json(*m.view.holder_memory_bytes) : nullptr},
      {"processes", report::to_json(m.view.processes)},
      {"sample", m.view.sample ? report::to_json(*m.view.sample) : nlohmann::json(nullptr)}};
  if (m.report) j["release_report"] = nlohmann::json::parse(device::to_json(*m.report));
  if (m.release_forced_because) j["release_forced_because"] = *m.release_forced_because;
  if (m.child_exit_status) j["child_exit_status"] = *m.child_exit_status;
  nlohmann::json samples = nlohmann::json::array();
  for (const auto& p : m.summary.trace) {
    const auto& s = p.sample;
    samples.push_back({{"t_s", p.time_s},
                       {"power_w", reading_json(s.power_w)},
                       {"clock_sm_mhz", reading_json(s.clock_sm_mhz)},
                       {"memory_used_bytes", reading_json(s.memory_used_bytes)},
                       {"clock_reasons", reading_json(s.clock_reasons)},
                       {"temp_gpu_c", reading_json(s.temp_gpu_c)},
                       {"process_listed", p.process_listed ? nlohmann::json(*p.process_listed)
                                                           : nlohmann::json(nullptr)}});
  }
  j["samples"] = std::move(samples);
  return j;
}

nlohmann::json release_check::to_json() const {
  nlohmann::json baseline_samples = nlohmann::json::array();
  for (const auto& s : m_pre_run) baseline_samples.push_back(report::to_json(s));
  return {{"command", "release-check"},
          {"version", 1},
          {"gpu", report::to_json(m_gpu.identity())},
          {"options",
           {{"hold_s", m_options.hold_s},
            {"timeout_s", m_options.timeout_s},
            {"period_ms", sample_period.count()}}},
          {"baseline",
           {{"idle", m_pre_idle},
            {"processes", report::to_json(m_pre_processes)},
            {"samples", baseline_samples}}},
          {"release", mode_json(m_release)},
          {"process_exit", mode_json(m_exit)},
          {"idle_again_before_process_exit",
           {{"reached", m_idle_again_reached},
            {"waited_s", m_idle_again_s ? nlohmann::json(*m_idle_again_s) : nullptr}}},
          {"interrupted", m_interrupted}};
}

void release_check::write_json() const {
  if (m_options.json_path.empty()) return;
  write_text_atomically(m_options.json_path, to_json().dump(2) + "\n");
}

int release_check::run() {
  take_baseline();
  print_baseline();
  const bool finished =
      !m_interrupted && run_release_mode() && wait_idle_again() && run_exit_mode();
  m_sampler.stop();
  if (!finished || m_interrupted) {
    write_json();
    fmt::print(stderr, "coolbench release-check: interrupted\n");
    return exit_interrupted;
  }
  fmt::print("\n{}\nPower [W] and SM clock [MHz] after the event\n{}\n{}",
             format_milestone_table(m_release.summary, m_exit.summary),
             format_power_traces(m_release.summary, m_exit.summary, trace_step_s, trace_until_s),
             format_verdict(m_release.summary, m_exit.summary));
  std::fflush(stdout);
  write_json();
  if (!m_release.reached_idle() || !m_exit.reached_idle()) {
    std::string which = !m_release.reached_idle() ? "the release" : "";
    if (!m_exit.reached_idle())
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
