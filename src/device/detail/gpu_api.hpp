// What the device layer asks of CUDA, behind a small interface: one
// implementation over the CUDA runtime (cuda_api.cpp) and a scripted one in
// the tests, so the lease, registry and release logic run in CI without a GPU.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coolbench/device/resource.hpp"
#include "device/detail/context_baseline.hpp"

struct CUstream_st;
struct CUevent_st;

namespace coolbench::device::detail {

class gpu_api {
 public:
  virtual ~gpu_api() = default;

  /// GPUs visible to CUDA; 0 without a driver.
  [[nodiscard]] virtual int device_count() = 0;
  /// Throws not_available (no driver) or invalid_argument (no such device).
  virtual void check_device(int ordinal) = 0;
  /// Whether the primary context of `ordinal` exists (whoever created it).
  [[nodiscard]] virtual bool context_active(int ordinal) = 0;
  /// Makes `ordinal` current and its primary context exist.
  virtual void create_context(int ordinal) = 0;
  /// Makes `ordinal` the calling thread's current device (the CUDA runtime's
  /// is per thread): kernels and library calls of a lease's thread go to
  /// the lease's GPU, also when another thread made the context.
  virtual void make_current(int ordinal) { (void)ordinal; }

  /// nullptr when the device is out of memory; throws cuda_error otherwise.
  [[nodiscard]] virtual void* allocate(int ordinal, std::size_t bytes) = 0;
  virtual void free(int ordinal, void* pointer) noexcept = 0;
  [[nodiscard]] virtual CUstream_st* create_stream(int ordinal) = 0;
  virtual void destroy_stream(int ordinal, CUstream_st* stream) noexcept = 0;
  [[nodiscard]] virtual CUevent_st* create_event(int ordinal) = 0;
  virtual void destroy_event(int ordinal, CUevent_st* event) noexcept = 0;
  virtual void set_kernel_attribute(int ordinal, const void* kernel, kernel_attribute attribute,
                                    int value) = 0;
  /// Throws cuda_error when in-flight work failed.
  virtual void synchronize(int ordinal) = 0;
  /// Resets the primary context of `ordinal` (cudaDeviceReset).
  virtual void reset(int ordinal) = 0;

  /// Device memory NVML counts for this process on `ordinal`; empty when
  /// NVML cannot tell (no NVML, another PID namespace).
  [[nodiscard]] virtual std::optional<std::uint64_t> process_memory_bytes(int ordinal) = 0;
  /// Whether NVML lists this process on `ordinal`; empty when it cannot tell.
  [[nodiscard]] virtual std::optional<bool> process_listed(int ordinal) = 0;

  // --- what the foreign-state check needs (docs/device.md, "Foreign state") ---
  // Not pure: a gpu_api that cannot answer says so, and the check refuses.

  struct process_memory_reading {
    std::optional<std::uint64_t> bytes;
    std::string why_not;  ///< when bytes is empty
  };
  /// NVML's figure for this process, or why there is none.
  [[nodiscard]] virtual process_memory_reading process_memory(int ordinal);
  /// What a bare-context figure depends on. Throws when it cannot be read.
  [[nodiscard]] virtual baseline_key baseline_key_of(int ordinal);
  /// Measures the bare context in child processes; throws saying why not.
  [[nodiscard]] virtual bare_context_figures measure_bare_context(int ordinal,
                                                                  const baseline_key& key);
  /// CUDA runtimes and frameworks loaded in this process other than
  /// coolbench's own ("CuPy", "PyTorch (libtorch_cuda.so)", "libcudart.so.12"):
  /// who may have made the context. Informative only.
  [[nodiscard]] virtual std::vector<std::string> cuda_libraries();
  /// The module loading mode the driver applies here: "EAGER" or "LAZY".
  [[nodiscard]] virtual std::string module_loading();
  /// How long NVML's figure must hold still to count as settled: a change
  /// can reach it a little after the call that caused it.
  [[nodiscard]] virtual std::chrono::milliseconds nvml_settle_time() {
    return std::chrono::milliseconds(5);
  }
};

/// The implementation over the CUDA runtime, or one that reports "no CUDA"
/// when coolbench was built without the CUDA toolkit.
[[nodiscard]] std::shared_ptr<gpu_api> make_cuda_api();

/// Replaces the API every device created afterwards uses (tests only).
/// Devices already created keep theirs; call before the first device::get.
void use_gpu_api_for_testing(std::shared_ptr<gpu_api> api);

}  // namespace coolbench::device::detail
