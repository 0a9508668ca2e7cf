#include "coolbench/stats/ratio_ci.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "coolbench/core/error.hpp"
#include "coolbench/stats/mixture_ci.hpp"

namespace coolbench::stats {
namespace {

void check(const estimate& e, const char* name) {
  const bool finite = std::isfinite(e.value) && std::isfinite(e.lower) && std::isfinite(e.upper);
  if (!finite || !(e.lower > 0) || e.lower > e.value || e.value > e.upper) {
    throw invalid_argument(std::string("ratio_ci_mover: ") + name +
                           " needs 0 < lower <= value <= upper, all finite; got value " +
                           std::to_string(e.value) + ", interval [" + std::to_string(e.lower) +
                           ", " + std::to_string(e.upper) + "]");
  }
}

}  // namespace

ratio_interval ratio_ci_mover(const estimate& a, const estimate& b) {
  check(a, "a");
  check(b, "b");
  const double theta_a = std::log(a.value);
  const double theta_b = std::log(b.value);
  const double d = theta_b - theta_a;
  const double below = std::hypot(theta_b - std::log(b.lower), std::log(a.upper) - theta_a);
  const double above = std::hypot(std::log(b.upper) - theta_b, theta_a - std::log(a.lower));
  return {b.value / a.value, std::exp(d - below), std::exp(d + above)};
}

ratio_interval paired_ratio_ci(std::span<const double> ratios, double level) {
  std::vector<double> logs;
  logs.reserve(ratios.size());
  for (const double r : ratios) {
    if (!std::isfinite(r) || !(r > 0)) {
      throw invalid_argument("paired_ratio_ci: every ratio must be positive and finite; got " +
                             std::to_string(r));
    }
    logs.push_back(std::log(r));
  }
  const mixture_interval ci = mixture_mean_ci(logs, level, 0);
  return ratio_interval{std::exp(ci.mean), std::exp(ci.lower), std::exp(ci.upper)};
}

}  // namespace coolbench::stats
