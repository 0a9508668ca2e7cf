// `coolbench compare`: saved runs against a baseline, each with a verdict
// (FASTER / SLOWER / SAME / UNSURE), the ratio and its CI from the honest
// uncertainty of each run, the same ratio in clock cycles, and what makes the
// runs not comparable (docs/cli/compare.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "coolbench/report/run_document.hpp"
#include "coolbench/stats/ratio_ci.hpp"

namespace coolbench::report {

/// What differs between two runs. `refuse`: the runs measure different things
/// (another GPU model, mode or policy, a GPU against the host) and are
/// compared only when forced; otherwise a loud warning (another card of the
/// same model, driver, power limit, clocks, an incomplete run).
struct comparability_issue {
  std::string what;
  bool refuse = false;
};

[[nodiscard]] std::vector<comparability_issue> comparability(const run_document& a,
                                                             const run_document& b);

/// One run against the baseline: B / A.
struct run_comparison {
  std::string baseline;   ///< A's file
  std::string candidate;  ///< B's file
  std::string baseline_workload;
  std::string candidate_workload;
  std::optional<double> baseline_ms;
  std::optional<double> candidate_ms;
  int baseline_contexts = 1;
  int candidate_contexts = 1;
  double level = 0.95;
  /// B / A in time and its CI; empty without a figure and CI in both runs.
  std::optional<stats::ratio_interval> time;
  /// The same in clock cycles (latency × median SM clock of the kept
  /// samples); empty where a run has no clock readings.
  std::optional<stats::ratio_interval> cycles;
  std::optional<double> baseline_clock_mhz;
  std::optional<double> candidate_clock_mhz;
  std::string verdict;  ///< FASTER, SLOWER, SAME or UNSURE (B against A)
  std::string reason;   ///< why that verdict, in one sentence
  /// Where the uncertainty comes from: over contexts, or one context's draw.
  std::string uncertainty;
  bool one_context_draw = false;  ///< a GPU run whose CI holds one context only
  std::vector<comparability_issue> issues;
  /// Energy per run, B / A, with its CI; empty unless both runs have an energy CI.
  std::optional<stats::ratio_interval> energy;
  /// A matched A/B run (coolbench run --against): the couples (an AB and a BA pair) its CI is
  /// over.
  int matched_couples = 0;
};

/// A verdict on a ratio B / A and why.
struct ratio_verdict {
  std::string verdict;  ///< FASTER, SLOWER, SAME or UNSURE
  std::string reason;
};

/// FASTER/SLOWER when the CI of B/A lies below/above 1 in time and in clock cycles (where
/// known); SAME when both CIs lie within 1 ± same_within; else UNSURE. `no_ci` is the reason
/// given when there is no CI in time.
[[nodiscard]] ratio_verdict judge_ratio(const std::optional<stats::ratio_interval>& time,
                                        const std::optional<stats::ratio_interval>& cycles,
                                        double same_within,
                                        std::optional<double> baseline_clock_mhz,
                                        std::optional<double> candidate_clock_mhz,
                                        std::string_view no_ci);

/// B against A. `same_within`: SAME when the ratio's CI (in time and in
/// cycles) lies within [1 − same_within, 1 + same_within].
[[nodiscard]] run_comparison compare_runs(const run_document& a, const run_document& b,
                                          double same_within);

/// The text table `coolbench compare` prints.
[[nodiscard]] std::string compare_text(const std::vector<run_comparison>& comparisons,
                                       double same_within);
/// The same as JSON (schema coolbench.compare/1).
[[nodiscard]] nlohmann::json compare_json(const std::vector<run_comparison>& comparisons,
                                          double same_within);
/// The same as a self-contained HTML page with a picture of the ratios.
[[nodiscard]] std::string compare_html(const std::vector<run_comparison>& comparisons,
                                       double same_within);

}  // namespace coolbench::report
