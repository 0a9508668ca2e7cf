#include "coolbench/telemetry/clock_reasons.hpp"

#include <array>
#include <cstdio>

namespace coolbench::telemetry {
namespace {

constexpr std::array<clock_reason_info, 9> reasons{{
    {clock_reason::gpu_idle, "gpu_idle", "idle", false},
    {clock_reason::applications_clocks, "applications_clocks", "app", false},
    {clock_reason::sw_power_cap, "sw_power_cap", "pwr", true},
    {clock_reason::hw_slowdown, "hw_slowdown", "hws", true},
    {clock_reason::sync_boost, "sync_boost", "sync", false},
    {clock_reason::sw_thermal, "sw_thermal", "swt", true},
    {clock_reason::hw_thermal, "hw_thermal", "hwt", true},
    {clock_reason::hw_power_brake, "hw_power_brake", "brk", true},
    {clock_reason::display_clocks, "display_clocks", "disp", false},
}};

std::uint64_t known_mask() noexcept {
  std::uint64_t mask = 0;
  for (const auto& reason : reasons) mask |= static_cast<std::uint64_t>(reason.bit);
  return mask;
}

std::string hex(std::uint64_t bits) {
  std::array<char, 24> buffer{};
  std::snprintf(buffer.data(), buffer.size(), "0x%llx", static_cast<unsigned long long>(bits));
  return buffer.data();
}

template <class Field>
std::vector<std::string> names_of(std::uint64_t bits, Field field) {
  std::vector<std::string> names;
  for (const auto& reason : reasons) {
    if ((bits & static_cast<std::uint64_t>(reason.bit)) != 0) names.emplace_back(field(reason));
  }
  if (const std::uint64_t unknown = bits & ~known_mask(); unknown != 0)
    names.push_back(hex(unknown));
  return names;
}

}  // namespace

std::span<const clock_reason_info> all_clock_reasons() noexcept { return reasons; }

std::vector<std::string> clock_reason_names(std::uint64_t bits) {
  return names_of(bits, [](const clock_reason_info& r) { return r.name; });
}

std::string clock_reasons_short(std::uint64_t bits) {
  std::string text;
  for (const auto& name : names_of(bits, [](const clock_reason_info& r) { return r.short_name; })) {
    text += (text.empty() ? "" : ",") + name;
  }
  return text.empty() ? "-" : text;
}

}  // namespace coolbench::telemetry
