/// @file
/// NVML's clock-event ("throttle") reasons, decoded into named flags.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace coolbench::telemetry {

/// The bits of nvmlDeviceGetCurrentClocksEventReasons (the values are NVML's).
enum class clock_reason : std::uint64_t {
  gpu_idle = 0x1,             ///< nothing runs: clocks are low on purpose
  applications_clocks = 0x2,  ///< clocks held by the applications-clock setting
  sw_power_cap = 0x4,         ///< software power capping (the power limit)
  hw_slowdown = 0x8,          ///< hardware slowdown (thermal or power brake)
  sync_boost = 0x10,          ///< held to the slowest GPU of a sync-boost group
  sw_thermal = 0x20,          ///< software thermal slowdown
  hw_thermal = 0x40,          ///< hardware thermal slowdown
  hw_power_brake = 0x80,      ///< external power brake asserted
  display_clocks = 0x100,     ///< held by the display clock setting
};

/// Name, short name and meaning of one reason.
struct clock_reason_info {
  clock_reason bit;
  std::string_view name;        ///< e.g. "sw_power_cap"
  std::string_view short_name;  ///< at most 4 characters, for monitor lines: "pwr"
  bool slows_clock;             ///< true for the reasons that make a sample throttled
};

/// Every known reason, in bit order.
[[nodiscard]] std::span<const clock_reason_info> all_clock_reasons() noexcept;

/// The names of the set bits, in bit order; unknown bits become "0x…".
[[nodiscard]] std::vector<std::string> clock_reason_names(std::uint64_t bits);

/// A compact form for monitor lines: short names joined by ',', "-" for none.
[[nodiscard]] std::string clock_reasons_short(std::uint64_t bits);

/// The reasons that lower the clock below what the workload asks for: power
/// cap, HW slowdown, SW/HW thermal, power brake (not idle, not app clocks).
[[nodiscard]] constexpr std::uint64_t throttling_reason_mask() noexcept {
  return static_cast<std::uint64_t>(clock_reason::sw_power_cap) |
         static_cast<std::uint64_t>(clock_reason::hw_slowdown) |
         static_cast<std::uint64_t>(clock_reason::sw_thermal) |
         static_cast<std::uint64_t>(clock_reason::hw_thermal) |
         static_cast<std::uint64_t>(clock_reason::hw_power_brake);
}

/// True when any throttling reason is set.
[[nodiscard]] constexpr bool is_throttling(std::uint64_t bits) noexcept {
  return (bits & throttling_reason_mask()) != 0;
}

}  // namespace coolbench::telemetry
