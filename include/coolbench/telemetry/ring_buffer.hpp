/// @file
/// A bounded ring buffer: keeps the newest `capacity` items, counts the ones
/// it dropped. Not synchronised; the sampler guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace coolbench::telemetry {

template <class T>
class ring_buffer {
 public:
  explicit ring_buffer(std::size_t capacity) : m_items(capacity) {
    if (capacity == 0) throw std::invalid_argument("ring_buffer capacity must be at least 1");
  }

  /// Appends, overwriting the oldest item when full.
  void push(const T& item) {
    m_items[(m_first + m_size) % m_items.size()] = item;
    if (m_size < m_items.size()) {
      ++m_size;
    } else {
      m_first = (m_first + 1) % m_items.size();
      ++m_dropped;
    }
  }

  [[nodiscard]] std::size_t size() const noexcept { return m_size; }
  [[nodiscard]] std::size_t capacity() const noexcept { return m_items.size(); }
  [[nodiscard]] bool empty() const noexcept { return m_size == 0; }
  /// Items overwritten since construction.
  [[nodiscard]] std::uint64_t dropped() const noexcept { return m_dropped; }

  /// i = 0 is the oldest item kept.
  [[nodiscard]] const T& operator[](std::size_t i) const {
    return m_items[(m_first + i) % m_items.size()];
  }
  [[nodiscard]] const T& newest() const { return (*this)[m_size - 1]; }

  /// Calls f on every item from oldest to newest.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < m_size; ++i) f((*this)[i]);
  }

  void clear() noexcept {
    m_first = 0;
    m_size = 0;
  }

 private:
  std::vector<T> m_items;
  std::size_t m_first = 0;
  std::size_t m_size = 0;
  std::uint64_t m_dropped = 0;
};

}  // namespace coolbench::telemetry
