#include "coolbench/stats/summary.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "coolbench/core/error.hpp"
#include "stats/detail/check.hpp"

namespace coolbench::stats {
namespace {

void require_q(double q, std::string_view function) {
  if (!(q >= 0.0 && q <= 1.0)) {
    throw invalid_argument(std::string(function) + ": q = " + std::to_string(q) +
                           " is not in [0, 1] (0.5 is the median, 0.99 the 99th percentile)");
  }
}

// Type 7 on sorted, checked data. The interpolation is written as numpy's
// _lerp writes it (from the upper neighbour when the fraction is >= 0.5), so
// the results agree with numpy.quantile to the last bit in most cases.
double quantile_of_sorted(std::span<const double> x, double q) {
  const double h = static_cast<double>(x.size() - 1) * q;
  const double below = std::floor(h);
  const auto i = static_cast<std::size_t>(below);
  if (i + 1 >= x.size()) return x.back();
  const double t = h - below;
  const double a = x[i];
  const double b = x[i + 1];
  const double diff = b - a;
  return t >= 0.5 ? b - diff * (1.0 - t) : a + diff * t;
}

std::vector<double> sorted_copy(std::span<const double> values) {
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

}  // namespace

double quantile(std::span<const double> values, double q) {
  detail::require_samples(values, "stats::quantile");
  require_q(q, "stats::quantile");
  const std::vector<double> sorted = sorted_copy(values);
  return quantile_of_sorted(sorted, q);
}

double quantile_sorted(std::span<const double> sorted, double q) {
  detail::require_samples(sorted, "stats::quantile_sorted");
  require_q(q, "stats::quantile_sorted");
  const auto unsorted = std::is_sorted_until(sorted.begin(), sorted.end());
  if (unsorted != sorted.end()) {
    throw invalid_argument("stats::quantile_sorted: values[" +
                           std::to_string(unsorted - sorted.begin()) +
                           "] is smaller than the value before it; sort the data or call "
                           "stats::quantile");
  }
  return quantile_of_sorted(sorted, q);
}

double median(std::span<const double> values) {
  detail::require_samples(values, "stats::median");
  return quantile_of_sorted(sorted_copy(values), 0.5);
}

double mean(std::span<const double> values) {
  detail::require_samples(values, "stats::mean");
  double sum = 0;
  for (const double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

double stddev(std::span<const double> values) {
  const double m = mean(values);
  if (values.size() < 2) return 0.0;
  double squares = 0;
  for (const double v : values) squares += (v - m) * (v - m);
  return std::sqrt(squares / static_cast<double>(values.size() - 1));
}

double smallest_step(std::span<const double> values) {
  detail::require_samples(values, "stats::smallest_step");
  const std::vector<double> sorted = sorted_copy(values);
  double step = 0;
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    const double gap = sorted[i] - sorted[i - 1];
    if (gap > 0 && (step == 0 || gap < step)) step = gap;
  }
  return step;
}

summary summarize(std::span<const double> values) {
  detail::require_samples(values, "stats::summarize");
  const std::vector<double> sorted = sorted_copy(values);
  summary s;
  s.count = sorted.size();
  s.min = sorted.front();
  s.max = sorted.back();
  s.mean = mean(values);
  s.stddev = stddev(values);
  s.cv = s.stddev / s.mean;
  s.median = quantile_of_sorted(sorted, 0.5);
  s.p10 = quantile_of_sorted(sorted, 0.10);
  s.p90 = quantile_of_sorted(sorted, 0.90);
  s.p99 = quantile_of_sorted(sorted, 0.99);
  return s;
}

}  // namespace coolbench::stats
