#include "coolbench/stats/median_ci.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "coolbench/core/error.hpp"
#include "coolbench/stats/summary.hpp"
#include "stats/detail/check.hpp"
#include "stats/detail/log_gamma.hpp"

namespace coolbench::stats {
namespace {

// P(B <= j) for B ~ binomial(n, 1/2), j < n/2. The pmf at j comes from
// lgamma; the terms below it shrink by the ratio i/(n − i + 1) < 1 and are
// summed down until they no longer change the sum.
double binomial_half_cdf(std::size_t n, std::size_t j) {
  const double nd = static_cast<double>(n);
  const double jd = static_cast<double>(j);
  double term = std::exp(detail::log_gamma(nd + 1.0) - detail::log_gamma(jd + 1.0) -
                         detail::log_gamma(nd - jd + 1.0) - nd * std::log(2.0));
  double sum = 0;
  for (std::size_t i = j;; --i) {
    sum += term;
    if (i == 0 || term < sum * 1e-18) break;
    term *= static_cast<double>(i) / static_cast<double>(n - i + 1);
  }
  return sum;
}

// Smallest n with 0.5^n <= (1 − level)/2.
std::size_t min_samples_for(double level) {
  const double tail = (1.0 - level) / 2.0;
  std::size_t n = 1;
  while (std::ldexp(1.0, -static_cast<int>(n)) > tail) ++n;
  return n;
}

// Unbiased index in [0, n) from a 64-bit generator: rejects the outputs below
// 2^64 mod n, then takes the remainder (docs in median_ci.hpp).
std::size_t draw_index(std::mt19937_64& engine, std::uint64_t n) {
  const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n
  for (;;) {
    const std::uint64_t r = engine();
    if (r >= threshold) return static_cast<std::size_t>(r % n);
  }
}

}  // namespace

std::string_view to_string(ci_method method) noexcept {
  switch (method) {
    case ci_method::order_statistic: return "order_statistic";
    case ci_method::bootstrap: return "bootstrap";
  }
  return "unknown";
}

double median_interval::relative_half_width(double center) const noexcept {
  const double half = std::max(center - lower, upper - center);
  if (center == 0.0) return std::numeric_limits<double>::infinity();
  return half / std::abs(center);
}

std::size_t median_ci_min_samples(double level) {
  detail::require_level(level, "stats::median_ci_min_samples");
  return min_samples_for(level);
}

median_interval median_ci_order_statistic(std::span<const double> values, double level) {
  constexpr std::string_view function = "stats::median_ci_order_statistic";
  detail::require_samples(values, function);
  detail::require_level(level, function);
  const std::size_t n = values.size();
  const double tail = (1.0 - level) / 2.0;
  const std::size_t needed = min_samples_for(level);
  if (n < needed) {
    throw invalid_argument(std::string(function) + ": " + std::to_string(n) +
                           " samples are too few for a " + std::to_string(level * 100.0) +
                           "% interval of the median; it needs at least " + std::to_string(needed));
  }
  // j = k − 1: the largest j in [0, n/2) with P(B <= j) <= tail. P(B <= 0)
  // <= tail holds (n >= needed); binary search keeps lo good, hi bad.
  std::size_t lo = 0;
  std::size_t hi = (n + 1) / 2;  // P(B <= hi) >= 0.5 > tail
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (binomial_half_cdf(n, mid) <= tail) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  const std::size_t k = lo + 1;  // rank from 1
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  median_interval ci;
  ci.lower = sorted[k - 1];
  ci.upper = sorted[n - k];
  ci.level = level;
  ci.coverage = 1.0 - 2.0 * binomial_half_cdf(n, lo);
  ci.method = ci_method::order_statistic;
  ci.n = n;
  return ci;
}

median_interval median_ci_bootstrap(std::span<const double> values, double level,
                                    std::size_t resamples, std::uint64_t seed) {
  constexpr std::string_view function = "stats::median_ci_bootstrap";
  detail::require_samples(values, function);
  detail::require_level(level, function);
  if (resamples < 2) {
    throw invalid_argument(std::string(function) + ": " + std::to_string(resamples) +
                           " resamples are too few; use at least 2 (1000 or more for a 95% "
                           "interval)");
  }
  const std::size_t n = values.size();
  std::mt19937_64 engine(seed);
  std::vector<double> resample(n);
  std::vector<double> medians(resamples);
  for (std::size_t b = 0; b < resamples; ++b) {
    for (std::size_t i = 0; i < n; ++i) resample[i] = values[draw_index(engine, n)];
    std::sort(resample.begin(), resample.end());
    medians[b] = quantile_sorted(resample, 0.5);
  }
  std::sort(medians.begin(), medians.end());
  median_interval ci;
  ci.lower = quantile_sorted(medians, (1.0 - level) / 2.0);
  ci.upper = quantile_sorted(medians, (1.0 + level) / 2.0);
  ci.level = level;
  ci.coverage = level;
  ci.method = ci_method::bootstrap;
  ci.n = n;
  return ci;
}

}  // namespace coolbench::stats
