// What `coolbench release-check` prints and writes, pinned on a hand-built check: the baseline
// block, the hold views (the three listing rules), the release line, the mode results, the
// closing block and the JSON file. The text is the command's interface (docs/cli/release-check.md
// shows it); a change here must be one the docs and the users can follow.
#include "report/release_check_report.hpp"

#include "report/format.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace coolbench::report {
namespace {

using namespace std::chrono_literals;
using telemetry::gpu_process;
using telemetry::gpu_sample;
using telemetry::reading;
using telemetry::reading_status;

constexpr std::uint64_t mib = std::uint64_t{1} << 20U;
constexpr std::uint64_t idle_bit = 0x1;

gpu_sample sample(std::int64_t time_ns, unsigned clock_mhz, double power_w,
                  std::uint64_t memory_bytes, std::uint64_t reasons) {
  gpu_sample s;
  s.time_ns = time_ns;
  s.clock_sm_mhz = reading<unsigned>::of(clock_mhz);
  s.power_w = reading<double>::of(power_w);
  s.memory_used_bytes = reading<std::uint64_t>::of(memory_bytes);
  s.clock_reasons = reading<std::uint64_t>::of(reasons);
  s.temp_gpu_c = reading<int>::of(31);
  return s;
}

telemetry::gpu_identity h200() {
  telemetry::gpu_identity id;
  id.cuda_ordinal = 0;
  id.name = "NVIDIA H200";
  id.uuid = "GPU-00000000-1111-2222-3333-444444444444";
  id.pci_bus_id = "00000000:00:06.0";
  id.driver_version = "580.159.04";
  id.supported_clock_reasons = reading<std::uint64_t>::of(0x1ff);
  return id;
}

idle_criteria criteria() {
  idle_criteria c;
  c.memory_baseline_bytes = 0;
  c.memory_tolerance_bytes = 4 * mib;
  c.sm_clock_floor_mhz = 380;
  c.power_floor_w = 96.0;
  return c;
}

mode_summary summary(std::string name, std::optional<double> idle_s, double hold_to_event_s) {
  mode_summary s;
  s.name = std::move(name);
  s.timeout_s = 30;
  s.hold_end_to_event_s = hold_to_event_s;
  s.times.judged.fill(true);
  s.times.judged[static_cast<std::size_t>(milestone::power_floor)] = false;
  if (idle_s) {
    s.times.time_s[static_cast<std::size_t>(milestone::process_gone)] = 0.0;
    s.times.time_s[static_cast<std::size_t>(milestone::memory_back)] = 0.05;
    s.times.time_s[static_cast<std::size_t>(milestone::sm_clock_floor)] = *idle_s - 0.1;
    s.times.time_s[static_cast<std::size_t>(milestone::idle_bit)] = *idle_s;
    s.times.time_s[static_cast<std::size_t>(milestone::idle)] = *idle_s;
  }
  // Every 0.25 s from the event: busy, then idle from 0.5 s.
  for (int i = 0; i < 4; ++i) {
    const double t = 0.25 * i;
    s.trace.push_back(
        {t, t < 0.5 ? sample(i, 1980, 123.4, 527 * mib, 0) : sample(i, 345, 80.2, 0, idle_bit),
         t < 0.25 ? std::optional(true) : std::optional(false)});
  }
  return s;
}

release_check_record check() {
  release_check_record c;
  c.gpu = h200();
  c.hold_s = 5;
  c.timeout_s = 30;
  c.period = 50ms;
  c.baseline_samples = {sample(1, 345, 80.5, 0, idle_bit)};
  c.baseline_idle = true;
  c.release.summary = summary("release", 0.61, 0.012);
  c.release.pid = 4242;
  c.release.probe_error = 0;
  c.release.view.rule = listing_rule::by_pid;
  c.release.view.holder_memory_bytes = 527 * mib;
  c.release.view.processes = {{4242, reading<std::uint64_t>::of(527 * mib), "coolbench", false}};
  c.release.view.sample = sample(2, 1980, 123.4, 527 * mib, 0);
  c.release.criteria = criteria();
  device::release_report r;
  r.ordinal = 0;
  r.released = true;
  r.context_reset = true;
  r.note = "released";
  r.bytes_freed = 2 * mib + 512;
  r.live_bytes_freed = 1536;
  r.destroyed[0] = 3;
  r.destroyed[2] = 1;
  r.seconds = 0.0123;
  r.generation_after = 1;
  r.process_listed_after = false;
  c.release.report = r;
  c.release.hold_end_ns = 1000;
  c.release.event_ns = 2000;
  c.release.ran = true;
  c.exit.summary = summary("process exit", 0.55, 0.004);
  c.exit.pid = 4243;
  c.exit.probe_error = 0;
  c.exit.view.rule = listing_rule::by_new_pid;
  c.exit.criteria = criteria();
  c.exit.child_exit_status = 0;
  c.exit.ran = true;
  c.idle_again_s = 0.2;
  c.idle_again_reached = true;
  return c;
}

TEST(release_check_report, baseline_block) {
  const release_check_record c = check();
  EXPECT_EQ(format_baseline(c.gpu, c.baseline_samples.back(), {}, true, criteria(), 50ms),
            "coolbench release-check: GPU 0, NVIDIA H200 (00000000:00:06.0)\n"
            "Before the run: SM 345 MHz, 80.5 W, 31 C, memory used 0 MiB, reasons idle\n"
            "Idle means: the process not listed, memory used <= 4 MiB (baseline + 4 MiB), SM "
            "clock <= 380 MHz, power <= 96.0 W, gpu_idle bit set; 3 samples in a row, 50 ms "
            "apart\n");
}

TEST(release_check_report, baseline_block_warns_when_the_gpu_is_not_idle) {
  const release_check_record c = check();
  idle_criteria busy = criteria();
  busy.power_floor_w.reset();
  busy.sm_floor_from_baseline = false;
  busy.judge_idle_bit = false;
  busy.memory_baseline_bytes.reset();
  const std::vector<gpu_process> others = {
      {77, reading<std::uint64_t>::of(100 * mib), "python3", false}};
  EXPECT_EQ(format_baseline(c.gpu, c.baseline_samples.back(), others, false, busy, 50ms),
            "coolbench release-check: GPU 0, NVIDIA H200 (00000000:00:06.0)\n"
            "Before the run: SM 345 MHz, 80.5 W, 31 C, memory used 0 MiB, reasons idle\n"
            "warning: the baseline is not idle: other processes hold a context already\n" +
                format_gpu_processes(c.gpu, others) +
                "warning: the GPU was not idle before the run (gpu_idle bit not set in every "
                "sample): power is not judged, and the SM clock floor is the lowest clock seen "
                "+ 10%\n"
                "Idle means: the process not listed, SM clock <= 380 MHz (so far); 3 samples in "
                "a row, 50 ms apart\n");
}

TEST(release_check_report, hold_views_by_listing_rule) {
  release_check_record c = check();
  EXPECT_EQ(format_hold_view(c.release, 5),
            "  end of the 5.0 s hold: NVML lists pid 4242 with 527.0 MiB; SM 1980 MHz, 123.4 W, "
            "31 C, reasons -\n");
  EXPECT_EQ(format_hold_view(c.exit, 2.5),
            "  end of the 2.5 s hold: NVML lists a new process (not pid 4243: another PID "
            "namespace); no sample\n");
  c.exit.view.rule = listing_rule::unknown;
  c.exit.view.holder_memory_bytes = 1536;
  EXPECT_EQ(format_hold_view(c.exit, 0),
            "  end of the 0.0 s hold: NVML does not list pid 4243 (another PID namespace?): "
            "'process gone' is not judged with 1.5 KiB; no sample\n");
}

TEST(release_check_report, release_line) {
  const release_check_record c = check();
  EXPECT_EQ(format_release(*c.release.report),
            "  release: released, freed 2.0 MiB (1.5 KiB live), destroyed graph 3, cuda_module 1, "
            "took 12 ms; NVML lists this process afterwards: no\n");
  device::release_report none;
  none.note = "nothing to release";
  EXPECT_EQ(format_release(none),
            "  release: nothing to release, freed 0 B (0 B live), destroyed no resources, took 0 "
            "ms; NVML lists this process afterwards: n/a\n");
}

TEST(release_check_report, mode_results) {
  release_check_record c = check();
  EXPECT_EQ(format_mode_result(c.release, "the release returned", 30),
            "  idle 0.61 s after the release returned (0.62 s after the end of the hold)\n");
  c.exit.summary.times.time_s[static_cast<std::size_t>(milestone::idle)].reset();
  EXPECT_EQ(format_mode_result(c.exit, "the child exited", 30),
            "  not idle 30 s after the child exited\n");
}

TEST(release_check_report, closing_block) {
  EXPECT_EQ(format_release_check_summary(check(), 0.25, 1.0),
            "\n"
            "time to [s]                      release [s]  process exit [s]\n"
            "  process gone                          0.00              0.00\n"
            "  memory back                           0.05              0.05\n"
            "  SM clock at floor                     0.51              0.45\n"
            "  power at floor                         n/a               n/a\n"
            "  gpu_idle bit                          0.61              0.55\n"
            "  idle (all)                            0.61              0.55\n"
            "  idle from end of hold                 0.62              0.55\n"
            "\n"
            "Power [W] and SM clock [MHz] after the event\n"
            "t[s]               0.00  0.25  0.50  0.75  1.00\n"
            "release W           123   123    80    80     -\n"
            "release MHz        1980  1980   345   345     -\n"
            "process exit W      123   123    80    80     -\n"
            "process exit MHz   1980  1980   345   345     -\n"
            "\n"
            "release reached idle in 0.61 s, process exit in 0.55 s (ratio 1.11)\n");
}

// The file as `release-check --json` writes it: dump(2) and a newline.
TEST(release_check_report, json_file) {
  std::ifstream golden(RELEASE_CHECK_GOLDEN_JSON);
  ASSERT_TRUE(golden) << RELEASE_CHECK_GOLDEN_JSON;
  std::stringstream expected;
  expected << golden.rdbuf();
  EXPECT_EQ(to_json(check()).dump(2) + "\n", expected.str());
}

}  // namespace
}  // namespace coolbench::report
