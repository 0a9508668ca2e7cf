#include "coolbench/stats/mann_whitney.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "coolbench/core/error.hpp"

namespace coolbench::stats {
namespace {

TEST(MannWhitney, SeparatedSmallSamplesExact) {
  // a entirely below b: U_a = 0; the only arrangement as extreme on either
  // side is the mirror, so p = 2/C(6, 3) = 0.1.
  const std::vector<double> a{1, 2, 3};
  const std::vector<double> b{6, 5, 4};
  const mann_whitney_result r = mann_whitney_u(a, b);
  EXPECT_EQ(r.method, mann_whitney_method::exact);
  EXPECT_DOUBLE_EQ(r.u, 0.0);
  EXPECT_DOUBLE_EQ(r.p_two_sided, 0.1);
  EXPECT_DOUBLE_EQ(r.common_language, 0.0);
  EXPECT_DOUBLE_EQ(r.rank_biserial, -1.0);
  EXPECT_EQ(r.n_a, 3U);
  EXPECT_EQ(r.n_b, 3U);
  const mann_whitney_result swapped = mann_whitney_u(b, a);
  EXPECT_DOUBLE_EQ(swapped.u, 9.0);
  EXPECT_DOUBLE_EQ(swapped.p_two_sided, 0.1);
  EXPECT_DOUBLE_EQ(swapped.rank_biserial, 1.0);
}

TEST(MannWhitney, ExactFullDistributionSmall) {
  // n_a = 2, n_b = 2: U takes 0, 1, 2, 2, 3, 4 over the 6 arrangements.
  const mann_whitney_result r =
      mann_whitney_u(std::vector<double>{1, 4}, std::vector<double>{2, 3});
  EXPECT_DOUBLE_EQ(r.u, 2.0);  // pairs a > b: (4, 2), (4, 3)
  // max(U_a, U_b) = 2 = n_a·n_b/2: p = 2·P(U >= 2) = 2·4/6 > 1, capped.
  // Below, U_a = 0: p = 2·P(U >= 4) = 2/6.
  EXPECT_DOUBLE_EQ(r.p_two_sided, 1.0);
  const mann_whitney_result s = mann_whitney_u(std::vector<double>{1, 2}, std::vector<double>{4, 3},
                                               mann_whitney_method::exact);
  EXPECT_DOUBLE_EQ(s.u, 0.0);
  EXPECT_NEAR(s.p_two_sided, 2.0 / 6.0, 1e-15);
}

TEST(MannWhitney, TiesByHandAsymptotic) {
  // Pooled: 1(a) 2(a) 2(a) 2(b) 3(b); ranks 1, 3, 3, 3, 5. R_a = 7, U_a = 1.
  // Ties: one group of 3, Σ(t³ − t) = 24; σ² = 6/12·(6 − 24/20) = 2.4.
  const std::vector<double> a{1, 2, 2};
  const std::vector<double> b{2, 3};
  const mann_whitney_result r = mann_whitney_u(a, b);
  EXPECT_EQ(r.method, mann_whitney_method::asymptotic);  // ties
  EXPECT_DOUBLE_EQ(r.u, 1.0);
  const double z = (5.0 - 3.0 - 0.5) / std::sqrt(2.4);
  EXPECT_NEAR(r.p_two_sided, std::erfc(z / std::sqrt(2.0)), 1e-15);
  EXPECT_DOUBLE_EQ(r.common_language, 1.0 / 6.0);
  EXPECT_THROW((void)mann_whitney_u(a, b, mann_whitney_method::exact), invalid_argument);
}

TEST(MannWhitney, AllEqualGivesOne) {
  const std::vector<double> a(5, 2.0);
  const std::vector<double> b(7, 2.0);
  const mann_whitney_result r = mann_whitney_u(a, b);
  EXPECT_DOUBLE_EQ(r.p_two_sided, 1.0);
  EXPECT_DOUBLE_EQ(r.rank_biserial, 0.0);
}

TEST(MannWhitney, AutomaticPicksAsymptoticForLargeSamples) {
  std::vector<double> a(20);
  std::vector<double> b(30);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<double>(2 * i);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<double>(2 * i + 1);
  EXPECT_EQ(mann_whitney_u(a, b).method, mann_whitney_method::asymptotic);
  EXPECT_EQ(mann_whitney_u(a, b, mann_whitney_method::exact).method, mann_whitney_method::exact);
}

TEST(MannWhitney, RejectsBadInput) {
  const std::vector<double> empty;
  const std::vector<double> x{1, 2};
  try {
    (void)mann_whitney_u(x, empty);
    FAIL() << "no exception";
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("b is empty"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)mann_whitney_u(std::vector<double>{std::nan("")}, x), invalid_argument);
  std::vector<double> big_distinct(1001);
  for (std::size_t i = 0; i < big_distinct.size(); ++i) big_distinct[i] = static_cast<double>(i);
  std::vector<double> other(1001);
  for (std::size_t i = 0; i < other.size(); ++i) other[i] = static_cast<double>(i) + 0.5;
  EXPECT_THROW((void)mann_whitney_u(big_distinct, other, mann_whitney_method::exact),
               invalid_argument);
}

TEST(MannWhitney, MethodNames) {
  EXPECT_EQ(to_string(mann_whitney_method::automatic), "automatic");
  EXPECT_EQ(to_string(mann_whitney_method::asymptotic), "asymptotic");
  EXPECT_EQ(to_string(mann_whitney_method::exact), "exact");
}

}  // namespace
}  // namespace coolbench::stats
