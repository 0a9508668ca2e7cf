#include "stats/detail/check.hpp"

#include <cmath>
#include <cstddef>
#include <string>

#include "coolbench/core/error.hpp"

namespace coolbench::stats::detail {

void require_samples(std::span<const double> values, std::string_view function,
                     std::string_view what) {
  if (values.empty()) {
    throw invalid_argument(std::string(function) + ": " + std::string(what) +
                           " is empty; pass at least one sample");
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      throw invalid_argument(
          std::string(function) + ": " + std::string(what) + "[" + std::to_string(i) + "] is " +
          (std::isnan(values[i]) ? "NaN" : "infinite") + "; drop or fix non-finite samples first");
    }
  }
}

void require_level(double level, std::string_view function) {
  if (!(level > 0.0 && level < 1.0)) {
    throw invalid_argument(std::string(function) + ": confidence level " + std::to_string(level) +
                           " is not between 0 and 1 (e.g. 0.95)");
  }
}

}  // namespace coolbench::stats::detail
