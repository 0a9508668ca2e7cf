#include "device/caching_allocator.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

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

void* caching_allocator::driver_allocate(std::size_t size) {
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
  return pointer;
}

std::map<std::uintptr_t, caching_allocator::slab>::iterator caching_allocator::slab_of(
    const void* pointer) {
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);  // NOLINT
  auto it = m_slabs.upper_bound(address);
  if (it == m_slabs.begin()) return m_slabs.end();
  --it;
  return address < it->first + large_granule ? it : m_slabs.end();
}

void* caching_allocator::carve(std::size_t size) {
  // The first slab with room, else a new one.
  auto it = std::find_if(m_slabs.begin(), m_slabs.end(),
                         [&](const auto& s) { return s.second.used + size <= large_granule; });
  if (it == m_slabs.end()) {
    void* base = driver_allocate(large_granule);
    it = m_slabs.emplace(reinterpret_cast<std::uintptr_t>(base), slab{}).first;  // NOLINT
  }
  void* pointer = reinterpret_cast<void*>(it->first + it->second.used);  // NOLINT
  it->second.used += size;
  return pointer;
}

void* caching_allocator::allocate(std::size_t bytes) {
  const std::size_t size = block_size(bytes);
  // Small blocks may come from a somewhat larger cached one; large ones must
  // match, so a big cached block is not spent on a small request.
  const std::size_t largest_fit = size < large_threshold ? size + size / 4 : size;
  void* pointer = nullptr;
  std::size_t served = size;
  if (auto it = m_cached.lower_bound(size); it != m_cached.end() && it->first <= largest_fit) {
    pointer = it->second;
    served = it->first;
    m_cached.erase(it);
    m_cached_bytes -= served;
  } else {
    pointer = size < large_threshold ? carve(size) : driver_allocate(size);
  }
  if (served < large_threshold) ++slab_of(pointer)->second.live;
  m_live.emplace(pointer, served);
  m_live_bytes += served;
  m_peak_bytes = std::max(m_peak_bytes, m_live_bytes + m_cached_bytes);
  return pointer;
}

void caching_allocator::deallocate(void* pointer) noexcept {
  const auto it = m_live.find(pointer);
  if (it == m_live.end()) return;  // not ours, or already freed by a release
  if (it->second < large_threshold) --slab_of(pointer)->second.live;
  m_cached.emplace(it->second, pointer);
  m_cached_bytes += it->second;
  m_live_bytes -= it->second;
  m_live.erase(it);
}

void caching_allocator::empty_cache() noexcept {
  // Large blocks go back to the driver; small ones only with their slab, once
  // none of its blocks is live.
  for (auto it = m_cached.begin(); it != m_cached.end();) {
    const bool small = it->first < large_threshold;
    if (small && slab_of(it->second)->second.live > 0) {
      ++it;
      continue;
    }
    if (!small) m_api.free(m_ordinal, it->second);
    m_cached_bytes -= it->first;
    it = m_cached.erase(it);
  }
  for (auto it = m_slabs.begin(); it != m_slabs.end();) {
    if (it->second.live > 0) {
      ++it;
      continue;
    }
    m_api.free(m_ordinal, reinterpret_cast<void*>(it->first));  // NOLINT
    it = m_slabs.erase(it);
  }
}

caching_allocator::freed caching_allocator::free_all() noexcept {
  for (const auto& [pointer, size] : m_live) {
    if (size >= large_threshold) m_api.free(m_ordinal, pointer);
  }
  for (const auto& [size, pointer] : m_cached) {
    if (size >= large_threshold) m_api.free(m_ordinal, pointer);
  }
  for (const auto& [base, s] : m_slabs)
    m_api.free(m_ordinal, reinterpret_cast<void*>(base));  // NOLINT
  return forget_all();
}

caching_allocator::freed caching_allocator::forget_all() noexcept {
  const freed result{m_live_bytes + m_cached_bytes, m_live_bytes, blocks()};
  m_live.clear();
  m_cached.clear();
  m_slabs.clear();
  m_live_bytes = 0;
  m_cached_bytes = 0;
  m_peak_bytes = 0;
  return result;
}

}  // namespace coolbench::device
