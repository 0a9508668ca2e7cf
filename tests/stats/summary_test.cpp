#include "coolbench/stats/summary.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "coolbench/core/error.hpp"

namespace coolbench::stats {
namespace {

TEST(Quantile, Type7ByHand) {
  // Sorted: 1 2 3 4 10. h = 4q.
  const std::vector<double> x{10, 2, 4, 1, 3};
  EXPECT_DOUBLE_EQ(quantile(x, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(quantile(x, 1.0), 10.0);
  EXPECT_DOUBLE_EQ(quantile(x, 0.5), 3.0);
  EXPECT_DOUBLE_EQ(quantile(x, 0.25), 2.0);
  EXPECT_DOUBLE_EQ(quantile(x, 0.9), 4.0 + 0.6 * 6.0);    // h = 3.6
  EXPECT_DOUBLE_EQ(quantile(x, 0.1), 1.0 + 0.4 * 1.0);    // h = 0.4
  EXPECT_DOUBLE_EQ(quantile(x, 0.99), 4.0 + 0.96 * 6.0);  // h = 3.96
}

TEST(Quantile, MedianOfEvenCountIsMeanOfMiddlePair) {
  EXPECT_DOUBLE_EQ(median(std::vector<double>{4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{7}), 7.0);
}

TEST(Quantile, SortedVariantAgreesAndChecksOrder) {
  const std::vector<double> sorted{1, 2, 3, 4, 10};
  EXPECT_DOUBLE_EQ(quantile_sorted(sorted, 0.9), quantile(sorted, 0.9));
  const std::vector<double> unsorted{1, 3, 2};
  try {
    (void)quantile_sorted(unsorted, 0.5);
    FAIL() << "no exception";
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("values[2]"), std::string::npos) << e.what();
  }
}

TEST(Quantile, RejectsBadInput) {
  const std::vector<double> empty;
  EXPECT_THROW((void)quantile(empty, 0.5), invalid_argument);
  const std::vector<double> x{1, 2};
  EXPECT_THROW((void)quantile(x, -0.1), invalid_argument);
  EXPECT_THROW((void)quantile(x, 1.5), invalid_argument);
  EXPECT_THROW((void)quantile(x, std::nan("")), invalid_argument);
  const std::vector<double> with_nan{1, std::nan(""), 3};
  try {
    (void)median(with_nan);
    FAIL() << "no exception";
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("values[1] is NaN"), std::string::npos) << e.what();
  }
  const std::vector<double> with_inf{1, std::numeric_limits<double>::infinity()};
  EXPECT_THROW((void)mean(with_inf), invalid_argument);
}

TEST(Summarize, ByHand) {
  const std::vector<double> x{2, 4, 4, 4, 5, 5, 7, 9};
  const summary s = summarize(x);
  EXPECT_EQ(s.count, 8U);
  EXPECT_DOUBLE_EQ(s.min, 2.0);
  EXPECT_DOUBLE_EQ(s.max, 9.0);
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(32.0 / 7.0));  // Σ(x − 5)² = 32
  EXPECT_DOUBLE_EQ(s.cv, std::sqrt(32.0 / 7.0) / 5.0);
  EXPECT_DOUBLE_EQ(s.median, 4.5);
  EXPECT_DOUBLE_EQ(s.p10, 2.0 + 0.7 * 2.0);  // h = 0.7
  EXPECT_DOUBLE_EQ(s.p90, 7.0 + 0.3 * 2.0);  // h = 6.3
  EXPECT_NEAR(s.p99, 7.0 + 0.93 * 2.0, 1e-12);
}

TEST(Summarize, OneSampleHasZeroSpread) {
  const summary s = summarize(std::vector<double>{3.5});
  EXPECT_EQ(s.count, 1U);
  EXPECT_DOUBLE_EQ(s.stddev, 0.0);
  EXPECT_DOUBLE_EQ(s.cv, 0.0);
  EXPECT_DOUBLE_EQ(s.p99, 3.5);
}

TEST(SmallestStep, IsTheSmallestPositiveGapInAnyOrder) {
  EXPECT_DOUBLE_EQ(smallest_step(std::vector<double>{9, 2, 4, 4, 5, 7}), 1.0);  // 4 -> 5
  EXPECT_DOUBLE_EQ(smallest_step(std::vector<double>{3, 3, 3}), 0.0);
  EXPECT_DOUBLE_EQ(smallest_step(std::vector<double>{3}), 0.0);
  // Event times as floats: 32 ns ticks around 19.5 us.
  const std::vector<double> ticks{static_cast<float>(0.019536), static_cast<float>(0.019472),
                                  static_cast<float>(0.019536), static_cast<float>(0.019600)};
  EXPECT_NEAR(smallest_step(ticks), 0.000064, 1e-9);
  EXPECT_THROW((void)smallest_step(std::vector<double>{}), invalid_argument);
}

}  // namespace
}  // namespace coolbench::stats
