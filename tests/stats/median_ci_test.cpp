#include "coolbench/stats/median_ci.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "coolbench/core/error.hpp"
#include "coolbench/stats/summary.hpp"

namespace coolbench::stats {
namespace {

std::vector<double> iota(std::size_t n) {
  std::vector<double> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<double>(n - i);  // n … 1
  return x;
}

TEST(MedianCiOrderStatistic, MinimalSamples) {
  EXPECT_EQ(median_ci_min_samples(0.95), 6U);  // 0.5^6 = 1/64 <= 0.025 < 1/32
  EXPECT_EQ(median_ci_min_samples(0.99), 8U);  // 1/256 <= 0.005 < 1/128
  EXPECT_EQ(median_ci_min_samples(0.90), 5U);  // 1/32 <= 0.05 < 1/16
}

TEST(MedianCiOrderStatistic, SixSamplesGiveMinToMax) {
  const median_interval ci = median_ci_order_statistic(iota(6), 0.95);
  EXPECT_DOUBLE_EQ(ci.lower, 1.0);
  EXPECT_DOUBLE_EQ(ci.upper, 6.0);
  EXPECT_DOUBLE_EQ(ci.coverage, 1.0 - 2.0 / 64.0);
  EXPECT_EQ(ci.n, 6U);
  EXPECT_EQ(ci.method, ci_method::order_statistic);
  EXPECT_DOUBLE_EQ(ci.level, 0.95);
}

TEST(MedianCiOrderStatistic, TwentySamplesByHand) {
  // binomial(20, ½): P(B <= 5) = 21700/2^20 = 0.0207 <= 0.025 < P(B <= 6) = 0.0577,
  // so k = 6 and the interval is [x_(6), x_(15)].
  const median_interval ci = median_ci_order_statistic(iota(20), 0.95);
  EXPECT_DOUBLE_EQ(ci.lower, 6.0);
  EXPECT_DOUBLE_EQ(ci.upper, 15.0);
  EXPECT_NEAR(ci.coverage, 1.0 - 2.0 * 21700.0 / 1048576.0, 1e-12);
}

TEST(MedianCiOrderStatistic, TooFewSaysHowMany) {
  try {
    (void)median_ci_order_statistic(iota(5), 0.95);
    FAIL() << "no exception";
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("at least 6"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)median_ci_order_statistic(iota(10), 1.0), invalid_argument);
  EXPECT_THROW((void)median_ci_order_statistic(iota(10), 0.0), invalid_argument);
  EXPECT_THROW((void)median_ci_order_statistic(std::vector<double>{}, 0.95), invalid_argument);
}

TEST(MedianCiOrderStatistic, LargeNStaysNearNormalApproximation) {
  // n = 100000: k ≈ n/2 − 1.96·√n/2, so the interval spans about 620 ranks.
  const median_interval ci = median_ci_order_statistic(iota(100000), 0.95);
  EXPECT_NEAR(ci.upper - ci.lower, 1.96 * std::sqrt(100000.0), 3.0);
  EXPECT_GE(ci.coverage, 0.95);
  EXPECT_LT(ci.coverage, 0.951);
}

TEST(MedianInterval, RelativeHalfWidth) {
  median_interval ci;
  ci.lower = 9.0;
  ci.upper = 10.5;
  EXPECT_DOUBLE_EQ(ci.relative_half_width(10.0), 0.1);
  EXPECT_TRUE(std::isinf(ci.relative_half_width(0.0)));
}

// Exponential latencies with a floor, drawn by inversion from mt19937_64
// (no standard-library distribution, so the same on every library).
std::vector<double> skewed_samples(std::mt19937_64& engine, std::size_t n) {
  std::vector<double> x(n);
  for (double& v : x) {
    const double u = static_cast<double>(engine() >> 11) * 0x1.0p-53;  // [0, 1)
    v = 2.0 - 0.5 * std::log1p(-u);
  }
  return x;
}

TEST(MedianCiOrderStatistic, CoverageBySimulation) {
  // 2000 trials of n = 25 from a skewed distribution whose median is known;
  // the interval must contain it in at least its exact coverage (0.957) less
  // sampling noise: one standard error is 0.0045, the margin 0.015.
  const double true_median = 2.0 + 0.5 * std::log(2.0);
  std::mt19937_64 engine(12345);
  constexpr int trials = 2000;
  int covered = 0;
  double coverage = 0;
  for (int t = 0; t < trials; ++t) {
    const median_interval ci = median_ci_order_statistic(skewed_samples(engine, 25), 0.95);
    coverage = ci.coverage;
    if (ci.lower <= true_median && true_median <= ci.upper) ++covered;
  }
  const double observed = static_cast<double>(covered) / trials;
  EXPECT_GE(observed, 0.95 - 0.015) << "exact coverage " << coverage;
  EXPECT_NEAR(observed, coverage, 0.02);
}

TEST(MedianCiBootstrap, DeterministicForASeed) {
  std::mt19937_64 engine(99);
  const std::vector<double> x = skewed_samples(engine, 60);
  const median_interval a = median_ci_bootstrap(x, 0.95, 500, 3);
  const median_interval b = median_ci_bootstrap(x, 0.95, 500, 3);
  EXPECT_EQ(a.lower, b.lower);
  EXPECT_EQ(a.upper, b.upper);
  EXPECT_EQ(a.method, ci_method::bootstrap);
  EXPECT_EQ(a.n, 60U);
  const double m = median(x);
  EXPECT_LE(a.lower, m);
  EXPECT_GE(a.upper, m);
  const median_interval c = median_ci_bootstrap(x, 0.95, 500, 4);
  EXPECT_TRUE(c.lower != a.lower || c.upper != a.upper);
}

TEST(MedianCiBootstrap, CloseToOrderStatisticForLargeN) {
  std::mt19937_64 engine(5);
  const std::vector<double> x = skewed_samples(engine, 2000);
  const median_interval boot = median_ci_bootstrap(x, 0.95, 1000, 1);
  const median_interval exact = median_ci_order_statistic(x, 0.95);
  const double width = exact.upper - exact.lower;
  EXPECT_NEAR(boot.lower, exact.lower, 0.3 * width);
  EXPECT_NEAR(boot.upper, exact.upper, 0.3 * width);
}

TEST(MedianCiBootstrap, RejectsBadArguments) {
  const std::vector<double> x{1, 2, 3};
  EXPECT_THROW((void)median_ci_bootstrap(x, 0.95, 1, 0), invalid_argument);
  EXPECT_THROW((void)median_ci_bootstrap(x, 1.5, 100, 0), invalid_argument);
  EXPECT_THROW((void)median_ci_bootstrap(std::vector<double>{}, 0.95, 100, 0), invalid_argument);
}

TEST(MedianCiBootstrap, GeneratorIsTheStandardOne) {
  // [rand.predef]: the 10000th output of a default-constructed mt19937_64.
  std::mt19937_64 engine;
  engine.discard(9999);
  EXPECT_EQ(engine(), 9981545732273789042ULL);
}

}  // namespace
}  // namespace coolbench::stats
