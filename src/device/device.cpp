#include "coolbench/device/device.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "device/device_state.hpp"

namespace coolbench::device {

std::string_view to_string(resource_kind kind) noexcept {
  switch (kind) {
    case resource_kind::graph: return "graph";
    case resource_kind::blas_handle: return "blas_handle";
    case resource_kind::cuda_module: return "cuda_module";
    case resource_kind::event: return "event";
    case resource_kind::stream: return "stream";
    case resource_kind::kernel_attribute: return "kernel_attribute";
    case resource_kind::allocation: return "allocation";
  }
  return "unknown";
}

// --- lease ------------------------------------------------------------------

lease::lease(std::shared_ptr<device_state> state) : m_state(std::move(state)) {
  std::lock_guard lock(m_state->mutex);
  const bool created = !m_state->context_active;
  m_state->enter();
  if (++m_state->leases == 1) {
    ++m_state->windows_opened;
    m_state->lease_start_bytes = created && m_state->own_context_bytes
                                     ? m_state->own_context_bytes
                                     : m_state->settled_process_bytes();
    if (device_trace_on()) {
      std::fprintf(stderr, "coolbench trace: GPU %d window opened at NVML %.2f MiB%s\n",
                   m_state->ordinal, trace_mib(m_state->lease_start_bytes),
                   created ? " (context created)" : "");
    }
  }
  ++m_state->leases_by_thread[std::this_thread::get_id()];
  m_generation = m_state->generation.load();
}

lease::lease(lease&& other) noexcept
    : m_state(std::move(other.m_state)), m_generation(other.m_generation) {}

lease::~lease() {
  if (m_state == nullptr) return;
  {
    std::lock_guard lock(m_state->mutex);
    // What coolbench's work under the leases added to NVML's figure is its own.
    if (--m_state->leases == 0 && m_state->context_active) {
      m_state->count_own_change(std::exchange(m_state->lease_start_bytes, std::nullopt));
    }
    // Leases are dropped in the thread that took them (documented); look up
    // the thread that holds some, this one first.
    auto it = m_state->leases_by_thread.find(std::this_thread::get_id());
    if (it == m_state->leases_by_thread.end()) it = m_state->leases_by_thread.begin();
    if (it != m_state->leases_by_thread.end() && --it->second == 0)
      m_state->leases_by_thread.erase(it);
  }
  m_state->leases_changed.notify_all();
}

int lease::ordinal() const noexcept { return m_state->ordinal; }

buffer lease::allocate(std::size_t bytes) {
  std::lock_guard lock(m_state->mutex);
  m_state->enter();
  m_generation = m_state->generation.load();
  void* pointer = m_state->allocator.allocate(bytes);
  return {m_state, pointer, caching_allocator::block_size(bytes), m_generation};
}

CUstream_st* lease::stream() {
  std::lock_guard lock(m_state->mutex);
  m_state->enter();
  m_generation = m_state->generation.load();
  if (m_state->stream == nullptr) m_state->stream = m_state->api->create_stream(m_state->ordinal);
  return m_state->stream;
}

CUevent_st* lease::create_event() {
  std::lock_guard lock(m_state->mutex);
  m_state->enter();
  m_generation = m_state->generation.load();
  CUevent_st* event = m_state->api->create_event(m_state->ordinal);
  m_state->events.push_back(event);
  return event;
}

void lease::set_kernel_attribute(const void* kernel, kernel_attribute attribute, int value) {
  std::lock_guard lock(m_state->mutex);
  m_state->enter();
  m_generation = m_state->generation.load();
  m_state->api->set_kernel_attribute(m_state->ordinal, kernel, attribute, value);
  auto& settings = m_state->attributes;
  const auto same = [&](const auto& s) { return s.kernel == kernel && s.attribute == attribute; };
  if (auto it = std::find_if(settings.begin(), settings.end(), same); it != settings.end()) {
    it->value = value;
  } else {
    settings.push_back({kernel, attribute, value});
  }
}

owned_resource lease::adopt(resource_kind kind, std::function<void()> destroy) {
  if (kind == resource_kind::allocation || kind == resource_kind::kernel_attribute) {
    throw invalid_argument(std::string("adopt() takes resources of other libraries, not ") +
                           std::string(to_string(kind)) +
                           ": use allocate() or set_kernel_attribute()");
  }
  std::lock_guard lock(m_state->mutex);
  m_state->enter();
  m_generation = m_state->generation.load();
  const std::uint64_t id = m_state->next_adopted_id++;
  m_state->adopted.emplace(id, device_state::adopted_resource{kind, std::move(destroy)});
  return {m_state, id, m_generation};
}

void lease::synchronize() {
  std::lock_guard lock(m_state->mutex);
  if (m_state->context_active) m_state->api->synchronize(m_state->ordinal);
}

// --- device -----------------------------------------------------------------

namespace {

std::mutex g_api_mutex;
std::shared_ptr<detail::gpu_api> g_api_override;

std::shared_ptr<detail::gpu_api> current_api() {
  std::lock_guard lock(g_api_mutex);
  return g_api_override != nullptr ? g_api_override : detail::make_cuda_api();
}

}  // namespace

namespace detail {

void use_gpu_api_for_testing(std::shared_ptr<gpu_api> api) {
  std::lock_guard lock(g_api_mutex);
  g_api_override = std::move(api);
}

}  // namespace detail

device& device::get(int ordinal) {
  // One state per ordinal for the life of the process, destroyed at exit.
  // It holds bookkeeping only; the CUDA context is the driver's.
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<device>> devices;
  std::lock_guard lock(mutex);
  if (auto it = devices.find(ordinal); it != devices.end()) return *it->second;
  auto api = current_api();
  api->check_device(ordinal);
  auto created = std::make_unique<device>(std::make_shared<device_state>(std::move(api), ordinal));
  return *devices.emplace(ordinal, std::move(created)).first->second;
}

int device::count() { return current_api()->device_count(); }

device::device(std::shared_ptr<device_state> state) : m_state(std::move(state)) {}
device::~device() = default;

int device::ordinal() const noexcept { return m_state->ordinal; }

lease device::acquire() { return lease(m_state); }

void device::make_current() {
  std::lock_guard lock(m_state->mutex);
  m_state->enter();
}

void device::empty_cache() {
  std::lock_guard lock(m_state->mutex);
  // Inside a lease window the window's closing reading counts the drop;
  // counting it here too would take it off coolbench's share twice.
  const bool counted_here = m_state->context_active && m_state->leases == 0;
  const auto before = counted_here ? m_state->settled_process_bytes() : std::nullopt;
  m_state->allocator.empty_cache();
  m_state->count_own_change(before);
}

device_status device::status() const {
  std::lock_guard lock(m_state->mutex);
  const auto& s = *m_state;
  device_status status;
  status.ordinal = s.ordinal;
  status.context_active = s.context_active;
  status.generation = s.generation.load();
  status.leases = s.leases;
  status.live_bytes = s.allocator.live_bytes();
  status.cached_bytes = s.allocator.cached_bytes();
  status.peak_bytes = s.allocator.peak_bytes();
  status.resources[index(resource_kind::allocation)] = s.allocator.blocks();
  status.resources[index(resource_kind::stream)] = s.stream != nullptr ? 1 : 0;
  status.resources[index(resource_kind::event)] = s.events.size();
  status.resources[index(resource_kind::kernel_attribute)] = s.attributes.size();
  for (const auto& [id, resource] : s.adopted) ++status.resources[index(resource.kind)];
  status.releases = s.releases;
  return status;
}

}  // namespace coolbench::device
