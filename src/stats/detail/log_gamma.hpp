/// @file
/// ln|Γ(x)| without a data race: std::lgamma writes the global `signgam`, and the threads of
/// a run on several GPUs compute their CIs at once (docs/measure.md, "Many GPUs").
#pragma once

#include <math.h>  // lgamma_r (glibc, POSIX.1-2008 XSI)

namespace coolbench::stats::detail {

inline double log_gamma(double x) {
  int sign = 0;
  return ::lgamma_r(x, &sign);
}

}  // namespace coolbench::stats::detail
