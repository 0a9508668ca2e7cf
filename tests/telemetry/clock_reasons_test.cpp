#include "coolbench/telemetry/clock_reasons.hpp"

#include <gtest/gtest.h>

namespace coolbench::telemetry {
namespace {

TEST(clock_reasons, names_follow_bit_order) {
  EXPECT_EQ(clock_reason_names(0x0), std::vector<std::string>{});
  EXPECT_EQ(clock_reason_names(0x1), std::vector<std::string>{"gpu_idle"});
  EXPECT_EQ(clock_reason_names(0x4 | 0x40),
            (std::vector<std::string>{"sw_power_cap", "hw_thermal"}));
  EXPECT_EQ(clock_reason_names(0x100), std::vector<std::string>{"display_clocks"});
}

TEST(clock_reasons, unknown_bits_are_shown_in_hex_not_dropped) {
  EXPECT_EQ(clock_reason_names(0x4 | 0x1000), (std::vector<std::string>{"sw_power_cap", "0x1000"}));
  EXPECT_EQ(clock_reasons_short(0x30000), "0x30000");
}

TEST(clock_reasons, short_form) {
  EXPECT_EQ(clock_reasons_short(0), "-");
  EXPECT_EQ(clock_reasons_short(0x1), "idle");
  EXPECT_EQ(clock_reasons_short(0x4 | 0x8 | 0x20 | 0x40 | 0x80), "pwr,hws,swt,hwt,brk");
  EXPECT_EQ(clock_reasons_short(0x2 | 0x10 | 0x100), "app,sync,disp");
}

TEST(clock_reasons, throttling_means_power_thermal_or_hw_slowdown) {
  EXPECT_FALSE(is_throttling(0x0));
  EXPECT_FALSE(is_throttling(0x1));    // idle: low clocks on purpose
  EXPECT_FALSE(is_throttling(0x2));    // applications clocks
  EXPECT_FALSE(is_throttling(0x10));   // sync boost
  EXPECT_FALSE(is_throttling(0x100));  // display clocks
  for (std::uint64_t bit : {0x4ULL, 0x8ULL, 0x20ULL, 0x40ULL, 0x80ULL}) {
    EXPECT_TRUE(is_throttling(bit)) << bit;
    EXPECT_TRUE(is_throttling(bit | 0x1)) << bit;
  }
}

TEST(clock_reasons, table_matches_the_enum_and_short_names_fit_a_column) {
  std::uint64_t seen = 0;
  for (const auto& info : all_clock_reasons()) {
    const auto bit = static_cast<std::uint64_t>(info.bit);
    EXPECT_EQ(seen & bit, 0U) << info.name;
    seen |= bit;
    EXPECT_LE(info.short_name.size(), 4U) << info.name;
    EXPECT_EQ(info.slows_clock, is_throttling(bit)) << info.name;
  }
  EXPECT_EQ(seen, 0x1FFU);
}

}  // namespace
}  // namespace coolbench::telemetry
