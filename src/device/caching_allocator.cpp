#include "device/caching_allocator.hpp"

#include <algorithm>

#include "coolbench/core/error.hpp"

namespace coolbench::device {
namespace {

constexpr std::size_t small_granule = 512;
constexpr std::size_t large_granule = std::size_t{2} << 20U;
constexpr std::size_t large_threshold = std::size_t{1} << 20U;

std::size_t round_up(std::size_t n, std::size_t granule) {
  return (n + granule - 1) / granule * granule;
}

}  // namespace

std::size_t caching_allocator::block_size(std::size_t bytes) noexcept {
  const std::size_t n = std::max<std::size_t>(bytes, 1);
  return n < large_threshold ? round_up(n, small_granule) : round_up(n, large_granule);
}

void* caching_allocator::allocate(std::size_t bytes) {
  const std::size_t size = block_size(bytes);
  // Small blocks may come from a somewhat larger cached one; large ones must
  // match, so a big cached block is not spent on a small request.
  const std::size_t largest_fit = size < large_threshold ? size + size / 4 : size;
  if (auto it = m_cached.lower_bound(size); it != m_cached.end() && it->first <= largest_fit) {
    void* pointer = it->second;
    const std::size_t cached_size = it->first;
    m_cached.erase(it);
    m_cached_bytes -= cached_size;
    m_live.emplace(pointer, cached_size);
    m_live_bytes += cached_size;
    return pointer;
  }
  void* pointer = m_api.allocate(m_ordinal, size);
  if (pointer == nullptr && !m_cached.empty()) {
    empty_cache();
    pointer = m_api.allocate(m_ordinal, size);
  }
  if (pointer == nullptr) {
    throw cuda_error("out of device memory on GPU " + std::to_string(m_ordinal) + ": " +
                         std::to_string(size) + " bytes requested, " +
                         std::to_string(m_live_bytes) +
                         " bytes held by coolbench. Free buffers or use a smaller problem.",
                     2 /* cudaErrorMemoryAllocation */);
  }
  m_live.emplace(pointer, size);
  m_live_bytes += size;
  m_peak_bytes = std::max(m_peak_bytes, m_live_bytes + m_cached_bytes);
  return pointer;
}

void caching_allocator::deallocate(void* pointer) noexcept {
  const auto it = m_live.find(pointer);
  if (it == m_live.end()) return;  // not ours, or already freed by a release
  m_cached.emplace(it->second, pointer);
  m_cached_bytes += it->second;
  m_live_bytes -= it->second;
  m_live.erase(it);
}

void caching_allocator::empty_cache() noexcept {
  for (const auto& [size, pointer] : m_cached) m_api.free(m_ordinal, pointer);
  m_cached.clear();
  m_cached_bytes = 0;
}

caching_allocator::freed caching_allocator::free_all() noexcept {
  for (const auto& [pointer, size] : m_live) m_api.free(m_ordinal, pointer);
  for (const auto& [size, pointer] : m_cached) m_api.free(m_ordinal, pointer);
  return forget_all();
}

caching_allocator::freed caching_allocator::forget_all() noexcept {
  const freed result{m_live_bytes + m_cached_bytes, m_live_bytes, blocks()};
  m_live.clear();
  m_cached.clear();
  m_live_bytes = 0;
  m_cached_bytes = 0;
  m_peak_bytes = 0;
  return result;
}

}  // namespace coolbench::device
