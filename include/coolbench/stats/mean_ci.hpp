/// @file
/// The Student-t confidence interval of a mean, for figures that are a mean of
/// a few group figures (the per-context medians of a run spread over several
/// CUDA contexts, docs/measure.md "Contexts").
#pragma once

#include <cstddef>
#include <span>

namespace coolbench::stats {

/// The p-quantile of Student's t distribution with `df` degrees of freedom
/// (scipy.stats.t.ppf(p, df)). The CDF comes from the regularized incomplete
/// beta function (a continued fraction), the quantile from bisection on it;
/// agrees with scipy to about 1e-12 relative. Throws invalid_argument unless
/// 0 < p < 1 and df > 0.
[[nodiscard]] double student_t_quantile(double p, double df);

/// Student's t CDF at t with `df` degrees of freedom (scipy.stats.t.cdf).
/// Throws invalid_argument unless df > 0 and t is not NaN.
[[nodiscard]] double student_t_cdf(double t, double df);

/// A confidence interval [lower, upper] of a mean.
struct mean_interval {
  double mean = 0;
  double lower = 0;
  double upper = 0;
  double level = 0;
  std::size_t n = 0;
  double standard_error = 0;  ///< s / sqrt(n), s with n − 1 in the denominator

  /// (upper − lower) / 2 / |mean|; infinite when the mean is 0.
  [[nodiscard]] double relative_half_width() const noexcept;
};

/// mean ± t((1 + level)/2, n − 1) · s/√n: exact for normal data, close for
/// others once n is ten or so (the central limit theorem). Same bounds as
/// scipy.stats.ttest_1samp(x, 0).confidence_interval(level). Throws
/// invalid_argument when level is not in (0, 1), with fewer than 2 values, or
/// on NaN/infinite input.
[[nodiscard]] mean_interval mean_ci_student_t(std::span<const double> values, double level = 0.95);

}  // namespace coolbench::stats
