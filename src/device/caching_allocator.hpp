// A caching allocator over gpu_api: freed blocks are kept for reuse, so that a
// run does not pay cudaMalloc/cudaFree per tensor, and a release frees all.
// Blocks below 1 MiB are carved out of 2 MiB slabs of coolbench's own instead
// of the driver's shared pool pages: another runtime's small allocation then
// always opens a page of its own, which NVML shows (docs/device.md, "Foreign
// state"). Not synchronised; the device's mutex guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>

#include "device/detail/gpu_api.hpp"

namespace coolbench::device {

class caching_allocator {
 public:
  caching_allocator(detail::gpu_api& api, int ordinal) : m_api(api), m_ordinal(ordinal) {}
  ~caching_allocator() = default;  // the context owns the memory; release() frees it
  caching_allocator(const caching_allocator&) = delete;
  caching_allocator& operator=(const caching_allocator&) = delete;
  caching_allocator(caching_allocator&&) = delete;
  caching_allocator& operator=(caching_allocator&&) = delete;

  /// The block size a request is served with: a multiple of 512 B below
  /// 1 MiB, of 2 MiB (the driver's page) from there on.
  [[nodiscard]] static std::size_t block_size(std::size_t bytes) noexcept;

  /// A block of at least `bytes`: a cached one if it fits (at most 25% larger
  /// below 1 MiB, exactly the block size above), else a new one; on out of
  /// memory the cache is emptied and the allocation tried again. Throws
  /// cuda_error when the device is still out of memory.
  [[nodiscard]] void* allocate(std::size_t bytes);
  /// Returns a block to the cache.
  void deallocate(void* pointer) noexcept;
  /// Frees the cached blocks.
  void empty_cache() noexcept;

  struct freed {
    std::uint64_t bytes = 0;       ///< live and cached
    std::uint64_t live_bytes = 0;  ///< of which live
    std::uint64_t blocks = 0;
  };
  /// Frees every block, live ones too (their owners' handles are stale by
  /// then), and resets the peak.
  freed free_all() noexcept;
  /// Forgets every block without freeing it: for a context that is already
  /// gone, whose memory went with it.
  freed forget_all() noexcept;

  [[nodiscard]] std::uint64_t live_bytes() const noexcept { return m_live_bytes; }
  [[nodiscard]] std::uint64_t cached_bytes() const noexcept { return m_cached_bytes; }
  [[nodiscard]] std::uint64_t peak_bytes() const noexcept { return m_peak_bytes; }
  [[nodiscard]] std::uint64_t blocks() const noexcept { return m_live.size() + m_cached.size(); }
  /// 2 MiB slabs held for blocks below 1 MiB.
  [[nodiscard]] std::size_t slabs() const noexcept { return m_slabs.size(); }

 private:
  struct slab {
    std::size_t used = 0;  // bytes carved so far
    std::size_t live = 0;  // blocks handed out now
  };
  /// The slab holding a small block, or end().
  std::map<std::uintptr_t, slab>::iterator slab_of(const void* pointer);
  void* carve(std::size_t size);
  void* driver_allocate(std::size_t size);

  detail::gpu_api& m_api;
  int m_ordinal;
  std::unordered_map<void*, std::size_t> m_live;  // pointer -> block size
  std::multimap<std::size_t, void*> m_cached;     // block size -> pointer
  std::uint64_t m_live_bytes = 0;
  std::uint64_t m_cached_bytes = 0;
  std::uint64_t m_peak_bytes = 0;
  std::map<std::uintptr_t, slab> m_slabs;  // base address -> slab
};

}  // namespace coolbench::device
