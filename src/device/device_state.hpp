// The state of one CUDA ordinal, shared by the device, its leases and its
// handles (device.cpp, handles.cpp, release.cpp); guarded by `mutex`.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "coolbench/device/device.hpp"
#include "device/caching_allocator.hpp"
#include "device/detail/context_baseline.hpp"
#include "device/detail/gpu_api.hpp"

namespace coolbench::device {

inline std::size_t index(resource_kind kind) { return static_cast<std::size_t>(kind); }

inline void log_error(const char* what, const std::exception& e) noexcept {
  std::fprintf(stderr, "coolbench: %s: %s\n", what, e.what());
}

/// COOLBENCH_DEVICE_TRACE=1: one stderr line per lease window, NVML reading
/// and release check, to see where coolbench's share of NVML's figure went.
inline bool device_trace_on() {
  static const bool on = [] {
    const char* set = std::getenv("COOLBENCH_DEVICE_TRACE");
    return set != nullptr && *set != '\0' && *set != '0';
  }();
  return on;
}

inline double trace_mib(std::optional<std::uint64_t> bytes) {
  return bytes ? static_cast<double>(*bytes) / 1048576.0 : -1.0;
}

struct device_state {
  device_state(std::shared_ptr<detail::gpu_api> gpu, int id)
      : api(std::move(gpu)),
        ordinal(id),
        allocator(*api, id),
        baselines(detail::default_baseline_file(), [a = api, id](const detail::baseline_key& key) {
          return a->measure_bare_context(id, key);
        }) {}

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
  detail::baseline_cache baselines;

  // --- coolbench's own share of NVML's figure (docs/device.md) -----------
  /// coolbench created the context (it did not exist when coolbench needed it).
  bool context_by_coolbench = false;
  /// NVML's figure right after coolbench created the context.
  std::optional<std::uint64_t> own_context_bytes;
  /// What NVML's figure grew by while coolbench held leases (its memory, the
  /// code of its kernels, its library handles) and by its empty_cache calls.
  std::int64_t own_bytes = 0;
  /// NVML's figure when the first of the current leases was taken.
  std::optional<std::uint64_t> lease_start_bytes;
  /// Lease windows opened so far: a reading taken outside a window is
  /// compared only while no window opened since.
  std::uint64_t windows_opened = 0;

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

  /// NVML's figure for this process once it holds still (read again after
  /// the settle time until two reads agree, at most ten times).
  [[nodiscard]] std::optional<std::uint64_t> settled_process_bytes() const {
    auto figure = api->process_memory_bytes(ordinal);
    const auto wait = api->nvml_settle_time();
    for (int i = 0; figure && wait.count() > 0 && i < 10; ++i) {
      std::this_thread::sleep_for(wait);
      const auto again = api->process_memory_bytes(ordinal);
      if (again == figure) break;
      figure = again;
    }
    return figure;
  }

  /// Creates the context when coolbench has none and re-applies attributes.
  /// Call with `mutex` held.
  void ensure_context() {
    if (context_active) return;
    const bool existed = api->context_active(ordinal);
    api->create_context(ordinal);
    context_by_coolbench = !existed;
    own_context_bytes = existed ? std::nullopt : settled_process_bytes();
    // A lease that outlived a release counts from the new context on.
    if (leases > 0) lease_start_bytes = existed ? settled_process_bytes() : own_context_bytes;
    for (const auto& a : attributes)
      api->set_kernel_attribute(ordinal, a.kernel, a.attribute, a.value);
    context_active = true;
  }

  /// The context made to exist and the device made current in the calling
  /// thread: what every lease call does first, so that a worker thread per
  /// GPU launches on its own GPU (docs/measure.md, "Many GPUs"). Call with
  /// `mutex` held.
  void enter() {
    ensure_context();
    api->make_current(ordinal);
  }

  /// Adds what NVML's figure moved by since `before` to coolbench's own share.
  /// Call with `mutex` held.
  void count_own_change(std::optional<std::uint64_t> before) {
    if (!before) return;
    const auto now = settled_process_bytes();
    if (!now) return;
    own_bytes = std::max<std::int64_t>(
        0, own_bytes + static_cast<std::int64_t>(*now) - static_cast<std::int64_t>(*before));
    if (device_trace_on()) {
      std::fprintf(
          stderr,
          "coolbench trace: GPU %d window closed: NVML %.2f -> %.2f MiB, own %.2f MiB, "
          "allocator %.2f MiB\n",
          ordinal, trace_mib(before), trace_mib(now), static_cast<double>(own_bytes) / 1048576.0,
          static_cast<double>(allocator.live_bytes() + allocator.cached_bytes()) / 1048576.0);
    }
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

}  // namespace coolbench::device
