#include "coolbench/stats/linear_fit.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "coolbench/core/error.hpp"
#include "stats/detail/check.hpp"

namespace coolbench::stats {
namespace {

linear_fit fit(std::span<const double> x, std::span<const double> y, std::string_view function,
               std::string_view x_name, std::string_view y_name) {
  if (x.size() != y.size()) {
    throw invalid_argument(std::string(function) + ": " + std::string(x_name) + " has " +
                           std::to_string(x.size()) + " values but " + std::string(y_name) +
                           " has " + std::to_string(y.size()) + "; pass one of each per sample");
  }
  if (x.size() < 2) {
    throw invalid_argument(std::string(function) + ": a line needs at least 2 points, got " +
                           std::to_string(x.size()));
  }
  detail::require_samples(x, function, x_name);
  detail::require_samples(y, function, y_name);
  const auto n = static_cast<double>(x.size());
  double x_mean = 0;
  double y_mean = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    x_mean += x[i];
    y_mean += y[i];
  }
  x_mean /= n;
  y_mean /= n;
  // Centred sums of squares and products (two passes, as numpy.cov).
  double sxx = 0;
  double syy = 0;
  double sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double dx = x[i] - x_mean;
    const double dy = y[i] - y_mean;
    sxx += dx * dx;
    syy += dy * dy;
    sxy += dx * dy;
  }
  if (!(sxx > 0.0)) {
    throw invalid_argument(std::string(function) + ": every " + std::string(x_name) +
                           " value is equal (" + std::to_string(x[0]) +
                           "), so no slope can be fitted; vary it across the samples");
  }
  linear_fit result;
  result.n = x.size();
  result.slope = sxy / sxx;
  result.intercept = y_mean - result.slope * x_mean;
  result.r = syy > 0.0 ? std::clamp(sxy / std::sqrt(sxx * syy), -1.0, 1.0) : 0.0;
  result.r2 = result.r * result.r;
  if (x.size() > 2) {
    result.slope_stderr =
        std::sqrt(std::max(0.0, 1.0 - result.r2) * syy / sxx / static_cast<double>(x.size() - 2));
  }
  result.intercept_stderr = result.slope_stderr * std::sqrt(sxx / n + x_mean * x_mean);
  return result;
}

}  // namespace

linear_fit fit_line(std::span<const double> x, std::span<const double> y) {
  return fit(x, y, "stats::fit_line", "x", "y");
}

temperature_sensitivity fit_latency_on_temperature(std::span<const double> temp_c,
                                                   std::span<const double> latency) {
  temperature_sensitivity s;
  s.fit = fit(temp_c, latency, "stats::fit_latency_on_temperature", "temp_c", "latency");
  s.latency_per_c = s.fit.slope;
  double sum = 0;
  for (const double v : latency) sum += v;
  s.mean_latency = sum / static_cast<double>(latency.size());
  s.percent_per_c = 100.0 * s.fit.slope / s.mean_latency;
  return s;
}

clock_sensitivity fit_latency_on_clock(std::span<const double> clock_sm_mhz,
                                       std::span<const double> latency) {
  clock_sensitivity s;
  s.fit = fit(clock_sm_mhz, latency, "stats::fit_latency_on_clock", "clock_sm_mhz", "latency");
  s.latency_per_mhz = s.fit.slope;
  double sum = 0;
  for (const double v : latency) sum += v;
  s.mean_latency = sum / static_cast<double>(latency.size());
  s.percent_per_100mhz = 100.0 * (100.0 * s.fit.slope) / s.mean_latency;
  return s;
}

}  // namespace coolbench::stats
