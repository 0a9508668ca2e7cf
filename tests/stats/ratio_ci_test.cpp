// The interval of paired ratios (stats::paired_ratio_ci, docs/stats.md "Ratios measured in
// pairs"): its width by hand, its refusals, and A/A and 2 % runs on simulated couples that stop
// as `coolbench run --against` does (two couples at least, then as soon as the interval is
// within ±0.3 %): the plain Student-t interval calls a difference in about 5 % of A/A runs, this
// one in about 1 %, and both call 2 % more work slower every time.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "coolbench/core/error.hpp"
#include "coolbench/stats/mean_ci.hpp"
#include "coolbench/stats/ratio_ci.hpp"

namespace coolbench::stats {
namespace {

TEST(PairedRatioCi, IsTheGeometricMeanWithTheSdsUpperBound) {
  const std::vector<double> ratios{0.9991, 1.0003, 0.9998, 1.0010, 1.0005, 0.9994};
  std::vector<double> logs;
  for (const double r : ratios) logs.push_back(std::log(r));
  double mean = 0;
  for (const double l : logs) mean += l / 6;
  double ss = 0;
  for (const double l : logs) ss += (l - mean) * (l - mean);
  const double sd = std::sqrt(ss / 5);
  // χ²(0.1, 5) and t(0.975, 5) from scipy; the bound's chi-square quantile is Wilson and
  // Hilferty's approximation (within 1 % from 4 degrees of freedom on, docs/stats.md).
  const double sd_upper = sd * std::sqrt(5 / 1.6103079869623229);
  const double half = 2.570581835636314 * sd_upper / std::sqrt(6.0);
  const ratio_interval ci = paired_ratio_ci(ratios, 0.95);
  EXPECT_NEAR(ci.ratio, std::exp(mean), 1e-15);
  EXPECT_NEAR(std::log(ci.upper) - std::log(ci.ratio), half, 0.01 * half);
  EXPECT_NEAR(std::log(ci.ratio) - std::log(ci.lower), half, 0.01 * half);
  // Wider than the plain t interval by the bound's factor, √(5/χ²(0.1, 5)) ≈ 1.76.
  const mean_interval t = mean_ci_student_t(logs, 0.95);
  EXPECT_NEAR((std::log(ci.upper) - std::log(ci.lower)) / (t.upper - t.lower), 1.762, 0.02);
}

TEST(PairedRatioCi, RefusesWhatIsNoRatio) {
  EXPECT_THROW((void)paired_ratio_ci(std::vector<double>{1.01}, 0.95), invalid_argument);
  EXPECT_THROW((void)paired_ratio_ci(std::vector<double>{1.01, 0.0}, 0.95), invalid_argument);
  EXPECT_THROW((void)paired_ratio_ci(std::vector<double>{1.01, -1.0}, 0.95), invalid_argument);
  EXPECT_THROW((void)paired_ratio_ci(std::vector<double>{1.01, NAN}, 0.95), invalid_argument);
  EXPECT_THROW((void)paired_ratio_ci(std::vector<double>{1.01, 1.02}, 1.0), invalid_argument);
}

struct stopped_run {
  ratio_interval ci;
  int couples = 0;
};

// Couples' log ratios drawn around ln(true_ratio) with SD `sd` (0.08 %: the A/A runs' couples on
// an H100, docs/perf/compare.md), stopped at the first interval within rel_ci after two couples
// or at 40.
template <typename Interval>
stopped_run run_until_narrow(std::mt19937_64& rng, double true_ratio, double sd,
                             Interval interval) {
  std::normal_distribution<double> draw(std::log(true_ratio), sd);
  std::vector<double> ratios;
  for (;;) {
    ratios.push_back(std::exp(draw(rng)));
    if (ratios.size() < 2) continue;
    const ratio_interval ci = interval(ratios);
    if ((ci.upper - ci.lower) / 2 <= 0.003 * ci.ratio || ratios.size() >= 40) {
      return {ci, static_cast<int>(ratios.size())};
    }
  }
}

ratio_interval student_t(const std::vector<double>& ratios) {
  std::vector<double> logs;
  for (const double r : ratios) logs.push_back(std::log(r));
  const mean_interval ci = mean_ci_student_t(logs, 0.95);
  return {std::exp(ci.mean), std::exp(ci.lower), std::exp(ci.upper)};
}

ratio_interval paired(const std::vector<double>& ratios) { return paired_ratio_ci(ratios, 0.95); }

TEST(PairedRatioCi, AnAaRunThatStopsWhenNarrowSeldomCallsADifference) {
  constexpr int runs = 2000;
  std::mt19937_64 rng(20261205);
  int false_t = 0;
  int false_paired = 0;
  double couples = 0;
  for (int i = 0; i < runs; ++i) {
    const ratio_interval t = run_until_narrow(rng, 1.0, 0.0008, student_t).ci;
    false_t += t.upper < 1 || t.lower > 1;
    const stopped_run p = run_until_narrow(rng, 1.0, 0.0008, paired);
    false_paired += p.ci.upper < 1 || p.ci.lower > 1;
    couples += p.couples;
  }
  // Expected about 5.3 % and 1.1 % (a binomial SD of 0.5 and 0.23 points at 2000 runs).
  EXPECT_GT(false_t, runs * 35 / 1000) << "the Student-t interval was expected to mislead here";
  EXPECT_LT(false_paired, runs * 25 / 1000);
  EXPECT_LT(couples / runs, 6.0) << "the upper bound should cost a couple or two, not more";
}

TEST(PairedRatioCi, TwoPercentMoreWorkIsCalledEveryTime) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 500; ++i) {
    const stopped_run p = run_until_narrow(rng, 1.02, 0.001, paired);
    ASSERT_GT(p.ci.lower, 1) << "run " << i << " after " << p.couples << " couples";
  }
}

}  // namespace
}  // namespace coolbench::stats
