// The stream hold's length policy, shared by the GEMM chain and the callable
// workload (measure/detail/stream_hold.hpp): no GPU needed.
#include <gtest/gtest.h>

#include <cstdint>

#include "measure/detail/stream_hold.hpp"

namespace coolbench::measure::detail {
namespace {

constexpr std::uint64_t first = 50'000;
constexpr std::uint64_t max = 200'000'000;

TEST(AdaptiveHold, StartsAtTheFirstHoldCappedByTheMaximum) {
  EXPECT_EQ(adaptive_hold(first, max).ns(), first);
  adaptive_hold capped(max * 2, max);
  EXPECT_EQ(capped.ns(), max);
  EXPECT_TRUE(capped.at_max());
}

TEST(AdaptiveHold, AnOutlastedHoldDoublesUpToTheMaximumAndIsCounted) {
  adaptive_hold hold(first, max);
  hold.outlasted(60'000);
  EXPECT_EQ(hold.ns(), 2 * first);
  EXPECT_EQ(hold.short_holds(), 1U);
  for (int i = 0; i < 40; ++i) hold.outlasted(max);
  EXPECT_EQ(hold.ns(), max);
  EXPECT_TRUE(hold.at_max());
  EXPECT_EQ(hold.short_holds(), 41U);
}

TEST(AdaptiveHold, ShrinksOnlyOnceAFullWindowQueuedFarWithinIt) {
  adaptive_hold hold(first, max);
  // A new context's first run loads kernels: 30 ms of queuing.
  while (hold.ns() < 30'000'000) hold.outlasted(30'000'000);
  const std::uint64_t long_hold = hold.ns();
  // Fast samples from then on, but the slow one is still in the window.
  for (std::size_t i = 1; i < adaptive_hold::queue_window; ++i) hold.held(10'000);
  EXPECT_EQ(hold.ns(), long_hold);
  // The window now holds fast samples only: halves once per sample.
  hold.held(10'000);
  EXPECT_EQ(hold.ns(), long_hold / 2);
  hold.held(10'000);
  EXPECT_EQ(hold.ns(), long_hold / 4);
  // Never below the first hold, whatever the window says.
  for (int i = 0; i < 64; ++i) hold.held(1'000);
  EXPECT_EQ(hold.ns(), first);
}

TEST(AdaptiveHold, KeepsAHoldWithinShrinkFactorOfTheSlowestQueuing) {
  adaptive_hold hold(first, max);
  hold.outlasted(90'000);
  hold.outlasted(150'000);  // 200 us now
  const std::uint64_t slowest = hold.ns() / adaptive_hold::shrink_factor;
  for (std::size_t i = 0; i < 3 * adaptive_hold::queue_window; ++i) hold.held(slowest);
  EXPECT_EQ(hold.ns(), 4 * first);
  EXPECT_EQ(hold.short_holds(), 2U);
}

}  // namespace
}  // namespace coolbench::measure::detail
