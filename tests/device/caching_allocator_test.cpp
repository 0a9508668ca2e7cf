#include "device/caching_allocator.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "device/fake_gpu_api.hpp"

namespace coolbench::device {
namespace {

constexpr std::uint64_t mib = testing::fake_gpu_api::mib;

TEST(caching_allocator, block_sizes_round_to_512_bytes_then_to_2_mib_pages) {
  EXPECT_EQ(caching_allocator::block_size(0), 512U);
  EXPECT_EQ(caching_allocator::block_size(1), 512U);
  EXPECT_EQ(caching_allocator::block_size(512), 512U);
  EXPECT_EQ(caching_allocator::block_size(513), 1024U);
  EXPECT_EQ(caching_allocator::block_size(mib - 1), mib);
  EXPECT_EQ(caching_allocator::block_size(mib), 2 * mib);
  EXPECT_EQ(caching_allocator::block_size(2 * mib + 1), 4 * mib);
}

class allocator_test : public ::testing::Test {
 protected:
  void SetUp() override { m_api.create_context(0); }
  testing::fake_gpu_api m_api;
  caching_allocator m_allocator{m_api, 0};
};

TEST_F(allocator_test, small_requests_may_reuse_a_block_at_most_a_quarter_larger) {
  void* p = m_allocator.allocate(4096);
  m_allocator.deallocate(p);
  EXPECT_EQ(m_allocator.allocate(3584), p);  // 4096 <= 3584 * 1.25
  m_allocator.deallocate(p);
  EXPECT_NE(m_allocator.allocate(1024), p);  // too small for the 4 KiB block
  EXPECT_EQ(m_allocator.cached_bytes(), 4096U);
}

TEST_F(allocator_test, large_requests_reuse_only_the_same_block_size) {
  void* p = m_allocator.allocate(8 * mib);
  m_allocator.deallocate(p);
  void* q = m_allocator.allocate(4 * mib);
  EXPECT_NE(q, p);
  EXPECT_EQ(m_allocator.allocate(8 * mib), p);
}

TEST_F(allocator_test, statistics_and_free_all) {
  void* a = m_allocator.allocate(2 * mib);
  void* b = m_allocator.allocate(1000);
  m_allocator.deallocate(b);
  EXPECT_EQ(m_allocator.live_bytes(), 2 * mib);
  EXPECT_EQ(m_allocator.cached_bytes(), 1024U);
  EXPECT_EQ(m_allocator.peak_bytes(), 2 * mib + 1024);
  EXPECT_EQ(m_allocator.blocks(), 2U);
  const auto freed = m_allocator.free_all();
  EXPECT_EQ(freed.bytes, 2 * mib + 1024);
  EXPECT_EQ(freed.live_bytes, 2 * mib);
  EXPECT_EQ(freed.blocks, 2U);
  EXPECT_EQ(m_api.allocated_bytes(), 0U);
  EXPECT_EQ(m_allocator.peak_bytes(), 0U);
  m_allocator.deallocate(a);  // a handle from before: ignored, not freed again
  EXPECT_FALSE(m_api.freed_twice());
  EXPECT_EQ(m_allocator.cached_bytes(), 0U);
}

TEST_F(allocator_test, small_blocks_come_from_2_mib_slabs_of_its_own) {
  // The driver packs allocations up to 1 MiB into shared 2 MiB pages; coolbench's small blocks
  // take whole 2 MiB slabs instead, so another runtime's small allocation always opens a page
  // NVML can see.
  void* a = m_allocator.allocate(1000);
  void* b = m_allocator.allocate(4096);
  EXPECT_EQ(m_allocator.slabs(), 1U);
  EXPECT_EQ(m_api.allocated_bytes(), 2 * mib);
  EXPECT_EQ(static_cast<char*>(b) - static_cast<char*>(a), 1024);
  std::vector<void*> more;
  for (int i = 0; i < 4; ++i) more.push_back(m_allocator.allocate(512 * 1024));  // 2 MiB more
  EXPECT_EQ(m_allocator.slabs(), 2U);
  EXPECT_EQ(m_api.allocated_bytes(), 4 * mib);
  // A slab goes back to the driver only when none of its blocks is live.
  m_allocator.deallocate(a);
  m_allocator.empty_cache();
  EXPECT_EQ(m_allocator.slabs(), 2U);
  EXPECT_EQ(m_allocator.cached_bytes(), 1024U);  // kept with its slab
  m_allocator.deallocate(b);
  for (void* p : more) m_allocator.deallocate(p);
  m_allocator.empty_cache();
  EXPECT_EQ(m_allocator.slabs(), 0U);
  EXPECT_EQ(m_allocator.cached_bytes(), 0U);
  EXPECT_EQ(m_api.allocated_bytes(), 0U);
  EXPECT_FALSE(m_api.freed_twice());
}

TEST_F(allocator_test, forget_all_drops_the_books_without_freeing) {
  (void)m_allocator.allocate(4 * mib);
  const auto forgotten = m_allocator.forget_all();
  EXPECT_EQ(forgotten.bytes, 4 * mib);
  EXPECT_EQ(m_allocator.blocks(), 0U);
  EXPECT_EQ(m_api.allocated_bytes(), 4 * mib);  // the context would have taken it
}

}  // namespace
}  // namespace coolbench::device
