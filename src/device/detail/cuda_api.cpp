// gpu_api over the CUDA runtime (linked statically, so binaries start without
// a driver), NVML through the telemetry layer, and the driver's
// cuDevicePrimaryCtxGetState opened at run time.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <map>
#include <mutex>

#include "coolbench/core/error.hpp"
#include "coolbench/telemetry/gpu.hpp"
#include "core/cuda_check.hpp"
#include "core/dynamic_library.hpp"
#include "device/detail/context_probe_runner.hpp"
#include "device/detail/gpu_api.hpp"

namespace coolbench::device::detail {
namespace {

cudaFuncAttribute to_cuda(kernel_attribute attribute) {
  switch (attribute) {
    case kernel_attribute::max_dynamic_shared_memory_bytes:
      return cudaFuncAttributeMaxDynamicSharedMemorySize;
    case kernel_attribute::preferred_shared_memory_carveout:
      return cudaFuncAttributePreferredSharedMemoryCarveout;
  }
  throw invalid_argument("unknown kernel attribute");
}

class cuda_api final : public gpu_api {
 public:
  int device_count() override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return count;
  }

  void check_device(int ordinal) override {
    int count = 0;
    const cudaError_t result = cudaGetDeviceCount(&count);
    if (result == cudaErrorInsufficientDriver || result == cudaErrorNoDevice ||
        result == cudaErrorInitializationError) {
      cudaGetLastError();
      throw not_available(std::string("no usable GPU: cudaGetDeviceCount says ") +
                          cudaGetErrorName(result) + " (" + cudaGetErrorString(result) +
                          "). The device layer needs an NVIDIA GPU and driver.");
    }
    COOLBENCH_CUDA_CALL(result);
    if (ordinal < 0 || ordinal >= count) {
      throw invalid_argument("no GPU with CUDA ordinal " + std::to_string(ordinal) +
                             ": CUDA sees " + std::to_string(count) + " GPU(s)");
    }
  }

  bool context_active(int ordinal) override {
    const auto& driver = driver_api();
    if (driver.primary_ctx_get_state == nullptr) return false;
    int device = 0;
    unsigned flags = 0;
    int active = 0;
    if (driver.device_get(&device, ordinal) != 0) return false;
    return driver.primary_ctx_get_state(device, &flags, &active) == 0 && active != 0;
  }

  void create_context(int ordinal) override {
    COOLBENCH_CUDA_CALL(cudaSetDevice(ordinal));
    COOLBENCH_CUDA_CALL(cudaFree(nullptr));  // makes the primary context exist now
  }

  void make_current(int ordinal) override { COOLBENCH_CUDA_CALL(cudaSetDevice(ordinal)); }

  void* allocate(int ordinal, std::size_t bytes) override {
    COOLBENCH_CUDA_CALL(cudaSetDevice(ordinal));
    void* pointer = nullptr;
    const cudaError_t result = cudaMalloc(&pointer, bytes);
    if (result == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return nullptr;
    }
    COOLBENCH_CUDA_CALL(result);
    return pointer;
  }

  void free(int ordinal, void* pointer) noexcept override {
    COOLBENCH_CUDA_CALL_NOEXCEPT(cudaSetDevice(ordinal));
    COOLBENCH_CUDA_CALL_NOEXCEPT(cudaFree(pointer));
  }

  CUstream_st* create_stream(int ordinal) override {
    COOLBENCH_CUDA_CALL(cudaSetDevice(ordinal));
    cudaStream_t stream = nullptr;
    COOLBENCH_CUDA_CALL(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    return stream;
  }

  void destroy_stream(int ordinal, CUstream_st* stream) noexcept override {
    COOLBENCH_CUDA_CALL_NOEXCEPT(cudaSetDevice(ordinal));
    COOLBENCH_CUDA_CALL_NOEXCEPT(cudaStreamDestroy(stream));
  }

  CUevent_st* create_event(int ordinal) override {
    COOLBENCH_CUDA_CALL(cudaSetDevice(ordinal));
    cudaEvent_t event = nullptr;
    COOLBENCH_CUDA_CALL(cudaEventCreate(&event));
    return event;
  }

  void destroy_event(int ordinal, CUevent_st* event) noexcept override {
    COOLBENCH_CUDA_CALL_NOEXCEPT(cudaSetDevice(ordinal));
    COOLBENCH_CUDA_CALL_NOEXCEPT(cudaEventDestroy(event));
  }

  void set_kernel_attribute(int ordinal, const void* kernel, kernel_attribute attribute,
                            int value) override {
    COOLBENCH_CUDA_CALL(cudaSetDevice(ordinal));
    COOLBENCH_CUDA_CALL(cudaFuncSetAttribute(kernel, to_cuda(attribute), value));
  }

  void synchronize(int ordinal) override {
    COOLBENCH_CUDA_CALL(cudaSetDevice(ordinal));
    COOLBENCH_CUDA_CALL(cudaDeviceSynchronize());
  }

  void reset(int ordinal) override {
    COOLBENCH_CUDA_CALL(cudaSetDevice(ordinal));
    COOLBENCH_CUDA_CALL(cudaDeviceReset());
  }

  std::optional<std::uint64_t> process_memory_bytes(int ordinal) override {
    return process_memory(ordinal).bytes;
  }

  process_memory_reading process_memory(int ordinal) override {
    process_memory_reading r;
    const auto entry = this_process(ordinal);
    if (!entry.nvml_answered) {
      r.why_not = "NVML is not available: " + entry.why_not;
    } else if (!entry.listed) {
      // Not listed although a context exists: NVML sees another PID
      // namespace (a container), so it cannot tell.
      if (context_active(ordinal)) {
        r.why_not = "NVML does not list this process (pid " + std::to_string(getpid()) +
                    ") although it holds a context: another PID namespace, e.g. a container";
      } else {
        r.bytes = 0;
      }
    } else if (!entry.memory) {
      r.why_not =
          "NVML lists this process but gives no memory figure for it (per-process "
          "accounting is not supported here)";
    } else {
      r.bytes = entry.memory;
    }
    return r;
  }

  baseline_key baseline_key_of(int ordinal) override {
    std::lock_guard lock(m_mutex);
    const auto& id = telemetry_for(ordinal).identity();
    baseline_key key{id.uuid, id.driver_version, 0, 0};
    if (id.cuda_driver_version.ok()) key.cuda_driver_version = id.cuda_driver_version.value;
    cudaRuntimeGetVersion(&key.cuda_runtime_version);
    return key;
  }

  bare_context_figures measure_bare_context(int ordinal, const baseline_key& key) override {
    return run_context_probe(ordinal, key);
  }

  std::optional<bool> process_listed(int ordinal) override {
    const auto entry = this_process(ordinal);
    if (!entry.nvml_answered) return std::nullopt;
    return entry.listed;
  }

 private:
  struct driver_functions {
    core::dynamic_library library;
    int (*device_get)(int*, int) = nullptr;
    int (*primary_ctx_get_state)(int, unsigned*, int*) = nullptr;
  };

  // The driver library is the one the CUDA runtime itself opened.
  static const driver_functions& driver_api() {
    static const driver_functions functions = [] {
      driver_functions f{
          core::dynamic_library({"libcuda.so.1", "libcuda.so"}, "The CUDA driver is missing.")};
      f.device_get = reinterpret_cast<int (*)(int*, int)>(f.library.find("cuDeviceGet"));  // NOLINT
      f.primary_ctx_get_state = reinterpret_cast<int (*)(int, unsigned*, int*)>(           // NOLINT
          f.library.find("cuDevicePrimaryCtxGetState"));
      return f;
    }();
    return functions;
  }

  struct process_entry {
    bool nvml_answered = false;
    bool listed = false;
    std::optional<std::uint64_t> memory;
    std::string why_not;
  };

  // Call with m_mutex held.
  telemetry::gpu_telemetry& telemetry_for(int ordinal) {
    auto it = m_telemetry.find(ordinal);
    if (it == m_telemetry.end()) {
      it = m_telemetry.emplace(ordinal, std::make_unique<telemetry::gpu_telemetry>(ordinal)).first;
    }
    return *it->second;
  }

  process_entry this_process(int ordinal) {
    process_entry entry;
    try {
      std::lock_guard lock(m_mutex);
      const auto processes = telemetry_for(ordinal).processes();
      const auto pid = static_cast<std::uint32_t>(getpid());
      entry.nvml_answered = true;
      for (const auto& process : processes) {
        if (process.pid != pid) continue;
        entry.listed = true;
        if (process.used_memory_bytes.ok()) entry.memory = process.used_memory_bytes.value;
      }
    } catch (const error& e) {
      entry.nvml_answered = false;
      entry.why_not = e.what();
    }
    return entry;
  }

  std::mutex m_mutex;
  std::map<int, std::unique_ptr<telemetry::gpu_telemetry>> m_telemetry;
};

}  // namespace

std::shared_ptr<gpu_api> make_cuda_api() {
  // One per process: it caches NVML handles, nothing of any context.
  static const std::shared_ptr<gpu_api> api = std::make_shared<cuda_api>();
  return api;
}

}  // namespace coolbench::device::detail
