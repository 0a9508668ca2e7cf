// The Student-t quantile against its closed forms (df 1 and 2) and tabled
// values; the interval against a hand computation. stats_reference_test
// compares both with scipy.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "coolbench/core/error.hpp"
#include "coolbench/stats/mean_ci.hpp"

namespace coolbench::stats {
namespace {

TEST(StudentT, QuantileMatchesTheClosedFormsOfOneAndTwoDegrees) {
  for (const double p : {0.001, 0.025, 0.1, 0.3, 0.5, 0.75, 0.95, 0.975, 0.995, 0.9999}) {
    SCOPED_TRACE(p);
    // df 1 is Cauchy: tan(π(p − ½)); df 2: (2p − 1)/sqrt(2p(1 − p)).
    const double cauchy = std::tan(std::numbers::pi * (p - 0.5));
    EXPECT_NEAR(student_t_quantile(p, 1), cauchy, 1e-11 * std::max(1.0, std::abs(cauchy)));
    const double two = (2 * p - 1) / std::sqrt(2 * p * (1 - p));
    EXPECT_NEAR(student_t_quantile(p, 2), two, 1e-11 * std::max(1.0, std::abs(two)));
  }
}

TEST(StudentT, QuantileMatchesTables) {
  // Two-sided 95 % critical values, as printed in every t table.
  EXPECT_NEAR(student_t_quantile(0.975, 5), 2.5706, 5e-5);
  EXPECT_NEAR(student_t_quantile(0.975, 10), 2.2281, 5e-5);
  EXPECT_NEAR(student_t_quantile(0.975, 30), 2.0423, 5e-5);
  EXPECT_NEAR(student_t_quantile(0.995, 7), 3.4995, 5e-5);
  // Towards the normal distribution's 1.959964 as df grows.
  EXPECT_NEAR(student_t_quantile(0.975, 1e6), 1.959966, 1e-5);
  EXPECT_DOUBLE_EQ(student_t_quantile(0.025, 10), -student_t_quantile(0.975, 10));
}

TEST(StudentT, CdfInvertsTheQuantile) {
  for (const double df : {1.0, 2.5, 9.0, 40.0}) {
    for (const double p : {0.01, 0.2, 0.5, 0.9, 0.999}) {
      EXPECT_NEAR(student_t_cdf(student_t_quantile(p, df), df), p, 1e-13);
    }
  }
  EXPECT_EQ(student_t_cdf(INFINITY, 3), 1.0);
  EXPECT_EQ(student_t_cdf(-INFINITY, 3), 0.0);
}

TEST(StudentT, RefusesImpossibleArguments) {
  EXPECT_THROW((void)student_t_quantile(0, 3), invalid_argument);
  EXPECT_THROW((void)student_t_quantile(1, 3), invalid_argument);
  EXPECT_THROW((void)student_t_quantile(0.5, 0), invalid_argument);
  EXPECT_THROW((void)student_t_cdf(NAN, 3), invalid_argument);
}

TEST(MeanCi, IsTheMeanPlusMinusTTimesTheStandardError) {
  const std::vector<double> x{0.2533, 0.2597, 0.2535, 0.2576, 0.2601, 0.2530};
  const mean_interval ci = mean_ci_student_t(x, 0.95);
  double mean = 0;
  for (const double v : x) mean += v;
  mean /= 6;
  double ss = 0;
  for (const double v : x) ss += (v - mean) * (v - mean);
  const double se = std::sqrt(ss / 5 / 6);
  EXPECT_NEAR(ci.mean, mean, 1e-15);
  EXPECT_NEAR(ci.standard_error, se, 1e-15);
  EXPECT_NEAR(ci.upper - ci.mean, 2.5706 * se, 5e-5 * se);
  EXPECT_NEAR(ci.mean - ci.lower, ci.upper - ci.mean, 1e-15);
  EXPECT_NEAR(ci.relative_half_width(), (ci.upper - ci.lower) / 2 / mean, 1e-15);
  EXPECT_EQ(ci.n, 6U);
}

TEST(MeanCi, NeedsTwoFiniteValuesAndALevel) {
  EXPECT_THROW((void)mean_ci_student_t(std::vector<double>{1.0}), invalid_argument);
  EXPECT_THROW((void)mean_ci_student_t(std::vector<double>{}), invalid_argument);
  EXPECT_THROW((void)mean_ci_student_t(std::vector<double>{1.0, NAN}), invalid_argument);
  EXPECT_THROW((void)mean_ci_student_t(std::vector<double>{1.0, 2.0}, 1.0), invalid_argument);
  const mean_interval same = mean_ci_student_t(std::vector<double>{4.0, 4.0, 4.0});
  EXPECT_EQ(same.lower, 4.0);
  EXPECT_EQ(same.upper, 4.0);
}

}  // namespace
}  // namespace coolbench::stats
