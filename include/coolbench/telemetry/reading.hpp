/// @file
/// A sensor value that may be missing. Unsupported or failed readings are
/// marked as such and never stand in as zero.
#pragma once

#include <cstdint>
#include <string_view>

namespace coolbench::telemetry {

/// Why a reading has, or has no, value.
enum class reading_status : std::uint8_t {
  unsupported,  ///< the device or driver does not offer this reading
  failed,       ///< the reading is offered but this read failed
  skipped,      ///< not read in this sample: a costly reading, read less often
  ok,           ///< value holds the reading
};

[[nodiscard]] std::string_view to_string(reading_status status) noexcept;

/// One value of a sensor, with its status. Trivially copyable, so samples
/// holding readings fit a ring buffer.
template <class T>
struct reading {
  T value{};
  reading_status status = reading_status::unsupported;

  [[nodiscard]] static constexpr reading of(T v) noexcept { return {v, reading_status::ok}; }
  [[nodiscard]] static constexpr reading unsupported() noexcept {
    return {T{}, reading_status::unsupported};
  }
  [[nodiscard]] static constexpr reading failed() noexcept { return {T{}, reading_status::failed}; }
  [[nodiscard]] static constexpr reading skipped() noexcept {
    return {T{}, reading_status::skipped};
  }

  [[nodiscard]] constexpr bool ok() const noexcept { return status == reading_status::ok; }
  [[nodiscard]] constexpr T value_or(T fallback) const noexcept { return ok() ? value : fallback; }

  friend constexpr bool operator==(const reading&, const reading&) = default;
};

}  // namespace coolbench::telemetry
