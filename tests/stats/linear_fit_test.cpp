#include "coolbench/stats/linear_fit.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "coolbench/core/error.hpp"

namespace coolbench::stats {
namespace {

TEST(FitLine, ExactLine) {
  const linear_fit f = fit_line(std::vector<double>{0, 1, 2, 3}, std::vector<double>{1, 3, 5, 7});
  EXPECT_DOUBLE_EQ(f.slope, 2.0);
  EXPECT_DOUBLE_EQ(f.intercept, 1.0);
  EXPECT_DOUBLE_EQ(f.r, 1.0);
  EXPECT_DOUBLE_EQ(f.r2, 1.0);
  EXPECT_DOUBLE_EQ(f.slope_stderr, 0.0);
  EXPECT_EQ(f.n, 4U);
}

TEST(FitLine, ByHand) {
  // x̄ = 2, ȳ = 5/3, S_xx = 2, S_xy = 1, S_yy = 2/3: slope ½, intercept 2/3,
  // r = 1/√(4/3), stderr = √((1 − ¾)·(2/3)/2/1) = √(1/12).
  const linear_fit f = fit_line(std::vector<double>{1, 2, 3}, std::vector<double>{1, 2, 2});
  EXPECT_DOUBLE_EQ(f.slope, 0.5);
  EXPECT_NEAR(f.intercept, 2.0 / 3.0, 1e-15);
  EXPECT_NEAR(f.r, std::sqrt(3.0) / 2.0, 1e-15);
  EXPECT_NEAR(f.r2, 0.75, 1e-15);
  EXPECT_NEAR(f.slope_stderr, std::sqrt(1.0 / 12.0), 1e-15);
  EXPECT_NEAR(f.intercept_stderr, std::sqrt(1.0 / 12.0) * std::sqrt(2.0 / 3.0 + 4.0), 1e-15);
}

TEST(FitLine, FlatYHasNoCorrelation) {
  const linear_fit f = fit_line(std::vector<double>{1, 2, 3}, std::vector<double>{4, 4, 4});
  EXPECT_DOUBLE_EQ(f.slope, 0.0);
  EXPECT_DOUBLE_EQ(f.intercept, 4.0);
  EXPECT_DOUBLE_EQ(f.r, 0.0);
  EXPECT_DOUBLE_EQ(f.slope_stderr, 0.0);
}

TEST(FitLine, RejectsBadInput) {
  const std::vector<double> three{1, 2, 3};
  const std::vector<double> two{1, 2};
  try {
    (void)fit_line(three, two);
    FAIL() << "no exception";
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("x has 3 values but y has 2"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)fit_line(std::vector<double>{1}, std::vector<double>{1}), invalid_argument);
  EXPECT_THROW((void)fit_line(std::vector<double>{2, 2, 2}, three), invalid_argument);
  EXPECT_THROW((void)fit_line(std::vector<double>{1, std::nan(""), 3}, three), invalid_argument);
}

TEST(LatencyFits, TemperatureInMsPerDegree) {
  // 5 ms at 40 °C, rising 0.01 ms per °C.
  std::vector<double> temp_c;
  std::vector<double> latency_ms;
  for (int t = 40; t <= 80; t += 5) {
    temp_c.push_back(t);
    latency_ms.push_back(5.0 + 0.01 * (t - 40));
  }
  const temperature_sensitivity s = fit_latency_on_temperature(temp_c, latency_ms);
  EXPECT_NEAR(s.latency_per_c, 0.01, 1e-12);
  EXPECT_NEAR(s.mean_latency, 5.2, 1e-12);
  EXPECT_NEAR(s.percent_per_c, 100.0 * 0.01 / 5.2, 1e-12);
}

TEST(LatencyFits, ClockInPercentPer100MHz) {
  // 10 ms at 1400 MHz, 0.001 ms shorter per MHz: −0.1 ms per 100 MHz against
  // a mean of 9.75 ms (clocks 1400 … 1900).
  std::vector<double> clock_mhz;
  std::vector<double> latency_ms;
  for (int c = 1400; c <= 1900; c += 50) {
    clock_mhz.push_back(c);
    latency_ms.push_back(10.0 - 0.001 * (c - 1400));
  }
  const clock_sensitivity s = fit_latency_on_clock(clock_mhz, latency_ms);
  EXPECT_NEAR(s.latency_per_mhz, -0.001, 1e-12);
  EXPECT_NEAR(s.mean_latency, 9.75, 1e-12);
  EXPECT_NEAR(s.percent_per_100mhz, -100.0 * 0.1 / 9.75, 1e-10);
  try {
    (void)fit_latency_on_clock(clock_mhz, std::vector<double>{1.0});
    FAIL() << "no exception";
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("clock_sm_mhz has 11 values"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace coolbench::stats
