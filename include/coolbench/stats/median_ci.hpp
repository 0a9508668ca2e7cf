/// @file
/// Confidence intervals of the median, for the stopping rule ("is the interval
/// within ±rel of the median?") and for reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace coolbench::stats {

enum class ci_method {
  /// Distribution-free, from order statistics and binomial(n, ½) quantiles.
  order_statistic,
  /// Percentile bootstrap of the sample median.
  bootstrap,
};

/// "order_statistic" or "bootstrap".
[[nodiscard]] std::string_view to_string(ci_method method) noexcept;

/// A confidence interval [lower, upper] of the median.
struct median_interval {
  double lower = 0;
  double upper = 0;
  /// The confidence level asked for, in (0, 1).
  double level = 0;
  /// order_statistic: the exact coverage of the interval for any continuous
  /// distribution, 1 − 2·P(B ≤ k − 1) >= level. bootstrap: equal to level.
  double coverage = 0;
  ci_method method = ci_method::order_statistic;
  /// Number of samples.
  std::size_t n = 0;

  /// max(center − lower, upper − center) / |center|: the interval's half-width
  /// relative to `center` (usually the median), the figure a stopping rule
  /// compares with its relative tolerance. Infinite when center is 0.
  [[nodiscard]] double relative_half_width(double center) const noexcept;
};

/// The classical distribution-free interval of the median (e.g. Conover,
/// Practical Nonparametric Statistics, §3.2). With x sorted, ranks from 1, and
/// B ~ binomial(n, ½): k is the largest integer >= 1 with
/// P(B ≤ k − 1) ≤ (1 − level)/2, and the interval is [x_(k), x_(n−k+1)].
/// Its coverage is 1 − 2·P(B ≤ k − 1) >= level for every continuous
/// distribution. Same bounds as scipy.stats.quantile_test(x, p=0.5)
/// .confidence_interval(level).
///
/// Throws invalid_argument when level is not in (0, 1), on empty/NaN input, and
/// when n is too small for the level (0.5^n > (1 − level)/2; the message says
/// the n needed: 6 for 95%, 8 for 99%).
[[nodiscard]] median_interval median_ci_order_statistic(std::span<const double> values,
                                                        double level = 0.95);

/// Smallest n for which median_ci_order_statistic() accepts `level`.
[[nodiscard]] std::size_t median_ci_min_samples(double level);

/// Percentile bootstrap interval of the median, deterministic for a seed.
///
/// Algorithm: a std::mt19937_64 seeded with `seed` (its constructor from one
/// integer, fixed by the C++ standard) draws, for each of `resamples`
/// resamples, n indices in turn; an index is r mod n for the first 64-bit
/// output r >= (2^64 mod n) (rejection, so unbiased, and independent of the
/// standard library's distributions). Each resample's median is its type-7
/// median; the interval is the type-7 quantiles (1 − level)/2 and
/// (1 + level)/2 of the resample medians (as scipy.stats.bootstrap with
/// method="percentile" computes them from its resamples).
///
/// Throws invalid_argument when level is not in (0, 1), resamples < 2, or on
/// empty/NaN input.
[[nodiscard]] median_interval median_ci_bootstrap(std::span<const double> values,
                                                  double level = 0.95, std::size_t resamples = 2000,
                                                  std::uint64_t seed = 0);

}  // namespace coolbench::stats
