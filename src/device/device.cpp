#include "coolbench/device/device.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "device/caching_allocator.hpp"
#include "device/detail/gpu_api.hpp"

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

namespace {

constexpr std::uint64_t mib = std::uint64_t{1} << 20U;
// Memory the driver may count for this process beyond coolbench's blocks
// (its small-allocation pools grow in 2 MiB pages), plus a margin.
constexpr std::uint64_t foreign_allowance_base = 64 * mib;
constexpr std::uint64_t foreign_allowance_per_block = 2 * mib;
// When another library created the context, its baseline is unknown: on an
// H200 a context with a few modules loaded holds about 0.5 GiB.
constexpr std::uint64_t unknown_baseline_allowance = 1024 * mib;

std::size_t index(resource_kind kind) { return static_cast<std::size_t>(kind); }

void log_error(const char* what, const std::exception& e) noexcept {
  std::fprintf(stderr, "coolbench: %s: %s\n", what, e.what());
}

}  // namespace

/// Everything the device layer knows about one ordinal. Shared by the device,
/// its leases and its handles; guarded by `mutex`.
struct device_state {
  device_state(std::shared_ptr<detail::gpu_api> gpu, int id)
      : api(std::move(gpu)), ordinal(id), allocator(*api, id) {}

  std::shared_ptr<detail::gpu_api> api;
  const int ordinal;

  mutable std::mutex mutex;
  std::condition_variable leases_changed;
  bool context_active = false;  // coolbench holds (and has set up) the context
  std::atomic<std::uint64_t> generation{1};
  std::uint64_t releases = 0;
  std::map<std::thread::id, std::uint64_t> leases_by_thread;
  std::uint64_t leases = 0;

  caching_allocator allocator;
  std::optional<std::uint64_t>
      baseline_bytes;  // this process's memory right after our context appeared
  CUstream_st* stream = nullptr;
  std::vector<CUevent_st*> events;
  struct attribute_setting {
    const void* kernel;
    kernel_attribute attribute;
    int value;
  };
  std::vector<attribute_setting> attributes;  // kept across releases, re-applied
  struct adopted_resource {
    resource_kind kind;
    std::function<void()> destroy;
  };
  std::map<std::uint64_t, adopted_resource> adopted;
  std::uint64_t next_adopted_id = 1;

  /// Creates the context when coolbench has none and re-applies attributes.
  /// Call with `mutex` held.
  void ensure_context() {
    if (context_active) return;
    const bool existed = api->context_active(ordinal);
    api->create_context(ordinal);
    baseline_bytes = existed ? std::nullopt : api->process_memory_bytes(ordinal);
    for (const auto& a : attributes)
      api->set_kernel_attribute(ordinal, a.kernel, a.attribute, a.value);
    context_active = true;
  }

  [[nodiscard]] bool holds_anything() const {
    return context_active || allocator.blocks() > 0 || !adopted.empty() || !events.empty() ||
           stream != nullptr;
  }

  std::uint64_t other_threads_leases() const {
    const auto self = leases_by_thread.find(std::this_thread::get_id());
    return leases - (self == leases_by_thread.end() ? 0 : self->second);
  }
};

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
    {
      std::lock_guard lock(m_state->mutex);
      if (auto it = m_state->adopted.find(m_id); it != m_state->adopted.end()) {
        destroy = std::move(it->second.destroy);
        m_state->adopted.erase(it);
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
  }
  m_state.reset();
  m_id = 0;
}

// --- lease ------------------------------------------------------------------

lease::lease(std::shared_ptr<device_state> state) : m_state(std::move(state)) {
  std::lock_guard lock(m_state->mutex);
  m_state->ensure_context();
  ++m_state->leases;
  ++m_state->leases_by_thread[std::this_thread::get_id()];
  m_generation = m_state->generation.load();
}

lease::lease(lease&& other) noexcept
    : m_state(std::move(other.m_state)), m_generation(other.m_generation) {}

lease::~lease() {
  if (m_state == nullptr) return;
  {
    std::lock_guard lock(m_state->mutex);
    --m_state->leases;
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
  m_state->ensure_context();
  m_generation = m_state->generation.load();
  void* pointer = m_state->allocator.allocate(bytes);
  return {m_state, pointer, caching_allocator::block_size(bytes), m_generation};
}

CUstream_st* lease::stream() {
  std::lock_guard lock(m_state->mutex);
  m_state->ensure_context();
  m_generation = m_state->generation.load();
  if (m_state->stream == nullptr) m_state->stream = m_state->api->create_stream(m_state->ordinal);
  return m_state->stream;
}

CUevent_st* lease::create_event() {
  std::lock_guard lock(m_state->mutex);
  m_state->ensure_context();
  m_generation = m_state->generation.load();
  CUevent_st* event = m_state->api->create_event(m_state->ordinal);
  m_state->events.push_back(event);
  return event;
}

void lease::set_kernel_attribute(const void* kernel, kernel_attribute attribute, int value) {
  std::lock_guard lock(m_state->mutex);
  m_state->ensure_context();
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
  m_state->ensure_context();
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

void device::empty_cache() {
  std::lock_guard lock(m_state->mutex);
  m_state->allocator.empty_cache();
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

release_report device::release(const release_options& options) {
  const auto started = std::chrono::steady_clock::now();
  auto& s = *m_state;
  std::unique_lock lock(s.mutex);
  release_report report;
  report.ordinal = s.ordinal;
  report.forced = options.force;

  // 1. Leases in other threads: wait for them to end, or refuse.
  if (s.other_threads_leases() > 0 && options.wait_for_leases.count() > 0) {
    s.leases_changed.wait_for(lock, options.wait_for_leases,
                              [&] { return s.other_threads_leases() == 0; });
  }
  if (const std::uint64_t others = s.other_threads_leases(); others > 0) {
    throw release_refused("cannot release GPU " + std::to_string(s.ordinal) + ": " +
                          std::to_string(others) +
                          " lease(s) are held in other threads. End them first, or pass a wait "
                          "(release_options::wait_for_leases) long enough for them to end.");
  }

  // 2. Nothing of ours and no context from anyone: a no-op.
  const bool context_exists = s.context_active || s.api->context_active(s.ordinal);
  if (!s.holds_anything() && !context_exists) {
    report.note =
        "nothing to release: GPU " + std::to_string(s.ordinal) + " has no context in this process";
    report.generation_after = s.generation.load();
    report.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return report;
  }

  // 3. Memory this library did not allocate: refuse unless forced.
  const std::uint64_t ours = s.allocator.live_bytes() + s.allocator.cached_bytes();
  const std::uint64_t allowance = foreign_allowance_base +
                                  foreign_allowance_per_block * s.allocator.blocks() +
                                  (s.baseline_bytes ? 0 : unknown_baseline_allowance);
  if (const auto process = s.api->process_memory_bytes(s.ordinal)) {
    const std::uint64_t baseline = s.baseline_bytes.value_or(0);
    report.foreign_bytes =
        static_cast<std::int64_t>(*process) - static_cast<std::int64_t>(baseline + ours);
    report.foreign_check =
        "NVML: process holds " + std::to_string(*process / mib) + " MiB, coolbench " +
        std::to_string(ours / mib) + " MiB, context baseline " +
        (s.baseline_bytes ? std::to_string(baseline / mib) + " MiB"
                          : std::string("unknown (context not created by coolbench)")) +
        ", allowance " + std::to_string(allowance / mib) + " MiB";
    if (*report.foreign_bytes > static_cast<std::int64_t>(allowance) && !options.force) {
      throw release_refused(
          "cannot release GPU " + std::to_string(s.ordinal) + ": about " +
          std::to_string(*report.foreign_bytes / static_cast<std::int64_t>(mib)) +
          " MiB of device memory in this process was not allocated by coolbench (" +
          report.foreign_check +
          "). Another library still holds tensors there; free them first, or release with force "
          "(their pointers then dangle).");
    }
  } else {
    report.foreign_check = "not checked: NVML does not report this process's device memory here";
    if (!options.force) {
      throw release_refused(
          "cannot release GPU " + std::to_string(s.ordinal) +
          ": NVML does not report this process's device memory here, so memory of other "
          "libraries cannot be ruled out. Release with force if nothing else uses the GPU.");
    }
  }

  // 4. Wait for in-flight work. A failed kernel leaves a sticky error: note
  // it and go on, the reset clears it.
  if (s.context_active) {
    try {
      s.api->synchronize(s.ordinal);
    } catch (const std::exception& e) {
      report.note = std::string("in-flight work had failed: ") + e.what() + "; ";
    }
  }

  // 5. Destroy what is registered, users before memory.
  for (auto& [id, resource] : s.adopted) {
    try {
      resource.destroy();
    } catch (const std::exception& e) {
      log_error("destroying an adopted resource during release", e);
    }
    ++report.destroyed[index(resource.kind)];
  }
  s.adopted.clear();
  for (CUevent_st* event : s.events) s.api->destroy_event(s.ordinal, event);
  report.destroyed[index(resource_kind::event)] = s.events.size();
  s.events.clear();
  if (s.stream != nullptr) {
    s.api->destroy_stream(s.ordinal, s.stream);
    report.destroyed[index(resource_kind::stream)] = 1;
    s.stream = nullptr;
  }
  report.destroyed[index(resource_kind::kernel_attribute)] =
      s.attributes.size();  // re-applied later
  const auto freed = s.allocator.free_all();
  report.bytes_freed = freed.bytes;
  report.live_bytes_freed = freed.live_bytes;
  report.destroyed[index(resource_kind::allocation)] = freed.blocks;

  // 6. Reset the primary context; every handle of this generation is stale.
  s.api->reset(s.ordinal);
  report.context_reset = true;
  report.released = true;
  s.context_active = false;
  s.baseline_bytes.reset();
  s.generation.fetch_add(1);
  ++s.releases;
  report.generation_after = s.generation.load();
  report.process_listed_after = s.api->process_listed(s.ordinal);
  if (report.note.empty()) report.note = "released";
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

}  // namespace coolbench::device
