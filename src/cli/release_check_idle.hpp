// When has a GPU reached its idle state after a release or a process exit? The rules of
// `coolbench release-check` (docs/cli/release-check.md) as pure functions of the samples, so
// that tests can check them on synthetic traces. The P-state is never used: an H200 reads P0
// even idle (FACTS-H200.md §1).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coolbench/telemetry/gpu.hpp"

namespace coolbench::cli {

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

inline constexpr std::uint64_t memory_tolerance_min_bytes = std::uint64_t{4} << 20U;
inline constexpr double memory_tolerance_fraction = 0.01;
inline constexpr double sm_clock_margin = 0.10;  ///< floor = idle clock + 10%
inline constexpr double power_margin_w = 15.0;   ///< floor = idle power + 15 W

/// True when a sample has the gpu_idle reason set (a missing reading is not idle).
[[nodiscard]] bool has_idle_bit(const telemetry::gpu_sample& s) noexcept;

/// The criteria from the samples taken before the run. The pre-run GPU counts as idle when
/// every one of them has the gpu_idle bit; then the SM clock floor is their highest SM clock
/// + 10% and the power floor their highest power + 15 W. Otherwise the floor is
/// `lowest_sm_clock_seen_mhz` (the lowest SM clock of the whole check so far) + 10% and power is
/// not judged. Memory: the highest memory used of the pre-run samples, tolerance max(4 MiB, 1%).
[[nodiscard]] idle_criteria make_idle_criteria(std::span<const telemetry::gpu_sample> pre_run,
                                               std::optional<unsigned> lowest_sm_clock_seen_mhz,
                                               bool gpu_offers_idle_bit);

/// True when the pre-run samples all have the gpu_idle bit (and there is at least one).
[[nodiscard]] bool pre_run_idle(std::span<const telemetry::gpu_sample> pre_run) noexcept;

/// One sample of a watch: its time since the event (the release's return, the child's exit),
/// the sample, and whether NVML listed the process at that time (empty: unknown, not gone).
struct trace_point {
  double time_s = 0;
  telemetry::gpu_sample sample;
  std::optional<bool> process_listed;
};

/// Which conditions one sample meets; a condition not judged reads true.
[[nodiscard]] std::array<bool, milestone_count> conditions_met(const idle_criteria& criteria,
                                                               const trace_point& point);

/// The time of each milestone: the first sample at or after the event (time_s >= 0) from which
/// the condition holds for `consecutive` samples in a row. Empty when not reached, or not
/// judged (`judged` says which).
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

/// `trace` is in time order.
[[nodiscard]] milestone_times find_milestones(const idle_criteria& criteria,
                                              std::span<const trace_point> trace);

/// The sample nearest to each time 0, step, 2·step, … up to `until_s` (within half a step);
/// empty where there is none.
[[nodiscard]] std::vector<std::optional<telemetry::gpu_sample>> resample(
    std::span<const trace_point> trace, double step_s, double until_s);

/// One mode's figures for the side-by-side rendering.
struct mode_summary {
  std::string name;                ///< "release", "process exit"
  milestone_times times;           ///< since the event
  double hold_end_to_event_s = 0;  ///< from the end of the hold to the event
  std::vector<trace_point> trace;  ///< for the power trace
  double timeout_s = 0;
};

/// The table of milestone times, one column per mode, with a last row "from the end of the hold".
[[nodiscard]] std::string format_milestone_table(const mode_summary& a, const mode_summary& b);

/// Power [W] and SM clock [MHz] every `step_s` for the first `until_s` after each event: a
/// "t[s]" row, then two rows per mode.
[[nodiscard]] std::string format_power_traces(const mode_summary& a, const mode_summary& b,
                                              double step_s, double until_s);

/// "release reached idle in X s, process exit in Y s (ratio X/Y)", or which did not.
[[nodiscard]] std::string format_verdict(const mode_summary& a, const mode_summary& b);

}  // namespace coolbench::cli
