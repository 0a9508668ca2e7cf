/// @file
/// Quantiles and the summary of a set of samples.
///
/// Every function here throws coolbench::invalid_argument when the input is
/// empty or holds a NaN or an infinity (the message names the first bad index).
#pragma once

#include <cstddef>
#include <span>

namespace coolbench::stats {

/// The q-quantile (0 <= q <= 1) of `values` (any order; copied and sorted).
///
/// Definition: Hyndman–Fan type 7, numpy.quantile's default ("linear"). With x
/// sorted ascending and indexed from 0, h = (n − 1)·q, i = floor(h):
/// quantile = x[i] + (h − i)·(x[i+1] − x[i]) (x[i] itself when h is whole).
/// q = 0 gives the minimum, q = 1 the maximum, q = 0.5 the usual median.
[[nodiscard]] double quantile(std::span<const double> values, double q);

/// quantile() on data already sorted ascending; checks that it is sorted
/// (invalid_argument otherwise), copies nothing.
[[nodiscard]] double quantile_sorted(std::span<const double> sorted, double q);

/// quantile(values, 0.5): the middle value, or the mean of the two middle ones.
[[nodiscard]] double median(std::span<const double> values);

/// Arithmetic mean.
[[nodiscard]] double mean(std::span<const double> values);

/// Sample standard deviation (divisor n − 1, numpy.std(ddof=1)); 0 for n = 1.
[[nodiscard]] double stddev(std::span<const double> values);

/// Summary of a set of samples, in the samples' unit (cv has none).
struct summary {
  std::size_t count = 0;
  double min = 0;
  double max = 0;
  double mean = 0;
  /// Sample standard deviation (n − 1); 0 when count is 1.
  double stddev = 0;
  /// Coefficient of variation stddev / mean (a fraction, not %); infinite or
  /// NaN when mean is 0.
  double cv = 0;
  /// Type-7 quantiles (see quantile()).
  double median = 0;
  double p10 = 0;
  double p90 = 0;
  double p99 = 0;
};

/// Sorts a copy once and fills every field.
[[nodiscard]] summary summarize(std::span<const double> values);

/// The smallest positive difference between two of `values`, or 0 when all
/// are equal (or there is one). Of timings, it bounds the timer's tick from
/// above: CUDA events on the H200 give multiples of 32 ns, and a figure a few
/// hundred ticks long cannot resolve a fraction of a percent.
[[nodiscard]] double smallest_step(std::span<const double> values);

}  // namespace coolbench::stats
