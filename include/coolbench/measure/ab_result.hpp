/// @file
/// The records of a matched A/B run (ab.hpp, docs/run-json.md "Matched A/B"): each workload's
/// run, the pairs and the ratio B/A with its CI. Data only, for the report.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "coolbench/measure/result.hpp"
#include "coolbench/stats/ratio_ci.hpp"

namespace coolbench::measure {

/// A burst is at least this long (and has context_min_samples kept samples), so that its
/// median is not one moment's.
inline constexpr std::chrono::milliseconds k_ab_burst_min_time{250};

/// One pair of bursts, both in one context: A then B in odd pairs, B then A in even ones.
struct ab_pair {
  int pair = 0;  ///< 1, 2, ...; also the context both bursts' samples carry in a and b
  bool a_first = true;
  int a_kept = 0;
  int b_kept = 0;
  std::optional<double> a_median_ms;
  std::optional<double> b_median_ms;
  std::optional<double> a_clock_mhz;  ///< median SM clock of the burst's kept samples
  std::optional<double> b_clock_mhz;
  std::optional<int> a_start_temp_c;  ///< the GPU's temperature as the burst began
  std::optional<int> b_start_temp_c;
  std::optional<double> ratio;         ///< B / A; empty when the pair does not count
  std::optional<double> cycles_ratio;  ///< B / A in clock cycles (latency × clock)
  std::string dropped;                 ///< why it does not count, when it does not
};

struct ab_result {
  /// Each workload's run: its samples (context k = pair k), summary and energy, as a plain
  /// run's; readable by everything that reads a run.
  run_result a;
  run_result b;
  std::vector<ab_pair> pairs;
  /// B/A: the geometric mean over the couples (an AB pair and the BA pair after it, each
  /// couple the geometric mean of its two ratios, so that what the order does cancels) with
  /// its Student-t CI on the log scale over the couples; empty below two couples.
  std::optional<stats::ratio_interval> time;
  std::optional<stats::ratio_interval> cycles;  ///< the same in clock cycles
  /// J per run, B / A, from the two runs' energy CIs (MOVER); empty without both.
  std::optional<stats::ratio_interval> energy;
  int pairs_counted = 0;
  int couples = 0;  ///< AB and BA pairs both counted: what the CIs are over
  /// How much slower the second burst of a pair ran than the first, whichever workload it was
  /// (the root of an AB pair's ratio over its BA pair's), with its CI over the couples.
  std::optional<stats::ratio_interval> second_burst;
  std::string isolation;   ///< what separated the pairs: "release", or "none" (context kept)
  bool converged = false;  ///< the ratio's CI met rel_ci
  measure::stop_reason stop_reason = measure::stop_reason::stopped;
  bool complete = true;
  std::string error;
  std::vector<std::string> warnings;
  double seconds_total = 0;
};

}  // namespace coolbench::measure
