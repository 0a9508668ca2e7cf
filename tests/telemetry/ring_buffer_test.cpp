#include "coolbench/telemetry/ring_buffer.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace coolbench::telemetry {
namespace {

std::vector<int> contents(const ring_buffer<int>& buffer) {
  std::vector<int> items;
  buffer.for_each([&](int i) { items.push_back(i); });
  return items;
}

TEST(ring_buffer, zero_capacity_is_refused) {
  EXPECT_THROW(ring_buffer<int>(0), std::invalid_argument);
}

TEST(ring_buffer, keeps_items_in_order_until_full) {
  ring_buffer<int> buffer(4);
  EXPECT_TRUE(buffer.empty());
  for (int i = 1; i <= 3; ++i) buffer.push(i);
  EXPECT_EQ(buffer.size(), 3U);
  EXPECT_EQ(contents(buffer), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(buffer[0], 1);
  EXPECT_EQ(buffer.newest(), 3);
  EXPECT_EQ(buffer.dropped(), 0U);
}

TEST(ring_buffer, overwrites_the_oldest_and_counts_the_dropped) {
  ring_buffer<int> buffer(3);
  for (int i = 1; i <= 10; ++i) buffer.push(i);
  EXPECT_EQ(buffer.size(), 3U);
  EXPECT_EQ(buffer.capacity(), 3U);
  EXPECT_EQ(contents(buffer), (std::vector<int>{8, 9, 10}));
  EXPECT_EQ(buffer[0], 8);
  EXPECT_EQ(buffer[2], 10);
  EXPECT_EQ(buffer.newest(), 10);
  EXPECT_EQ(buffer.dropped(), 7U);
}

TEST(ring_buffer, capacity_one_and_clear) {
  ring_buffer<int> buffer(1);
  buffer.push(5);
  buffer.push(6);
  EXPECT_EQ(contents(buffer), std::vector<int>{6});
  EXPECT_EQ(buffer.dropped(), 1U);
  buffer.clear();
  EXPECT_TRUE(buffer.empty());
  buffer.push(7);
  EXPECT_EQ(contents(buffer), std::vector<int>{7});
}

}  // namespace
}  // namespace coolbench::telemetry
