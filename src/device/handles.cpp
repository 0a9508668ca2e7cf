// Handles: buffers from the caching allocator and adopted resources of other
// libraries. Each remembers its generation: after a release it is stale.
#include <optional>
#include <string>
#include <utility>

#include "coolbench/device/device.hpp"
#include "device/device_state.hpp"

namespace coolbench::device {

// --- buffer -----------------------------------------------------------------

buffer::~buffer() { reset(); }

buffer::buffer(buffer&& other) noexcept
    : m_state(std::move(other.m_state)),
      m_pointer(std::exchange(other.m_pointer, nullptr)),
      m_size(std::exchange(other.m_size, 0)),
      m_generation(other.m_generation) {}

buffer& buffer::operator=(buffer&& other) noexcept {
  if (this != &other) {
    reset();
    m_state = std::move(other.m_state);
    m_pointer = std::exchange(other.m_pointer, nullptr);
    m_size = std::exchange(other.m_size, 0);
    m_generation = other.m_generation;
  }
  return *this;
}

bool buffer::valid() const noexcept {
  return m_state != nullptr && m_pointer != nullptr && m_state->generation.load() == m_generation;
}

void* buffer::get() const {
  if (m_state == nullptr || m_pointer == nullptr) throw stale_resource("empty buffer used");
  if (m_state->generation.load() != m_generation) {
    throw stale_resource("buffer of " + std::to_string(m_size) + " bytes on GPU " +
                         std::to_string(m_state->ordinal) +
                         " is from before a release of the device: its memory is gone. "
                         "Allocate it again from a lease.");
  }
  return m_pointer;
}

void buffer::reset() noexcept {
  if (m_state != nullptr && m_pointer != nullptr) {
    std::lock_guard lock(m_state->mutex);
    if (m_state->generation.load() == m_generation) m_state->allocator.deallocate(m_pointer);
  }
  m_state.reset();
  m_pointer = nullptr;
  m_size = 0;
}

// --- owned_resource ---------------------------------------------------------

owned_resource::~owned_resource() { reset(); }

owned_resource::owned_resource(owned_resource&& other) noexcept
    : m_state(std::move(other.m_state)),
      m_id(std::exchange(other.m_id, 0)),
      m_generation(other.m_generation) {}

owned_resource& owned_resource::operator=(owned_resource&& other) noexcept {
  if (this != &other) {
    reset();
    m_state = std::move(other.m_state);
    m_id = std::exchange(other.m_id, 0);
    m_generation = other.m_generation;
  }
  return *this;
}

bool owned_resource::valid() const noexcept {
  if (m_state == nullptr || m_id == 0) return false;
  std::lock_guard lock(m_state->mutex);
  return m_state->adopted.contains(m_id);
}

void owned_resource::reset() noexcept {
  if (m_state != nullptr && m_id != 0) {
    std::function<void()> destroy;
    // What destroying it gives back (a graph's or a handle's device memory)
    // leaves coolbench's share of NVML's figure. Inside a lease window the
    // window counts it; outside one it is counted here.
    std::optional<std::uint64_t> before;
    std::uint64_t generation = 0;
    std::uint64_t windows = 0;
    {
      std::lock_guard lock(m_state->mutex);
      if (auto it = m_state->adopted.find(m_id); it != m_state->adopted.end()) {
        destroy = std::move(it->second.destroy);
        m_state->adopted.erase(it);
        if (m_state->context_active && m_state->leases == 0) {
          try {
            before = m_state->settled_process_bytes();
          } catch (const std::exception& e) {  // NVML failed: the share stays as it is
            log_error("reading NVML before destroying an adopted resource", e);
          }
          generation = m_state->generation.load();
          windows = m_state->windows_opened;
        }
      }
    }
    // Outside the lock: the destroy function belongs to another library.
    if (destroy) {
      try {
        destroy();
      } catch (const std::exception& e) {
        log_error("destroying an adopted resource", e);
      }
    }
    if (before) {
      std::lock_guard lock(m_state->mutex);
      // A window opened meanwhile may have seen the drop or not: left uncounted
      // rather than counted twice. A release zeroed the share anyway.
      if (m_state->leases == 0 && m_state->context_active && m_state->windows_opened == windows &&
          m_state->generation.load() == generation) {
        try {
          m_state->count_own_change(before);
        } catch (const std::exception& e) {
          log_error("reading NVML after destroying an adopted resource", e);
        }
      }
    }
  }
  m_state.reset();
  m_id = 0;
}

}  // namespace coolbench::device
