// What `coolbench release-check` found, and how it is shown: the records of the check (the
// baseline before the run, and per mode its hold, its event and the watch until idle), and the
// text and JSON the command prints and writes (docs/cli/release-check.md). Pure functions of
// the records, so tests check them without a GPU. The check itself is
// src/cli/commands/release_check.cpp; the rules that decide idle are
// src/cli/release_check_idle.hpp.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "coolbench/device/device.hpp"
#include "coolbench/telemetry/gpu.hpp"

namespace coolbench::report {

/// The conditions that make up "idle", and idle itself (all of them at once).
enum class milestone : std::uint8_t {
  process_gone,    ///< NVML no longer lists the process that held the context
  memory_back,     ///< device memory used is back at the pre-run baseline
  sm_clock_floor,  ///< SM clock at its idle floor
  power_floor,     ///< power at its idle floor
  idle_bit,        ///< the gpu_idle clock-event reason (0x1) is set
  idle,            ///< every judged condition at once
};
inline constexpr std::size_t milestone_count = 6;
inline constexpr std::array<milestone, milestone_count> all_milestones = {
    milestone::process_gone, milestone::memory_back, milestone::sm_clock_floor,
    milestone::power_floor,  milestone::idle_bit,    milestone::idle};

/// "process_gone": the JSON key.
[[nodiscard]] std::string_view key_of(milestone m) noexcept;
/// "process gone": the row label.
[[nodiscard]] std::string_view label_of(milestone m) noexcept;

/// The thresholds of idle, from the pre-run samples. A condition that is not judged counts as
/// met for `idle` and its milestone reads n/a.
struct idle_criteria {
  bool judge_process = true;   ///< false: NVML never listed the process that held the context
  bool judge_idle_bit = true;  ///< false: the GPU does not offer the gpu_idle reason
  /// Memory used before the run; empty when unknown (then memory is not judged).
  std::optional<std::uint64_t> memory_baseline_bytes;
  std::uint64_t memory_tolerance_bytes = 0;  ///< max(4 MiB, 1% of the baseline)
  /// SM clock at or below this is at its floor; empty when there is no clock reading (then the
  /// floor is never reached).
  std::optional<unsigned> sm_clock_floor_mhz;
  bool sm_floor_from_baseline = true;  ///< false: from the lowest clock seen in the check
  /// Power at or below this is at its floor; empty when the pre-run GPU was not idle (or had no
  /// power reading): then power is not judged.
  std::optional<double> power_floor_w;
  std::size_t consecutive = 3;  ///< samples in a row a condition must hold
};

/// One sample of a watch: its time since the event (the release's return, the child's exit),
/// the sample, and whether NVML listed the process at that time (empty: unknown, not gone).
struct trace_point {
  double time_s = 0;
  telemetry::gpu_sample sample;
  std::optional<bool> process_listed;
};

/// The time of each milestone since the event (found by the idle rules, find_milestones in
/// src/cli/release_check_idle.hpp). Empty when not reached, or not judged (`judged` says which).
struct milestone_times {
  std::array<std::optional<double>, milestone_count> time_s{};
  std::array<bool, milestone_count> judged{};

  [[nodiscard]] const std::optional<double>& at(milestone m) const noexcept {
    return time_s[static_cast<std::size_t>(m)];
  }
  [[nodiscard]] bool is_judged(milestone m) const noexcept {
    return judged[static_cast<std::size_t>(m)];
  }
};

/// One mode's figures for the side-by-side rendering.
struct mode_summary {
  std::string name;                ///< "release", "process exit"
  milestone_times times;           ///< since the event
  double hold_end_to_event_s = 0;  ///< from the end of the hold to the event
  std::vector<trace_point> trace;  ///< for the power trace
  double timeout_s = 0;
};

/// How the check tells whether NVML still lists the process that held the context.
enum class listing_rule : std::uint8_t {
  by_pid,      ///< NVML lists its pid
  by_new_pid,  ///< NVML lists another PID namespace's pids: a pid not listed before the run
  unknown,     ///< NVML did not list it while it held a context: not judged
};

[[nodiscard]] std::string_view to_string(listing_rule rule) noexcept;

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
  std::uint32_t pid = 0;  ///< the process that held the context
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

/// The whole check, as its JSON file holds it.
struct release_check_record {
  telemetry::gpu_identity gpu;
  double hold_s = 0;
  double timeout_s = 0;
  std::chrono::milliseconds period{0};  ///< between two NVML samples
  std::vector<telemetry::gpu_sample> baseline_samples;
  std::vector<telemetry::gpu_process> baseline_processes;
  bool baseline_idle = false;
  mode_record release;
  mode_record exit;
  std::optional<double> idle_again_s;  ///< the wait for idle between the two modes
  bool idle_again_reached = false;
  bool interrupted = false;
};

/// The sample nearest to each time 0, step, 2·step, … up to `until_s` (within half a step);
/// empty where there is none.
[[nodiscard]] std::vector<std::optional<telemetry::gpu_sample>> resample(
    std::span<const trace_point> trace, double step_s, double until_s);

/// The table of milestone times, one column per mode, with a last row "from the end of the hold".
[[nodiscard]] std::string format_milestone_table(const mode_summary& a, const mode_summary& b);

/// Power [W] and SM clock [MHz] every `step_s` for the first `until_s` after each event: a
/// "t[s]" row, then two rows per mode.
[[nodiscard]] std::string format_power_traces(const mode_summary& a, const mode_summary& b,
                                              double step_s, double until_s);

/// "release reached idle in X s, process exit in Y s (ratio X/Y)", or which did not.
[[nodiscard]] std::string format_verdict(const mode_summary& a, const mode_summary& b);

/// The lines printed before the run: the GPU, its state, warnings about a baseline that is not
/// idle, and what idle means (`criteria`, samples `period` apart). `last` is the last sample of
/// the baseline.
[[nodiscard]] std::string format_baseline(const telemetry::gpu_identity& id,
                                          const telemetry::gpu_sample& last,
                                          const std::vector<telemetry::gpu_process>& processes,
                                          bool idle, const idle_criteria& criteria,
                                          std::chrono::milliseconds period);

/// "  end of the 5.0 s hold: NVML lists pid 123 with 527.0 MiB; SM 1980 MHz, ...".
[[nodiscard]] std::string format_hold_view(const mode_record& mode, double hold_s);

/// "  release: <note>, freed ..., destroyed ..., took ... ms; NVML lists this process
/// afterwards: no".
[[nodiscard]] std::string format_release(const device::release_report& r);

/// "  idle 1.23 s after <event> (...)" or "  not idle 30 s after <event>".
[[nodiscard]] std::string format_mode_result(const mode_record& mode, std::string_view event,
                                             double timeout_s);

/// The closing block: the milestone table, the power traces every `step_s` up to `until_s`, the
/// verdict.
[[nodiscard]] std::string format_release_check_summary(const release_check_record& check,
                                                       double step_s, double until_s);

/// "1.5 KiB": bytes in B, KiB or MiB.
[[nodiscard]] std::string show_bytes(std::uint64_t bytes);

/// The JSON file of `release-check --json` (docs/cli/release-check.md).
[[nodiscard]] nlohmann::json to_json(const release_check_record& check);

}  // namespace coolbench::report
