// The sentinel's decision (docs/measure.md, "Hidden state"): has a short reference sequence
// moved beyond its own noise while every sensor stayed where it was?
#include "coolbench/measure/hidden_state.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "coolbench/core/error.hpp"
#include "coolbench/telemetry/clock_reasons.hpp"

namespace coolbench::measure {
namespace {

/// "+9.3 %".
std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f %%", 100.0 * fraction);
  return text;
}

/// The bits that say a clock is held down; gpu_idle and the like come and go with the work.
std::uint64_t slowing_bits(std::uint64_t reasons) {
  std::uint64_t out = 0;
  for (const auto& info : telemetry::all_clock_reasons()) {
    if (info.slows_clock) out |= reasons & static_cast<std::uint64_t>(info.bit);
  }
  return out;
}

/// "sw_power_cap+hw_slowdown", or "none".
std::string joined_reasons(std::uint64_t bits) {
  std::string out;
  for (const auto& name : telemetry::clock_reason_names(slowing_bits(bits)))
    out += (out.empty() ? "" : "+") + name;
  return out.empty() ? "none" : out;
}

/// What changed between two readings beyond the policy's tolerances, or empty.
std::string sensor_change(const sensor_reading& then, const sensor_reading& now,
                          const sentinel_policy& policy) {
  std::string out;
  auto add = [&out](const std::string& what) { out += (out.empty() ? "" : ", ") + what; };
  if (then.temp_c && now.temp_c && std::abs(*now.temp_c - *then.temp_c) > policy.temp_tolerance_c) {
    add("temperature " + std::to_string(*then.temp_c) + " -> " + std::to_string(*now.temp_c) +
        " C");
  }
  // An idle GPU reads a low SM clock on purpose (345 MHz on the H200): a clock is compared only
  // between two readings of a busy GPU.
  const auto idle = [](const sensor_reading& r) {
    return r.clock_reasons &&
           (*r.clock_reasons & static_cast<std::uint64_t>(telemetry::clock_reason::gpu_idle)) != 0;
  };
  if (then.sm_clock_mhz && now.sm_clock_mhz && *then.sm_clock_mhz > 0 && !idle(then) &&
      !idle(now)) {
    const double ratio = static_cast<double>(*now.sm_clock_mhz) / *then.sm_clock_mhz;
    if (std::abs(ratio - 1) > policy.clock_tolerance) {
      add("SM clock " + std::to_string(*then.sm_clock_mhz) + " -> " +
          std::to_string(*now.sm_clock_mhz) + " MHz");
    }
  }
  if (then.clock_reasons && now.clock_reasons &&
      slowing_bits(*then.clock_reasons) != slowing_bits(*now.clock_reasons)) {
    add("clock reasons " + joined_reasons(*then.clock_reasons) + " -> " +
        joined_reasons(*now.clock_reasons));
  }
  return out;
}

}  // namespace

double sentinel_median(std::vector<double> timings_ms) {
  if (timings_ms.empty()) throw invalid_argument("a sentinel check needs at least one timing");
  const auto mid = timings_ms.begin() + static_cast<std::ptrdiff_t>(timings_ms.size() / 2);
  std::nth_element(timings_ms.begin(), mid, timings_ms.end());
  if (timings_ms.size() % 2 == 1) return *mid;
  const double upper = *mid;
  const double lower = *std::max_element(timings_ms.begin(), mid);
  return (lower + upper) / 2;
}

sentinel_calibration calibrate_sentinel(const std::vector<double>& check_medians,
                                        const sensor_reading& sensors) {
  if (check_medians.empty()) throw invalid_argument("calibrating the sentinel needs a check");
  for (const double m : check_medians) {
    if (!(m > 0)) throw invalid_argument("a sentinel check's median must be positive");
  }
  sentinel_calibration c;
  c.median_ms = sentinel_median(check_medians);
  std::vector<double> deviations;
  for (const double m : check_medians) deviations.push_back(std::abs(m / c.median_ms - 1));
  std::sort(deviations.begin(), deviations.end());
  c.noise = deviations.size() >= 4 ? deviations[deviations.size() - 2] : deviations.back();
  c.checks = static_cast<int>(check_medians.size());
  c.check_ms = check_medians;
  c.sensors = sensors;
  return c;
}

sentinel_check judge_sentinel(const sentinel_calibration& calibration, double median_ms,
                              const sensor_reading& now, std::string where,
                              const sentinel_policy& policy) {
  sentinel_check c;
  c.where = std::move(where);
  c.median_ms = median_ms;
  c.reference_ms = calibration.median_ms;
  c.shift = calibration.median_ms > 0 ? median_ms / calibration.median_ms - 1 : 0;
  c.threshold = std::max(policy.min_shift, policy.noise_factor * calibration.noise);
  c.moved = std::abs(c.shift) > c.threshold;
  c.sensor_change = sensor_change(calibration.sensors, now, policy);
  c.sensors_unchanged = c.sensor_change.empty();
  return c;
}

sensor_reading sensors_of(const std::optional<telemetry::gpu_sample>& sample) {
  sensor_reading s;
  if (!sample) return s;
  if (sample->temp_gpu_c.ok()) s.temp_c = sample->temp_gpu_c.value;
  if (sample->clock_sm_mhz.ok()) s.sm_clock_mhz = sample->clock_sm_mhz.value;
  if (sample->clock_reasons.ok()) s.clock_reasons = sample->clock_reasons.value;
  return s;
}

std::string sentinel_check::summary() const {
  std::string s;
  if (!judged) {
    s = "sentinel not judged";
  } else if (!moved) {
    s = "sentinel " + percent(shift) + ", within its noise (" + percent(threshold).substr(1) + ")";
  } else if (sensors_unchanged) {
    s = "hidden state: sentinel " + percent(shift) + ", sensors unchanged";
  } else {
    s = "sentinel " + percent(shift) + ", sensors changed (" + sensor_change + ")";
  }
  if (!action.empty()) s += "; " + action;
  return s;
}

std::string hidden_state_record::summary() const {
  for (const auto& c : checks) {
    if (c.hidden_state()) return c.summary() + " (" + c.where + ")";
  }
  return "hidden state: none seen, the sentinel within its noise in " +
         std::to_string(checks.size()) + " checks (isolation " + to_string(applied) + ")";
}

}  // namespace coolbench::measure
