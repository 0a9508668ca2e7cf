/// @file
/// The one clock every layer timestamps with, so telemetry samples and latency
/// samples can be joined by time.
#pragma once

#include <chrono>
#include <cstdint>

namespace coolbench {

/// Monotonic clock of the whole library (telemetry, measurement).
using steady_clock = std::chrono::steady_clock;
using time_point = steady_clock::time_point;

/// Nanoseconds on steady_clock since its epoch (boot on Linux).
[[nodiscard]] inline std::int64_t steady_now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             steady_clock::now().time_since_epoch())
      .count();
}

/// Seconds since the Unix epoch on the wall clock (for reports only).
[[nodiscard]] inline double wall_now_s() noexcept {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace coolbench
