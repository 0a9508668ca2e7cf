#include "telemetry/detail/cuda_driver.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>

#include "coolbench/core/error.hpp"
#include "core/dynamic_library.hpp"

namespace coolbench::telemetry::detail {
namespace {

using cu_result = int;
constexpr cu_result cuda_success = 0;
constexpr cu_result cuda_error_no_device = 100;

struct cuda_driver_api {
  core::dynamic_library library;
  cu_result (*init)(unsigned) = nullptr;
  cu_result (*device_get_count)(int*) = nullptr;
  cu_result (*device_get)(int*, int) = nullptr;
  cu_result (*device_get_pci_bus_id)(char*, int, int) = nullptr;
  cu_result (*get_error_name)(cu_result, const char**) = nullptr;

  std::string describe(cu_result result) const {
    const char* name = nullptr;
    if (get_error_name != nullptr) get_error_name(result, &name);
    return std::string(name != nullptr ? name : "CUDA_ERROR") + " (" + std::to_string(result) + ")";
  }
};

std::vector<std::string> cuda_library_names() {
  if (const char* path = std::getenv("COOLBENCH_CUDA_LIBRARY"); path != nullptr && *path != '\0') {
    return {path};
  }
  return {"libcuda.so.1", "libcuda.so"};
}

template <class Fn>
void bind(const core::dynamic_library& library, Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(library.find(name));  // NOLINT: dlsym's contract
  if (fn == nullptr) {
    throw not_available(library.name() + " does not export " + name +
                        ": the CUDA driver is too old or broken. Install a current NVIDIA driver.");
  }
}

// The driver stays loaded for the life of the process once cuInit has run in
// it: unloading a driver that started its threads is not safe. This is the
// library handle only; no context or per-context state is kept.
cuda_driver_api& driver() {
  static std::mutex mutex;
  static std::optional<cuda_driver_api> api;
  std::lock_guard lock(mutex);
  if (!api) {
    cuda_driver_api loaded{core::dynamic_library(
        cuda_library_names(),
        "Mapping CUDA ordinals to GPUs needs the NVIDIA driver (libcuda.so.1 is part of it).")};
    bind(loaded.library, loaded.init, "cuInit");
    bind(loaded.library, loaded.device_get_count, "cuDeviceGetCount");
    bind(loaded.library, loaded.device_get, "cuDeviceGet");
    bind(loaded.library, loaded.device_get_pci_bus_id, "cuDeviceGetPCIBusId");
    loaded.get_error_name = reinterpret_cast<cu_result (*)(cu_result, const char**)>(  // NOLINT
        loaded.library.find("cuGetErrorName"));
    api.emplace(std::move(loaded));
  }
  return *api;
}

}  // namespace

std::vector<std::string> cuda_pci_bus_ids() {
  auto& api = driver();
  if (const cu_result result = api.init(0); result != cuda_success) {
    if (result == cuda_error_no_device) return {};
    throw not_available(
        "cuInit failed: " + api.describe(result) +
        ". The CUDA driver cannot start: check nvidia-smi and CUDA_VISIBLE_DEVICES.");
  }
  int count = 0;
  if (const cu_result result = api.device_get_count(&count); result != cuda_success) {
    throw cuda_error("cuDeviceGetCount failed: " + api.describe(result), result);
  }
  std::vector<std::string> ids;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    int device = 0;
    std::array<char, 32> bus_id{};
    cu_result result = api.device_get(&device, ordinal);
    if (result == cuda_success) {
      result = api.device_get_pci_bus_id(bus_id.data(), static_cast<int>(bus_id.size()), device);
    }
    if (result != cuda_success) {
      throw cuda_error("cuDeviceGetPCIBusId for CUDA device " + std::to_string(ordinal) +
                           " failed: " + api.describe(result),
                       result);
    }
    ids.emplace_back(bus_id.data());
  }
  return ids;
}

long long pci_bus_key(const std::string& bus_id) noexcept {
  unsigned domain = 0;
  unsigned bus = 0;
  unsigned device = 0;
  unsigned function = 0;
  if (std::sscanf(bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4) return -1;
  return (static_cast<long long>(domain) << 24) | (static_cast<long long>(bus) << 16) |
         (static_cast<long long>(device) << 8) | function;
}

}  // namespace coolbench::telemetry::detail
