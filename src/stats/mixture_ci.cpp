#include "coolbench/stats/mixture_ci.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "coolbench/core/error.hpp"
#include "coolbench/stats/mean_ci.hpp"
#include "stats/detail/check.hpp"

namespace coolbench::stats {
namespace {

/// P(B ≤ k) for B ~ binomial(n, p): the pmf from (1 − p)^n up, term by term on the log scale
/// (n is a count of contexts: no underflow, one log and one exp a term).
double binomial_cdf(std::size_t k, std::size_t n, double p) {
  if (p <= 0) return 1;
  if (p >= 1) return k >= n ? 1 : 0;
  const double nd = static_cast<double>(n);
  const double log_odds = std::log(p) - std::log1p(-p);
  double log_pmf = nd * std::log1p(-p);
  double sum = std::exp(log_pmf);
  for (std::size_t i = 0; i < k; ++i) {
    const double id = static_cast<double>(i);
    log_pmf += std::log((nd - id) / (id + 1)) + log_odds;
    sum += std::exp(log_pmf);
  }
  return std::min(1.0, sum);
}

/// The one-sided 90 % upper confidence bound of a standard deviation from its sample value:
/// s·√(df/χ²(0.1, df)), the chi-square quantile by Wilson and Hilferty's cube-root approximation
/// (within 1 % of the exact quantile from df = 4 on). A stopping rule that stops as soon as the
/// interval is narrow enough stops on the samples whose SD came out low; the bound takes that
/// back.
double sd_upper_bound(double sd, double df) {
  constexpr double z = -1.2815515655446004;  // the standard normal's 0.1-quantile
  const double a = 2 / (9 * df);
  const double chi2 = df * std::pow(std::max(1 - a + z * std::sqrt(a), 0.05), 3);
  return sd * std::sqrt(df / chi2);
}

}  // namespace

double share_upper_bound(std::size_t k, std::size_t n, double confidence) {
  detail::require_level(confidence, "share_upper_bound");
  if (n == 0 || k > n) {
    throw invalid_argument("share_upper_bound: needs 0 <= k <= n and n >= 1, got k = " +
                           std::to_string(k) + ", n = " + std::to_string(n));
  }
  if (k == n) return 1;
  const double alpha = 1 - confidence;
  if (k == 0) return -std::expm1(std::log(alpha) / static_cast<double>(n));
  // P(B <= k) falls as p grows: bisection to the last bit.
  double low = 0;
  double high = 1;
  for (int i = 0; i < 60 && high - low > 1e-14; ++i) {
    const double mid = 0.5 * (low + high);
    (binomial_cdf(k, n, mid) > alpha ? low : high) = mid;
  }
  return 0.5 * (low + high);
}

double mixture_interval::relative_half_width() const noexcept {
  if (mean == 0) return std::numeric_limits<double>::infinity();
  return half_width() / std::abs(mean);
}

mixture_interval mixture_mean_ci(std::span<const double> values, double level, double spacing) {
  detail::require_level(level, "mixture_mean_ci");
  detail::require_samples(values, "mixture_mean_ci");
  if (!(spacing >= 0) || std::isinf(spacing)) {
    throw invalid_argument("mixture_mean_ci: spacing must be a finite fraction >= 0, got " +
                           std::to_string(spacing));
  }
  const mean_interval t = mean_ci_student_t(values, level);  // checks n >= 2
  mixture_interval r;
  r.mean = t.mean;
  r.level = level;
  r.n = t.n;
  const double root_n = std::sqrt(static_cast<double>(r.n));
  r.sd = t.standard_error * root_n;
  // The two levels seen: the values above and below the midrange, and how far apart their
  // means are (for values with no levels, about 1.6 SD, and the floor stays below the SD).
  const auto [low, high] = std::minmax_element(values.begin(), values.end());
  const double mid = 0.5 * (*low + *high);
  double sum_above = 0;
  double sum_below = 0;
  std::size_t above = 0;
  for (const double v : values) {
    if (v > mid) {
      sum_above += v;
      ++above;
    } else {
      sum_below += v;
    }
  }
  r.minority = std::min(above, r.n - above);
  if (above > 0) {
    const double gap =
        sum_above / static_cast<double>(above) - sum_below / static_cast<double>(r.n - above);
    const double p_seen = std::min(0.5, share_upper_bound(r.minority, r.n, level));
    r.seen_floor = gap * std::sqrt(p_seen * (1 - p_seen));
  }
  const double p_unseen = share_upper_bound(0, r.n, level);
  r.unseen_floor = spacing * std::abs(r.mean) * std::sqrt(p_unseen * (1 - p_unseen));
  r.sd_upper = sd_upper_bound(r.sd, static_cast<double>(r.n) - 1);
  r.sd_used = std::max({r.sd_upper, r.seen_floor, r.unseen_floor});
  const double half =
      student_t_quantile((1 + level) / 2, static_cast<double>(r.n) - 1) * r.sd_used / root_n;
  r.lower = r.mean - half;
  r.upper = r.mean + half;
  return r;
}

}  // namespace coolbench::stats
