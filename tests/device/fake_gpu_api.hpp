// A scripted gpu_api: the device layer's logic (leases, registry, allocator,
// refusals, release) runs in CI without a GPU. Thread-safe. Pointers it hands
// out are unique fake addresses that must never be dereferenced.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "coolbench/core/error.hpp"
#include "device/detail/gpu_api.hpp"

namespace coolbench::device::testing {

class fake_gpu_api final : public detail::gpu_api {
 public:
  static constexpr std::uint64_t mib = std::uint64_t{1} << 20U;

  // --- script -----------------------------------------------------------
  int devices = 2;
  std::uint64_t capacity_bytes = 1024 * mib;         ///< allocations beyond fail (OOM)
  std::uint64_t context_baseline_bytes = 500 * mib;  ///< what NVML counts for a bare context
  std::uint64_t foreign_bytes = 0;                   ///< another library's memory in this process
  /// Another library's memory on one GPU only (ordinal → bytes); a reset of that GPU takes it.
  std::map<int, std::uint64_t> foreign_bytes_on;
  bool nvml_sees_process = true;  ///< false: per-process memory unknown
  bool fail_synchronize = false;  ///< in-flight work failed (sticky error)
  /// Device memory of loaded modules and library handles: NVML counts it like
  /// any allocation. Whose it is depends on who loads it (set it in a lease:
  /// coolbench's). A reset takes it.
  std::uint64_t code_bytes = 0;
  // The bare-context probe, as the child process would answer it.
  std::uint64_t probe_granularity = 2 * mib;
  std::string probe_error;  ///< non-empty: the probe fails with this
  std::string driver_version = "580.159.04";
  std::vector<std::string> loaded_cuda_libraries;

  // --- what happened ----------------------------------------------------
  struct attribute_call {
    int ordinal;
    const void* kernel;
    kernel_attribute attribute;
    int value;
  };

  void make_context_exist(int ordinal) {  // another library creates it
    std::lock_guard lock(m_mutex);
    m_context[ordinal] = true;
  }
  [[nodiscard]] int resets() const {
    std::lock_guard lock(m_mutex);
    return m_resets;
  }
  [[nodiscard]] int contexts_created() const {
    std::lock_guard lock(m_mutex);
    return m_contexts_created;
  }
  [[nodiscard]] std::uint64_t allocated_bytes() const {
    std::lock_guard lock(m_mutex);
    std::uint64_t total = 0;
    for (const auto& [p, a] : m_allocations) total += a.size;
    return total;
  }
  [[nodiscard]] std::size_t live_streams() const {
    std::lock_guard lock(m_mutex);
    return m_streams.size();
  }
  [[nodiscard]] std::size_t live_events() const {
    std::lock_guard lock(m_mutex);
    return m_events.size();
  }
  [[nodiscard]] std::vector<attribute_call> attribute_calls() const {
    std::lock_guard lock(m_mutex);
    return m_attributes;
  }
  [[nodiscard]] bool freed_twice() const {
    std::lock_guard lock(m_mutex);
    return m_bad_free;
  }
  [[nodiscard]] int probe_runs() const {
    std::lock_guard lock(m_mutex);
    return m_probe_runs;
  }
  /// The calls that change a GPU's state or need it current, as "name ordinal"
  /// ("reset 1", "free 0", "make_current 2"): which GPU each call touched.
  [[nodiscard]] std::vector<std::string> calls() const {
    std::lock_guard lock(m_mutex);
    return m_calls;
  }
  /// Whether a call named a GPU other than the one its pointer, stream or event was made on.
  [[nodiscard]] bool crossed_devices() const {
    std::lock_guard lock(m_mutex);
    return m_crossed;
  }
  [[nodiscard]] std::uint64_t allocated_bytes_on(int ordinal) const {
    std::lock_guard lock(m_mutex);
    std::uint64_t total = 0;
    for (const auto& [p, a] : m_allocations) total += a.ordinal == ordinal ? a.size : 0;
    return total;
  }
  /// The GPU current in the calling thread, as make_current and create_context set it; -1 none.
  [[nodiscard]] static int current_device() { return current(); }

  // --- gpu_api ------------------------------------------------------------
  int device_count() override { return devices; }
  void check_device(int ordinal) override {
    if (ordinal < 0 || ordinal >= devices) {
      throw invalid_argument("no GPU with CUDA ordinal " + std::to_string(ordinal));
    }
  }
  bool context_active(int ordinal) override {
    std::lock_guard lock(m_mutex);
    return m_context[ordinal];
  }
  void create_context(int ordinal) override {
    std::lock_guard lock(m_mutex);
    if (!m_context[ordinal]) ++m_contexts_created;
    m_context[ordinal] = true;
    current() = ordinal;
  }
  void make_current(int ordinal) override {
    std::lock_guard lock(m_mutex);
    log("make_current", ordinal);
    current() = ordinal;
  }
  void* allocate(int ordinal, std::size_t bytes) override {
    std::lock_guard lock(m_mutex);
    require_context(ordinal);
    std::uint64_t used = 0;
    for (const auto& [p, a] : m_allocations) used += a.size;
    if (used + bytes > capacity_bytes) return nullptr;
    void* pointer = next_address(bytes);
    m_allocations[pointer] = {ordinal, bytes};
    return pointer;
  }
  void free(int ordinal, void* pointer) noexcept override {
    std::lock_guard lock(m_mutex);
    log("free", ordinal);
    const auto it = m_allocations.find(pointer);
    if (it == m_allocations.end()) {
      m_bad_free = true;
      return;
    }
    if (it->second.ordinal != ordinal) m_crossed = true;
    m_allocations.erase(it);
  }
  CUstream_st* create_stream(int ordinal) override {
    std::lock_guard lock(m_mutex);
    require_context(ordinal);
    auto* stream = static_cast<CUstream_st*>(next_address());
    m_streams[stream] = ordinal;
    return stream;
  }
  void destroy_stream(int ordinal, CUstream_st* stream) noexcept override {
    std::lock_guard lock(m_mutex);
    log("destroy_stream", ordinal);
    const auto it = m_streams.find(stream);
    if (it == m_streams.end()) {
      m_bad_free = true;
      return;
    }
    if (it->second != ordinal) m_crossed = true;
    m_streams.erase(it);
  }
  CUevent_st* create_event(int ordinal) override {
    std::lock_guard lock(m_mutex);
    require_context(ordinal);
    auto* event = static_cast<CUevent_st*>(next_address());
    m_events[event] = ordinal;
    return event;
  }
  void destroy_event(int ordinal, CUevent_st* event) noexcept override {
    std::lock_guard lock(m_mutex);
    log("destroy_event", ordinal);
    const auto it = m_events.find(event);
    if (it == m_events.end()) {
      m_bad_free = true;
      return;
    }
    if (it->second != ordinal) m_crossed = true;
    m_events.erase(it);
  }
  void set_kernel_attribute(int ordinal, const void* kernel, kernel_attribute attribute,
                            int value) override {
    std::lock_guard lock(m_mutex);
    require_context(ordinal);
    m_attributes.push_back({ordinal, kernel, attribute, value});
  }
  void synchronize(int ordinal) override {
    std::lock_guard lock(m_mutex);
    log("synchronize", ordinal);
    require_context(ordinal);
    if (fail_synchronize)
      throw cuda_error("cudaDeviceSynchronize failed: cudaErrorIllegalAddress", 700);
  }
  void reset(int ordinal) override {
    std::lock_guard lock(m_mutex);
    log("reset", ordinal);
    ++m_resets;
    m_context[ordinal] = false;
    // The context takes everything of its GPU with it, as a real reset does.
    std::erase_if(m_allocations, [&](const auto& a) { return a.second.ordinal == ordinal; });
    std::erase_if(m_streams, [&](const auto& e) { return e.second == ordinal; });
    std::erase_if(m_events, [&](const auto& e) { return e.second == ordinal; });
    foreign_bytes_on.erase(ordinal);
    foreign_bytes = 0;
    code_bytes = 0;
  }
  std::optional<std::uint64_t> process_memory_bytes(int ordinal) override {
    std::lock_guard lock(m_mutex);
    if (!nvml_sees_process) return std::nullopt;
    if (!m_context[ordinal]) return 0;
    std::uint64_t total = context_baseline_bytes + foreign_bytes + code_bytes;
    if (const auto f = foreign_bytes_on.find(ordinal); f != foreign_bytes_on.end())
      total += f->second;
    for (const auto& [p, a] : m_allocations) total += a.ordinal == ordinal ? a.size : 0;
    return total;
  }
  std::optional<bool> process_listed(int ordinal) override {
    std::lock_guard lock(m_mutex);
    if (!nvml_sees_process) return std::nullopt;
    return m_context[ordinal];
  }
  process_memory_reading process_memory(int ordinal) override {
    process_memory_reading r;
    r.bytes = process_memory_bytes(ordinal);
    if (!r.bytes) r.why_not = "scripted: NVML does not list this process";
    return r;
  }
  detail::baseline_key baseline_key_of(int /*ordinal*/) override {
    std::lock_guard lock(m_mutex);
    return {"GPU-fake", driver_version, 13000, 13000};
  }
  detail::bare_context_figures measure_bare_context(int /*ordinal*/,
                                                    const detail::baseline_key& /*key*/) override {
    std::lock_guard lock(m_mutex);
    ++m_probe_runs;
    if (!probe_error.empty()) throw error(probe_error);
    const std::uint64_t b = context_baseline_bytes;
    return {b, b, b, b, probe_granularity, "2026-12-04T10:00:00Z", "scripted probe"};
  }
  std::chrono::milliseconds nvml_settle_time() override { return std::chrono::milliseconds(0); }
  std::vector<std::string> cuda_libraries() override {
    std::lock_guard lock(m_mutex);
    return loaded_cuda_libraries;
  }

 private:
  void require_context(int ordinal) {
    if (!m_context[ordinal]) throw std::logic_error("fake GPU: call without a context");
  }
  /// A fresh address range of `bytes` (at least 4 KiB), as the driver's would not overlap.
  void* next_address(std::size_t bytes = 0x1000) {
    const std::uintptr_t address = m_next;
    m_next += (std::max<std::size_t>(bytes, 0x1000) + 0xfff) & ~std::uintptr_t{0xfff};
    return reinterpret_cast<void*>(address);  // NOLINT: a fake address, never dereferenced
  }

  struct allocation {
    int ordinal;
    std::uint64_t size;
  };
  static int& current() {
    thread_local int device = -1;
    return device;
  }
  void log(const char* name, int ordinal) {
    m_calls.push_back(std::string(name) + " " + std::to_string(ordinal));
  }

  mutable std::mutex m_mutex;
  std::map<int, bool> m_context;
  std::map<void*, allocation> m_allocations;
  std::map<CUstream_st*, int> m_streams;
  std::map<CUevent_st*, int> m_events;
  std::vector<std::string> m_calls;
  bool m_crossed = false;
  std::vector<attribute_call> m_attributes;
  std::uintptr_t m_next = 0x10000000;
  int m_resets = 0;
  int m_probe_runs = 0;
  int m_contexts_created = 0;
  bool m_bad_free = false;
};

/// Points the bare-context cache ($XDG_CACHE_HOME) at a fresh temporary
/// folder, so that tests never read or write the user's cache. Returns it.
inline std::filesystem::path use_temporary_cache_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "coolbench-test-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  setenv("XDG_CACHE_HOME", pattern.c_str(), 1);
  return pattern;
}

}  // namespace coolbench::device::testing
