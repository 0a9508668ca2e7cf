#include "coolbench/stats/mean_ci.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "coolbench/core/error.hpp"
#include "stats/detail/check.hpp"
#include "stats/detail/log_gamma.hpp"

namespace coolbench::stats {
namespace {

// The continued fraction of the regularized incomplete beta function I_x(a, b)
// (its even and odd steps, evaluated with the modified Lentz method); it
// converges fast for x < (a + 1)/(a + b + 2), the caller swaps otherwise.
double beta_fraction(double a, double b, double x) {
  constexpr double tiny = 1e-300;
  constexpr double epsilon = 1e-16;
  const auto guard = [](double v) { return std::abs(v) < tiny ? tiny : v; };
  double c = 1.0;
  double d = 1.0 / guard(1.0 - (a + b) * x / (a + 1.0));
  double h = d;
  for (int m = 1; m <= 10000; ++m) {
    const double md = m;
    const double even = md * (b - md) * x / ((a + 2 * md - 1) * (a + 2 * md));
    d = 1.0 / guard(1.0 + even * d);
    c = guard(1.0 + even / c);
    h *= d * c;
    const double odd = -(a + md) * (a + b + md) * x / ((a + 2 * md) * (a + 2 * md + 1));
    d = 1.0 / guard(1.0 + odd * d);
    c = guard(1.0 + odd / c);
    const double step = d * c;
    h *= step;
    if (std::abs(step - 1.0) < epsilon) break;
  }
  return h;
}

// I_x(a, b) for 0 <= x <= 1.
double regularized_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double log_front = detail::log_gamma(a + b) - detail::log_gamma(a) - detail::log_gamma(b) +
                           a * std::log(x) + b * std::log1p(-x);
  if (x < (a + 1) / (a + b + 2)) return std::exp(log_front) * beta_fraction(a, b, x) / a;
  return 1.0 - std::exp(log_front) * beta_fraction(b, a, 1.0 - x) / b;
}

void require_df(double df, const char* function) {
  if (!(df > 0) || std::isinf(df)) {
    throw invalid_argument(std::string(function) +
                           ": degrees of freedom must be positive and "
                           "finite, got " +
                           std::to_string(df));
  }
}

}  // namespace

double student_t_cdf(double t, double df) {
  require_df(df, "student_t_cdf");
  if (std::isnan(t)) throw invalid_argument("student_t_cdf: t is NaN");
  if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
  // P(|T| > |t|) = I_{df/(df + t²)}(df/2, 1/2).
  const double tail = 0.5 * regularized_beta(df / 2, 0.5, df / (df + t * t));
  return t > 0 ? 1.0 - tail : tail;
}

double student_t_quantile(double p, double df) {
  require_df(df, "student_t_quantile");
  if (!(p > 0 && p < 1)) {
    throw invalid_argument("student_t_quantile: p must be in (0, 1), got " + std::to_string(p));
  }
  if (p == 0.5) return 0;
  // Symmetric: find the upper quantile q of max(p, 1 − p) by bisection on the
  // upper tail (computed directly, so no precision is lost near 1).
  const double upper_tail = p > 0.5 ? 1.0 - p : p;
  const auto tail = [df](double t) {
    return 0.5 * regularized_beta(df / 2, 0.5, df / (df + t * t));
  };
  double low = 0;
  double high = 1;
  while (tail(high) > upper_tail) {
    low = high;
    high *= 2;
    if (high > 1e300) break;
  }
  for (int i = 0; i < 200 && high - low > std::abs(high) * 1e-16; ++i) {
    const double mid = 0.5 * (low + high);
    (tail(mid) > upper_tail ? low : high) = mid;
  }
  const double q = 0.5 * (low + high);
  return p > 0.5 ? q : -q;
}

double mean_interval::relative_half_width() const noexcept {
  if (mean == 0) return std::numeric_limits<double>::infinity();
  return (upper - lower) / 2 / std::abs(mean);
}

mean_interval mean_ci_student_t(std::span<const double> values, double level) {
  detail::require_level(level, "mean_ci_student_t");
  detail::require_samples(values, "mean_ci_student_t");
  if (values.size() < 2) {
    throw invalid_argument("mean_ci_student_t: needs at least 2 values, got " +
                           std::to_string(values.size()));
  }
  const double n = static_cast<double>(values.size());
  double mean = 0;
  for (const double v : values) mean += v;
  mean /= n;
  double squares = 0;
  for (const double v : values) squares += (v - mean) * (v - mean);
  mean_interval r;
  r.mean = mean;
  r.level = level;
  r.n = values.size();
  r.standard_error = std::sqrt(squares / (n - 1) / n);
  const double half = student_t_quantile((1 + level) / 2, n - 1) * r.standard_error;
  r.lower = mean - half;
  r.upper = mean + half;
  return r;
}

}  // namespace coolbench::stats
