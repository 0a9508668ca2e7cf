/// @file
/// Ordinary least-squares fit of y on x, and the two fits the reports show:
/// latency on GPU temperature and latency on SM clock.
#pragma once

#include <cstddef>
#include <span>

namespace coolbench::stats {

/// y ≈ intercept + slope·x by least squares; the fields scipy.stats.linregress
/// returns (except its p-value).
struct linear_fit {
  double slope = 0;
  double intercept = 0;
  /// Pearson correlation of x and y (0 when every y is equal).
  double r = 0;
  /// r², the fraction of y's variance the line explains.
  double r2 = 0;
  /// Standard error of the slope, sqrt((1 − r²)·S_yy / S_xx / (n − 2)); 0 for n = 2.
  double slope_stderr = 0;
  /// Standard error of the intercept, slope_stderr·sqrt(S_xx/n + mean(x)²).
  double intercept_stderr = 0;
  std::size_t n = 0;
};

/// Fits y on x. Throws invalid_argument when the lengths differ, n < 2, a value
/// is NaN or infinite, or every x is equal (no slope can be fitted).
[[nodiscard]] linear_fit fit_line(std::span<const double> x, std::span<const double> y);

/// Latency against GPU temperature.
struct temperature_sensitivity {
  linear_fit fit;
  /// fit.slope: latency change per °C, in the latency's unit (ms per °C when
  /// the latencies are in ms).
  double latency_per_c = 0;
  /// Mean of the latencies (the fit passes through it at the mean temperature).
  double mean_latency = 0;
  /// 100·slope/mean_latency: % latency change per °C.
  double percent_per_c = 0;
};

/// Fits latency on temperature [°C]. Errors as fit_line().
[[nodiscard]] temperature_sensitivity fit_latency_on_temperature(std::span<const double> temp_c,
                                                                 std::span<const double> latency);

/// Latency against SM clock.
struct clock_sensitivity {
  linear_fit fit;
  /// fit.slope: latency change per MHz, in the latency's unit.
  double latency_per_mhz = 0;
  /// Mean of the latencies.
  double mean_latency = 0;
  /// 100·(100·slope)/mean_latency: % latency change for a clock 100 MHz higher,
  /// relative to the mean latency of the samples. Negative when a faster clock
  /// gives a shorter latency.
  double percent_per_100mhz = 0;
};

/// Fits latency on SM clock [MHz]. Errors as fit_line().
[[nodiscard]] clock_sensitivity fit_latency_on_clock(std::span<const double> clock_sm_mhz,
                                                     std::span<const double> latency);

}  // namespace coolbench::stats
