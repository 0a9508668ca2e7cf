/// @file
/// The confidence interval of a ratio of two independent figures (B / A, two
/// runs' latencies), from each figure's own confidence interval; and of the
/// mean of ratios measured in matched pairs.
#pragma once

#include <span>

namespace coolbench::stats {

/// A positive figure and its confidence interval, lower <= value <= upper.
struct estimate {
  double value = 0;
  double lower = 0;
  double upper = 0;
};

/// The ratio b / a and its confidence interval.
struct ratio_interval {
  double ratio = 0;
  double lower = 0;
  double upper = 0;
};

/// MOVER on the log scale (the method of variance estimates recovery: Zou and
/// Donner, Stat. Methods Med. Res. 2008; Newcombe 2012), for independent a and
/// b whose intervals are at the same level: with θ = ln value, l = ln lower,
/// u = ln upper and d = θ_b − θ_a,
///   L = d − √((θ_b − l_b)² + (u_a − θ_a)²),
///   U = d + √((u_b − θ_b)² + (θ_a − l_a)²),
/// and the interval of b / a is [exp L, exp U]. It needs only each figure's
/// interval, so it combines an order-statistic interval of a median
/// (asymmetric, distribution-free) and a Student-t interval of a mean of
/// per-context medians alike; for two symmetric normal intervals on the log
/// scale it is the usual √(se_a² + se_b²) interval of the log ratio.
/// Throws invalid_argument unless 0 < lower <= value <= upper, all finite, for
/// both.
[[nodiscard]] ratio_interval ratio_ci_mover(const estimate& a, const estimate& b);

/// The geometric mean of ratios measured in matched pairs (B/A of each couple
/// of an AB and a BA pair) and its interval on the log scale: the Student-t
/// interval of the logs' mean with the SD replaced by its one-sided 90 % upper
/// confidence bound, sd·√((n − 1)/χ²(0.1, n − 1)) (mixture_mean_ci with
/// spacing 0; its floor for two groups seen binds only when the couples split
/// into two groups far apart). A run that stops as soon as its interval is narrow stops when a
/// few couples happened to agree; with the plain t interval an A/A run then
/// calls a difference about 5 % of the time, at a tenth of a percent.
/// Throws invalid_argument with fewer than 2 ratios, a ratio that is not
/// positive and finite, or a level outside (0, 1).
[[nodiscard]] ratio_interval paired_ratio_ci(std::span<const double> ratios, double level);

}  // namespace coolbench::stats
