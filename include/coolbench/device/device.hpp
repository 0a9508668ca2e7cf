/// @file
/// The CUDA device lifecycle: leases, owned resources, and a release that
/// hands the GPU back from inside the process (docs/device.md).
///
///   auto& gpu = coolbench::device::device::get(0);
///   {
///     auto lease = gpu.acquire();           // creates the context if needed
///     auto buffer = lease.allocate(1 << 20);
///     ... launch work on lease.stream() ...
///   }
///   auto report = gpu.release();           // every byte freed, context reset
///   auto again = gpu.acquire();            // a fresh context, attributes re-applied
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "coolbench/core/error.hpp"
#include "coolbench/device/resource.hpp"

struct CUstream_st;  // cudaStream_t is CUstream_st*
struct CUevent_st;   // cudaEvent_t is CUevent_st*

namespace coolbench::device {

class device;
class lease;
struct device_state;

/// A release was refused; nothing was changed. The message says why and how
/// to proceed (end the other leases, free the other library's memory, or force).
class release_refused : public error {
 public:
  using error::error;
};

/// A handle from before a release was used. Allocate or create it again.
class stale_resource : public error {
 public:
  using error::error;
};

/// Device memory from the caching allocator. Move-only; returns its block to
/// the cache when destroyed. After a release, get() throws stale_resource.
class buffer {
 public:
  buffer() = default;
  ~buffer();
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  buffer(buffer&& other) noexcept;
  buffer& operator=(buffer&& other) noexcept;

  /// The device pointer. Throws stale_resource after a release.
  [[nodiscard]] void* get() const;
  [[nodiscard]] std::size_t size() const noexcept { return m_size; }
  [[nodiscard]] std::uint64_t generation() const noexcept { return m_generation; }
  /// False for a default-constructed or moved-from buffer, or after a release.
  [[nodiscard]] bool valid() const noexcept;

 private:
  friend class lease;
  buffer(std::shared_ptr<device_state> state, void* pointer, std::size_t size,
         std::uint64_t generation)
      : m_state(std::move(state)), m_pointer(pointer), m_size(size), m_generation(generation) {}
  void reset() noexcept;

  std::shared_ptr<device_state> m_state;
  void* m_pointer = nullptr;
  std::size_t m_size = 0;
  std::uint64_t m_generation = 0;
};

/// A resource of another library (a cuBLAS handle, a CUDA graph, a module)
/// registered with the device, so that a release destroys it first. Destroys
/// it when dropped (unless a release already did). Move-only.
class owned_resource {
 public:
  owned_resource() = default;
  ~owned_resource();
  owned_resource(const owned_resource&) = delete;
  owned_resource& operator=(const owned_resource&) = delete;
  owned_resource(owned_resource&& other) noexcept;
  owned_resource& operator=(owned_resource&& other) noexcept;

  /// False after a release destroyed it, or when empty.
  [[nodiscard]] bool valid() const noexcept;
  [[nodiscard]] std::uint64_t generation() const noexcept { return m_generation; }

 private:
  friend class lease;
  owned_resource(std::shared_ptr<device_state> state, std::uint64_t id, std::uint64_t generation)
      : m_state(std::move(state)), m_id(id), m_generation(generation) {}
  void reset() noexcept;

  std::shared_ptr<device_state> m_state;
  std::uint64_t m_id = 0;
  std::uint64_t m_generation = 0;
};

/// Held by a component while it uses the GPU. A release is refused while a
/// lease is held in another thread. Taking one (re)creates the context when
/// needed and re-applies registered kernel attributes. Move-only; a lease is
/// used from the thread that took it.
class lease {
 public:
  ~lease();
  lease(const lease&) = delete;
  lease& operator=(const lease&) = delete;
  lease(lease&& other) noexcept;
  lease& operator=(lease&& other) = delete;

  [[nodiscard]] int ordinal() const noexcept;
  /// The context generation this lease works in; it changes at each release.
  [[nodiscard]] std::uint64_t generation() const noexcept { return m_generation; }

  /// Device memory from the caching allocator. Throws cuda_error when the GPU
  /// is out of memory even after the cache was emptied.
  [[nodiscard]] buffer allocate(std::size_t bytes);

  /// The device's default coolbench stream in this generation (created on
  /// first use, destroyed by a release).
  [[nodiscard]] CUstream_st* stream();
  /// A new event in this generation, destroyed by a release at the latest.
  [[nodiscard]] CUevent_st* create_event();

  /// Sets a kernel attribute now and in every context created after a
  /// release (`kernel` is the kernel's host function pointer).
  void set_kernel_attribute(const void* kernel, kernel_attribute attribute, int value);

  /// Registers a resource another library created in this context; `destroy`
  /// is called once: when the returned handle is dropped, or by a release.
  [[nodiscard]] owned_resource adopt(resource_kind kind, std::function<void()> destroy);

  /// Waits for all work on the device.
  void synchronize();

 private:
  friend class device;
  explicit lease(std::shared_ptr<device_state> state);
  std::shared_ptr<device_state> m_state;
  std::uint64_t m_generation = 0;
};

/// What a release may do.
struct release_options {
  /// Release even when memory this library did not allocate is live in the
  /// process. That memory's owners then hold dangling pointers: use it only
  /// when they are known to be done with the GPU.
  bool force = false;
  /// How long to wait for leases held in other threads to end before
  /// refusing; zero refuses at once.
  std::chrono::milliseconds wait_for_leases{0};
};

/// What a release did.
struct release_report {
  int ordinal = -1;
  bool released = false;       ///< false: nothing to release (a no-op)
  bool context_reset = false;  ///< the primary context was reset
  bool forced = false;
  std::string note;                    ///< e.g. "nothing to release"
  std::uint64_t bytes_freed = 0;       ///< live and cached device memory
  std::uint64_t live_bytes_freed = 0;  ///< of which still referenced by buffers (now stale)
  resource_counts destroyed{};         ///< resources destroyed, by kind
  double seconds = 0;                  ///< wall time of the release
  std::uint64_t generation_after = 0;
  /// Device memory of this process that this library did not allocate, as
  /// checked before releasing (NVML's per-process figure, less this
  /// library's own memory and the context's baseline); empty when unknown.
  std::optional<std::int64_t> foreign_bytes;
  std::string foreign_check;  ///< how foreign_bytes was found, or why it was not
  /// "none", "foreign memory live" (another runtime's memory: its pointers
  /// would dangle), "foreign context state without memory" (another runtime
  /// made the context: its handles and streams go with it) or "unknown".
  std::string foreign_state;
  std::string context_made_by;                  ///< "coolbench" or "another runtime (loaded: …)"
  std::optional<std::uint64_t> process_bytes;   ///< NVML's figure for this process before
  std::optional<std::uint64_t> baseline_bytes;  ///< the context's share of it
  std::string baseline_source;                  ///< where baseline_bytes came from
  std::uint64_t coolbench_bytes = 0;            ///< coolbench's own share of it
  std::uint64_t granularity_bytes = 0;          ///< the step NVML's figure moves in
  std::uint64_t threshold_bytes = 0;            ///< refused from this many foreign bytes
  /// What another runtime holds that the reset made invalid; "" when nothing.
  std::string dangling;
  /// Whether NVML still lists this process on the GPU right after the reset;
  /// empty when NVML cannot tell.
  std::optional<bool> process_listed_after;
};

/// Caching-allocator and registry figures of one device.
struct device_status {
  int ordinal = -1;
  bool context_active = false;  ///< this library holds a context now
  std::uint64_t generation = 0;
  std::uint64_t leases = 0;
  std::uint64_t live_bytes = 0;    ///< handed out in buffers
  std::uint64_t cached_bytes = 0;  ///< freed by buffers, kept for reuse
  std::uint64_t peak_bytes = 0;    ///< the most live + cached at once, since the last release
  resource_counts resources{};     ///< live resources, by kind (allocation counts blocks)
  std::uint64_t releases = 0;
};

/// The process-wide state of one CUDA ordinal.
class device {
 public:
  /// The device with this CUDA ordinal. Throws invalid_argument when there is
  /// no such GPU and not_available without a CUDA driver.
  [[nodiscard]] static device& get(int ordinal);
  /// GPUs the CUDA runtime sees (0 without a driver).
  [[nodiscard]] static int count();

  [[nodiscard]] int ordinal() const noexcept;
  [[nodiscard]] lease acquire();
  /// Makes this GPU the calling thread's current CUDA device, its primary context made (by
  /// this library, as a lease makes it) when none exists; no lease is taken. A worker thread
  /// of one GPU calls it before code that uses the current device rather than a lease (a
  /// framework's default device, CuPy, the runtime's default stream): a thread that never
  /// set one works on GPU 0 and would make a context there.
  void make_current();
  /// Waits for in-flight work, destroys every registered resource, frees all
  /// memory and resets the primary context. Refuses (release_refused,
  /// nothing changed) while another thread holds a lease, or while memory
  /// this library did not allocate is live in the process, unless forced.
  release_report release(const release_options& options = {});
  [[nodiscard]] device_status status() const;
  /// Returns cached blocks to the driver (the context stays).
  void empty_cache();

  explicit device(std::shared_ptr<device_state> state);
  ~device();
  device(const device&) = delete;
  device& operator=(const device&) = delete;
  device(device&&) = delete;
  device& operator=(device&&) = delete;

 private:
  std::shared_ptr<device_state> m_state;
};

/// Another process makes a CUDA context on GPU `ordinal` and exits (the bare-context probe,
/// coolbench-context-probe); this process's context, if any, lives on. In the reference program
/// of docs/perf/hidden-state.md that cleared the hidden order effect as a context reset did.
/// Returns the wall time in seconds (about 0.2 s on the H200). Throws error when the probe is
/// missing or fails.
double touch_from_another_process(int ordinal);

}  // namespace coolbench::device
