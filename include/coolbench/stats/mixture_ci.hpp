/// @file
/// The interval of a mean of group figures that fall on a few discrete levels
/// (the per-context medians of a run spread over CUDA contexts: the context
/// lottery, docs/measure.md "Contexts"). A Student-t interval over a handful of
/// such draws is narrow whenever the draws happen to agree; this one keeps a
/// floor under the standard deviation for the levels the draws may have missed
/// or under-sampled. docs/stats.md, "Mean over a few levels", states the
/// assumptions.
#pragma once

#include <cstddef>
#include <span>

namespace coolbench::stats {

/// The one-sided Clopper–Pearson upper bound of a binomial share: the p at
/// which P(B ≤ k) = 1 − confidence for B ~ binomial(n, p)
/// (scipy.stats.beta.ppf(confidence, k + 1, n − k)); 1 when k = n. For k = 0 it
/// is 1 − (1 − confidence)^(1/n). Throws invalid_argument unless n ≥ 1,
/// 0 ≤ k ≤ n and 0 < confidence < 1.
[[nodiscard]] double share_upper_bound(std::size_t k, std::size_t n, double confidence);

/// A mean over a few levels and its interval, with the parts the width came from.
struct mixture_interval {
  double mean = 0;
  double lower = 0;
  double upper = 0;
  double level = 0;
  std::size_t n = 0;
  double sd = 0;             ///< sample standard deviation of the values (n − 1)
  double sd_upper = 0;       ///< one-sided 90 % upper confidence bound of the SD (chi-square)
  double sd_used = 0;        ///< max(sd_upper, seen_floor, unseen_floor): what the width uses
  double seen_floor = 0;     ///< the SD the two sides seen could have (see below)
  double unseen_floor = 0;   ///< the SD a level not seen yet could add
  std::size_t minority = 0;  ///< values on the less-visited side of the midrange

  [[nodiscard]] double half_width() const noexcept { return (upper - lower) / 2; }
  /// half_width / |mean|; infinite when the mean is 0.
  [[nodiscard]] double relative_half_width() const noexcept;
  /// Whether a floor, not the sample SD, set the width.
  [[nodiscard]] bool floor_binds() const noexcept { return sd_used > sd_upper; }
};

/// mean ± t((1 + level)/2, n − 1) · sd_used/√n, with sd_used the largest of
/// - sd_upper = sd·√((n − 1)/χ²(0.1, n − 1)), the one-sided 90 % upper bound of
///   the SD (a run that stops once the interval is narrow stops when sd came
///   out low by chance; this takes that back);
/// - seen_floor = g·√(p(1 − p)): the values split at the midrange of their
///   range, g the gap between the two sides' means, k the count on the
///   smaller side, p = min(½, share_upper_bound(k, n, level)): the SD of two
///   levels g apart when the smaller one's share may be as large as p;
/// - unseen_floor = spacing·|mean|·√(p₀(1 − p₀)), p₀ = share_upper_bound(0, n, level):
///   a level `spacing` (a fraction of the mean) away whose share is too small to
///   have shown in n draws, at `level`.
/// With spacing 0 and values without levels it is the Student-t interval with
/// sd_upper for sd. Throws invalid_argument when level is not in (0, 1), spacing is
/// negative or not finite, with fewer than 2 values, or on NaN/infinite input.
[[nodiscard]] mixture_interval mixture_mean_ci(std::span<const double> values, double level,
                                               double spacing);

}  // namespace coolbench::stats
