// What the summary hands the profile tables (modes/profile.cpp).
#pragma once

#include <optional>
#include <vector>

#include "measure/protocol/run.hpp"

namespace coolbench::measure::detail {

/// The kept measurement samples' latencies against their temperature and their clock, and the
/// warm-up's reference.
struct profile_points {
  std::vector<double> temps;
  std::vector<double> latencies_at_temp;
  std::vector<double> clocks;
  std::vector<double> latencies_at_clock;
  /// The median of the warm-up's last window in the context the measuring began in: the state
  /// right after the cold gate, at the full clock. When the cap cut the full warm-up short,
  /// that context holds only the re-warm runs after the second gate: their median, if there
  /// are 3.
  std::optional<double> warmup_median_ms;
};

[[nodiscard]] profile_result profile_tables(run_state& run, const profile_points& points);

}  // namespace coolbench::measure::detail
