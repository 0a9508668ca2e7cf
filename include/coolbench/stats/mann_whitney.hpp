/// @file
/// The Mann–Whitney U (Wilcoxon rank-sum) test: do two sets of samples come
/// from the same distribution, or does one tend to be larger?
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace coolbench::stats {

enum class mann_whitney_method {
  /// exact when min(n_a, n_b) <= 8, there are no ties and n_a·n_b <= 10^6;
  /// asymptotic otherwise (scipy's method="auto", less its exact case for
  /// n_a·n_b > 10^6, where the two agree closely anyway).
  automatic,
  /// Normal approximation, tie correction, continuity correction.
  asymptotic,
  /// The exact null distribution of U; needs no ties and n_a·n_b <= 10^6.
  exact,
};

/// "automatic", "asymptotic" or "exact".
[[nodiscard]] std::string_view to_string(mann_whitney_method method) noexcept;

struct mann_whitney_result {
  /// U of the first sample: R_a − n_a(n_a + 1)/2, R_a the sum of a's ranks in
  /// the pooled data (ties get their average rank). Equals the number of
  /// pairs (a_i, b_j) with a_i > b_j plus half the pairs with a_i = b_j.
  double u = 0;
  /// Two-sided p-value.
  double p_two_sided = 1;
  /// Common-language effect size u / (n_a·n_b): P(a > b) + ½·P(a = b) for a
  /// value drawn from each sample. 0.5 means no tendency.
  double common_language = 0.5;
  /// Rank-biserial correlation 2·common_language − 1 in [−1, 1]; positive when
  /// a tends to be larger than b.
  double rank_biserial = 0;
  /// The method that computed p (never automatic).
  mann_whitney_method method = mann_whitney_method::asymptotic;
  std::size_t n_a = 0;
  std::size_t n_b = 0;
};

/// Two-sided Mann–Whitney U test of a against b; matches
/// scipy.stats.mannwhitneyu(a, b, alternative="two-sided", use_continuity=True,
/// method=...) in u and p.
///
/// asymptotic: U = max(U_a, U_b), σ² = n_a·n_b/12·((n + 1) − Σ(t³ − t)/(n(n − 1)))
/// over the tie groups t, z = (U − n_a·n_b/2 − ½)/σ, p = 2·(1 − Φ(z)) capped at
/// 1. When every value is equal (σ = 0) p is 1, as in scipy.
/// exact: p = 2·P(U >= max(U_a, U_b)) under the null, capped at 1.
///
/// Throws invalid_argument on an empty sample, NaN/infinite values, and for
/// method exact on ties or sizes past the limit above.
[[nodiscard]] mann_whitney_result mann_whitney_u(
    std::span<const double> a, std::span<const double> b,
    mann_whitney_method method = mann_whitney_method::automatic);

}  // namespace coolbench::stats
