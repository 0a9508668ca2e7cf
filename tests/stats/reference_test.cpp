// Compares coolbench::stats with numpy and scipy on seeded datasets. The
// values come from tools/stats_reference.py, which the stats_reference_data
// ctest fixture runs; COOLBENCH_STATS_REFERENCE names its JSON file.
//
// Tolerances, relative (to max(1, |reference|)): Student t quantiles, CDFs
// and mean intervals 1e-11; quantiles, means, interval
// bounds and bootstrap bounds 1e-13 (quantiles and bounds agree to the bit;
// means differ by an ulp or two, numpy sums pairwise); standard deviations
// 1e-10; p-values 1e-12 (erfc against scipy's ndtr, the exact distribution
// built another way; they agree to ~1e-15 at scipy 1.17); fits 1e-12 (sums
// accumulated in another order; ~1e-15 seen).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "coolbench/core/error.hpp"
#include "coolbench/stats.hpp"

namespace coolbench::stats {
namespace {

using json = nlohmann::json;

constexpr double k_value_tolerance = 1e-13;
constexpr double k_p_tolerance = 1e-12;
constexpr double k_fit_tolerance = 1e-12;
// The t quantile is found by bisection on a continued fraction, scipy's by
// Boost's inversion: they agree to ~1e-13.
constexpr double k_t_tolerance = 1e-11;

// |actual − expected| <= tolerance·max(1, |expected|).
::testing::AssertionResult close(double actual, double expected, double tolerance) {
  const double bound = tolerance * std::max(1.0, std::abs(expected));
  if (std::abs(actual - expected) <= bound) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "got " << actual << ", reference " << expected << " (difference " << actual - expected
         << ", allowed " << bound << ")";
}

class StatsReference : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* path = std::getenv("COOLBENCH_STATS_REFERENCE");
    if (path == nullptr || *path == '\0') {
      GTEST_SKIP() << "COOLBENCH_STATS_REFERENCE is not set; run this through ctest";
    }
    std::ifstream in(path);
    if (!in) {
      GTEST_SKIP() << "no reference values at " << path
                   << ": the stats_reference_data fixture writes them with .venv's numpy and "
                      "scipy (scripts/setup.sh makes .venv)";
    }
    m_reference = json::parse(in);
  }

  json m_reference;
};

TEST_F(StatsReference, QuantilesMeanStddev) {
  for (const json& d : m_reference.at("datasets")) {
    SCOPED_TRACE(d.at("name").get<std::string>());
    const auto x = d.at("values").get<std::vector<double>>();
    for (const json& pair : d.at("quantiles")) {
      const double q = pair.at(0).get<double>();
      SCOPED_TRACE("q = " + std::to_string(q));
      EXPECT_TRUE(close(quantile(x, q), pair.at(1).get<double>(), k_value_tolerance));
    }
    const summary s = summarize(x);
    EXPECT_TRUE(close(s.mean, d.at("mean").get<double>(), k_value_tolerance));
    EXPECT_TRUE(close(s.stddev, d.at("stddev").get<double>(), 1e-10));
    EXPECT_EQ(s.count, x.size());
  }
}

TEST_F(StatsReference, OrderStatisticIntervalMatchesQuantileTest) {
  for (const json& d : m_reference.at("datasets")) {
    SCOPED_TRACE(d.at("name").get<std::string>());
    const auto x = d.at("values").get<std::vector<double>>();
    for (const json& c : d.at("order_statistic_ci")) {
      const double level = c.at("level").get<double>();
      SCOPED_TRACE("level " + std::to_string(level));
      if (c.at("too_few").get<bool>()) {
        EXPECT_THROW((void)median_ci_order_statistic(x, level), invalid_argument);
        continue;
      }
      const median_interval ci = median_ci_order_statistic(x, level);
      EXPECT_TRUE(close(ci.lower, c.at("lower").get<double>(), k_value_tolerance));
      EXPECT_TRUE(close(ci.upper, c.at("upper").get<double>(), k_value_tolerance));
      EXPECT_TRUE(close(ci.coverage, c.at("coverage").get<double>(), 1e-9));
    }
  }
}

TEST_F(StatsReference, BootstrapIntervalMatchesReimplementation) {
  int compared = 0;
  for (const json& d : m_reference.at("datasets")) {
    if (!d.contains("bootstrap_ci")) continue;
    SCOPED_TRACE(d.at("name").get<std::string>());
    const json& b = d.at("bootstrap_ci");
    const auto x = d.at("values").get<std::vector<double>>();
    const median_interval ci =
        median_ci_bootstrap(x, b.at("level").get<double>(), b.at("resamples").get<std::size_t>(),
                            b.at("seed").get<std::uint64_t>());
    EXPECT_TRUE(close(ci.lower, b.at("bounds").at(0).get<double>(), k_value_tolerance));
    EXPECT_TRUE(close(ci.upper, b.at("bounds").at(1).get<double>(), k_value_tolerance));
    ++compared;
  }
  EXPECT_GE(compared, 5);
}

TEST_F(StatsReference, StudentTMatchesScipy) {
  int compared = 0;
  for (const json& c : m_reference.at("student_t")) {
    const double df = c.at("df").get<double>();
    const double p = c.at("p").get<double>();
    SCOPED_TRACE("df " + std::to_string(df) + " p " + std::to_string(p));
    const double q = c.at("quantile").get<double>();
    EXPECT_TRUE(close(student_t_quantile(p, df), q, k_t_tolerance));
    EXPECT_TRUE(close(student_t_cdf(q, df), c.at("cdf_at_quantile").get<double>(), k_t_tolerance));
    ++compared;
  }
  EXPECT_GE(compared, 50);
}

TEST_F(StatsReference, MeanIntervalMatchesTtest1samp) {
  int compared = 0;
  for (const json& d : m_reference.at("datasets")) {
    SCOPED_TRACE(d.at("name").get<std::string>());
    const auto x = d.at("values").get<std::vector<double>>();
    for (const json& c : d.at("mean_ci")) {
      const double level = c.at("level").get<double>();
      const mean_interval ci = mean_ci_student_t(x, level);
      EXPECT_TRUE(close(ci.lower, c.at("lower").get<double>(), k_t_tolerance));
      EXPECT_TRUE(close(ci.upper, c.at("upper").get<double>(), k_t_tolerance));
      ++compared;
    }
  }
  EXPECT_GE(compared, 15);
}

mann_whitney_method method_from(const std::string& name) {
  if (name == "exact") return mann_whitney_method::exact;
  if (name == "asymptotic") return mann_whitney_method::asymptotic;
  return mann_whitney_method::automatic;
}

TEST_F(StatsReference, MannWhitneyMatchesScipy) {
  for (const json& c : m_reference.at("mann_whitney")) {
    const auto method = c.at("method").get<std::string>();
    SCOPED_TRACE(c.at("name").get<std::string>() + " method=" + method);
    const auto a = c.at("a").get<std::vector<double>>();
    const auto b = c.at("b").get<std::vector<double>>();
    const mann_whitney_result r = mann_whitney_u(a, b, method_from(method));
    EXPECT_EQ(to_string(r.method), c.at("method_used").get<std::string>());
    EXPECT_DOUBLE_EQ(r.u, c.at("u").get<double>());
    EXPECT_TRUE(close(r.p_two_sided, c.at("p").get<double>(), k_p_tolerance));
  }
}

TEST_F(StatsReference, FitsMatchLinregress) {
  for (const json& c : m_reference.at("fits")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const auto x = c.at("x").get<std::vector<double>>();
    const auto y = c.at("y").get<std::vector<double>>();
    const linear_fit f = fit_line(x, y);
    EXPECT_TRUE(close(f.slope, c.at("slope").get<double>(), k_fit_tolerance));
    EXPECT_TRUE(close(f.intercept, c.at("intercept").get<double>(), k_fit_tolerance));
    // scipy's NaN (a flat y) is null in JSON; coolbench documents 0 there.
    const double r = c.at("r").is_null() ? 0.0 : c.at("r").get<double>();
    const double se = c.at("slope_stderr").is_null() ? 0.0 : c.at("slope_stderr").get<double>();
    const double ise =
        c.at("intercept_stderr").is_null() ? 0.0 : c.at("intercept_stderr").get<double>();
    EXPECT_TRUE(close(f.r, r, k_fit_tolerance));
    EXPECT_TRUE(close(f.slope_stderr, se, k_fit_tolerance));
    EXPECT_TRUE(close(f.intercept_stderr, ise, k_fit_tolerance));
    const temperature_sensitivity t = fit_latency_on_temperature(x, y);
    EXPECT_TRUE(close(t.percent_per_c, c.at("percent_per_unit").get<double>(), k_fit_tolerance));
    const clock_sensitivity k = fit_latency_on_clock(x, y);
    EXPECT_TRUE(
        close(k.percent_per_100mhz, c.at("percent_per_100_units").get<double>(), k_fit_tolerance));
    EXPECT_TRUE(close(k.mean_latency, c.at("mean_y").get<double>(), k_value_tolerance));
  }
}

}  // namespace
}  // namespace coolbench::stats
