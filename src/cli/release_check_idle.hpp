// When has a GPU reached its idle state after a release or a process exit? The rules of
// `coolbench release-check` (docs/cli/release-check.md) as pure functions of the samples, so
// that tests can check them on synthetic traces, and the watch that applies them to NVML's
// samples and process listing while the check runs. The records they fill and their renderings
// are report/release_check_report.hpp. The P-state is never used: an H200 reads P0
// even idle (docs/facts-h200.md §1).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coolbench/telemetry/gpu.hpp"
#include "coolbench/telemetry/sampler.hpp"
#include "report/release_check_report.hpp"

namespace coolbench::cli {

// The records of the check, by their short names here.
using report::all_milestones;
using report::hold_view;
using report::idle_criteria;
using report::listing_rule;
using report::milestone;
using report::milestone_count;
using report::milestone_times;
using report::mode_summary;
using report::trace_point;

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

/// Which conditions one sample meets; a condition not judged reads true.
[[nodiscard]] std::array<bool, milestone_count> conditions_met(const idle_criteria& criteria,
                                                               const trace_point& point);

/// The time of each milestone: the first sample at or after the event (time_s >= 0) from which
/// the condition holds for `consecutive` samples in a row. `trace` is in time order.
[[nodiscard]] milestone_times find_milestones(const idle_criteria& criteria,
                                              std::span<const trace_point> trace);

/// The samples after an event, and the milestones found in them so far.
struct watch_result {
  std::vector<trace_point> trace;
  milestone_times times;
  idle_criteria criteria;
  bool interrupted = false;
};

/// NVML's view of one GPU during the check: the baseline before the run, the process listing,
/// and the samples after each event, judged by the rules above.
class idle_watch {
 public:
  /// Opens the GPU's telemetry (throws when NVML is missing or the GPU is not there); the
  /// sampler starts with take_baseline().
  idle_watch(int device, std::chrono::milliseconds period);

  /// Lists the processes on the GPU and samples it for `window` (less when interrupted).
  void take_baseline(std::chrono::steady_clock::duration window);
  void stop() {
    if (m_sampler) m_sampler->stop();
  }

  [[nodiscard]] const telemetry::gpu_identity& identity() const { return m_gpu.identity(); }
  [[nodiscard]] const std::vector<telemetry::gpu_sample>& baseline_samples() const {
    return m_pre_run;
  }
  [[nodiscard]] const std::vector<telemetry::gpu_process>& baseline_processes() const {
    return m_pre_processes;
  }
  [[nodiscard]] bool baseline_idle() const { return m_pre_idle; }

  /// The criteria from the baseline and the lowest SM clock seen so far.
  [[nodiscard]] idle_criteria current_criteria() const;

  /// Whether `processes` include the holder by `rule`; empty when the rule is unknown.
  [[nodiscard]] std::optional<bool> listed(const std::vector<telemetry::gpu_process>& processes,
                                           listing_rule rule, std::uint32_t pid) const;

  /// What NVML shows now of the process `pid` that holds a context, and how to find it again.
  [[nodiscard]] hold_view take_view(std::uint32_t pid) const;

  /// When a poll of the process listing happened, and whether it listed the holder.
  using poll = std::pair<std::int64_t, std::optional<bool>>;

  /// Samples from `from_ns` on, with times since `event_ns`, until idle and at least `min_s`
  /// after the event, `timeout_s` after it, or an interrupt. `polls` holds what is known of the
  /// listing from before the watch (the hold's view, the release report).
  watch_result watch(std::int64_t from_ns, std::int64_t event_ns, listing_rule rule,
                     std::uint32_t pid, std::vector<poll> polls, double min_s, double timeout_s);

 private:
  void note_clock(const telemetry::gpu_sample& s);

  int m_device;
  std::chrono::milliseconds m_period;
  telemetry::gpu_telemetry m_gpu;
  std::optional<telemetry::sampler> m_sampler;
  std::vector<telemetry::gpu_sample> m_pre_run;
  std::vector<telemetry::gpu_process> m_pre_processes;
  std::set<std::uint32_t> m_pre_pids;
  bool m_pre_idle = false;
  std::optional<unsigned> m_lowest_sm_clock;
};

}  // namespace coolbench::cli
