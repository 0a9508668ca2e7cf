#include "telemetry/detail/nvml.hpp"

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "coolbench/core/error.hpp"

namespace coolbench::telemetry::detail {
namespace {

template <class Fn>
Fn lookup(const core::dynamic_library& library, std::initializer_list<const char*> names) {
  return reinterpret_cast<Fn>(library.find_first(names));  // NOLINT: dlsym's contract
}

std::vector<std::string> nvml_library_names() {
  if (const char* path = std::getenv("COOLBENCH_NVML_LIBRARY"); path != nullptr && *path != '\0') {
    return {path};
  }
  return {"libnvidia-ml.so.1", "libnvidia-ml.so"};
}

constexpr const char* no_driver_hint =
    "No NVIDIA driver here? GPU telemetry needs it (libnvidia-ml.so.1 comes with the driver); "
    "without it only the host's CPU sensors work (coolbench info shows them).";

}  // namespace

const char* nvml_result_name(nvml_return result) noexcept {
  switch (result) {
    case 0: return "NVML_SUCCESS";
    case 1: return "NVML_ERROR_UNINITIALIZED";
    case 2: return "NVML_ERROR_INVALID_ARGUMENT";
    case 3: return "NVML_ERROR_NOT_SUPPORTED";
    case 4: return "NVML_ERROR_NO_PERMISSION";
    case 5: return "NVML_ERROR_ALREADY_INITIALIZED";
    case 6: return "NVML_ERROR_NOT_FOUND";
    case 7: return "NVML_ERROR_INSUFFICIENT_SIZE";
    case 8: return "NVML_ERROR_INSUFFICIENT_POWER";
    case 9: return "NVML_ERROR_DRIVER_NOT_LOADED";
    case 10: return "NVML_ERROR_TIMEOUT";
    case 11: return "NVML_ERROR_IRQ_ISSUE";
    case 12: return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case 13: return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case 14: return "NVML_ERROR_CORRUPTED_INFOROM";
    case 15: return "NVML_ERROR_GPU_IS_LOST";
    case 16: return "NVML_ERROR_RESET_REQUIRED";
    case 17: return "NVML_ERROR_OPERATING_SYSTEM";
    case 18: return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    case 19: return "NVML_ERROR_IN_USE";
    case 20: return "NVML_ERROR_MEMORY";
    case 21: return "NVML_ERROR_NO_DATA";
    case 22: return "NVML_ERROR_VGPU_ECC_NOT_ENABLED";
    case 23: return "NVML_ERROR_INSUFFICIENT_RESOURCES";
    case 24: return "NVML_ERROR_FREQ_NOT_SUPPORTED";
    case 25: return "NVML_ERROR_ARGUMENT_VERSION_MISMATCH";
    case 26: return "NVML_ERROR_DEPRECATED";
    case 27: return "NVML_ERROR_NOT_READY";
    case 28: return "NVML_ERROR_GPU_NOT_FOUND";
    case 29: return "NVML_ERROR_INVALID_STATE";
    case 999: return "NVML_ERROR_UNKNOWN";
    default: return "NVML_ERROR_(unknown code)";
  }
}

bool nvml_means_unsupported(nvml_return result) noexcept {
  return result == nvml_error_not_supported || result == nvml_error_function_not_found ||
         result == nvml_error_invalid_argument || result == nvml_error_no_permission ||
         result == nvml_error_not_found;
}

std::shared_ptr<nvml> nvml::acquire() {
  // One NVML per process while anyone uses it: a weak reference, so nothing
  // outlives its last user (no leaked singleton) and a later user re-inits.
  static std::mutex mutex;
  static std::weak_ptr<nvml> shared;
  std::lock_guard lock(mutex);
  if (auto existing = shared.lock()) return existing;
  auto created =
      std::make_shared<nvml>(core::dynamic_library(nvml_library_names(), no_driver_hint));
  shared = created;
  return created;
}

nvml::nvml(core::dynamic_library library) : m_library(std::move(library)) {
  const auto& lib = m_library;
  auto init = lookup<nvml_init_fn>(lib, {"nvmlInit_v2", "nvmlInit"});
  shutdown = lookup<nvml_shutdown_fn>(lib, {"nvmlShutdown"});
  device_get_count = lookup<nvml_count_fn>(lib, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  device_get_handle_by_index = lookup<nvml_handle_by_index_fn>(
      lib, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  device_get_handle_by_pci_bus_id = lookup<nvml_handle_by_pci_fn>(
      lib, {"nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId"});
  if (init == nullptr || shutdown == nullptr || device_get_count == nullptr ||
      device_get_handle_by_index == nullptr || device_get_handle_by_pci_bus_id == nullptr) {
    throw not_available(m_library.name() +
                        " lacks nvmlInit/nvmlShutdown/nvmlDeviceGetCount/nvmlDeviceGetHandleBy*: "
                        "it is not NVML or far too old. Install a current NVIDIA driver.");
  }
  error_string = lookup<nvml_error_string_fn>(lib, {"nvmlErrorString"});
  system_get_driver_version = lookup<nvml_system_string_fn>(lib, {"nvmlSystemGetDriverVersion"});
  system_get_nvml_version = lookup<nvml_system_string_fn>(lib, {"nvmlSystemGetNVMLVersion"});
  system_get_cuda_driver_version = lookup<nvml_system_int_fn>(
      lib, {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"});
  system_get_process_name = lookup<nvml_system_process_name_fn>(lib, {"nvmlSystemGetProcessName"});
  device_get_name = lookup<nvml_device_string_fn>(lib, {"nvmlDeviceGetName"});
  device_get_uuid = lookup<nvml_device_string_fn>(lib, {"nvmlDeviceGetUUID"});
  device_get_pci_info =
      lookup<nvml_pci_info_fn>(lib, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"});
  device_get_index = lookup<nvml_device_uint_fn>(lib, {"nvmlDeviceGetIndex"});
  device_get_cuda_compute_capability =
      lookup<nvml_device_two_int_fn>(lib, {"nvmlDeviceGetCudaComputeCapability"});
  device_get_temperature = lookup<nvml_temperature_fn>(lib, {"nvmlDeviceGetTemperature"});
  device_get_temperature_threshold =
      lookup<nvml_threshold_fn>(lib, {"nvmlDeviceGetTemperatureThreshold"});
  device_get_clock_info = lookup<nvml_clock_fn>(lib, {"nvmlDeviceGetClockInfo"});
  device_get_max_clock_info = lookup<nvml_clock_fn>(lib, {"nvmlDeviceGetMaxClockInfo"});
  device_get_max_customer_boost_clock =
      lookup<nvml_clock_fn>(lib, {"nvmlDeviceGetMaxCustomerBoostClock"});
  device_get_applications_clock = lookup<nvml_clock_fn>(lib, {"nvmlDeviceGetApplicationsClock"});
  device_get_default_applications_clock =
      lookup<nvml_clock_fn>(lib, {"nvmlDeviceGetDefaultApplicationsClock"});
  device_get_power_usage = lookup<nvml_device_uint_fn>(lib, {"nvmlDeviceGetPowerUsage"});
  device_get_enforced_power_limit =
      lookup<nvml_device_uint_fn>(lib, {"nvmlDeviceGetEnforcedPowerLimit"});
  device_get_power_default_limit =
      lookup<nvml_device_uint_fn>(lib, {"nvmlDeviceGetPowerManagementDefaultLimit"});
  device_get_power_limit_constraints = lookup<decltype(device_get_power_limit_constraints)>(
      lib, {"nvmlDeviceGetPowerManagementLimitConstraints"});
  device_get_total_energy_consumption =
      lookup<nvml_device_ull_fn>(lib, {"nvmlDeviceGetTotalEnergyConsumption"});
  device_get_performance_state = lookup<nvml_device_int_fn>(lib, {"nvmlDeviceGetPerformanceState"});
  device_get_persistence_mode = lookup<nvml_device_int_fn>(lib, {"nvmlDeviceGetPersistenceMode"});
  device_get_current_clock_reasons = lookup<nvml_device_ull_fn>(
      lib, {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  device_get_supported_clock_reasons = lookup<nvml_device_ull_fn>(
      lib,
      {"nvmlDeviceGetSupportedClocksEventReasons", "nvmlDeviceGetSupportedClocksThrottleReasons"});
  device_get_utilization_rates =
      lookup<nvml_utilization_fn>(lib, {"nvmlDeviceGetUtilizationRates"});
  device_get_memory_info = lookup<nvml_memory_fn>(lib, {"nvmlDeviceGetMemoryInfo"});
  device_get_memory_info_v2 = lookup<nvml_memory_v2_fn>(lib, {"nvmlDeviceGetMemoryInfo_v2"});
  device_get_field_values = lookup<nvml_field_values_fn>(lib, {"nvmlDeviceGetFieldValues"});
  device_get_compute_processes = lookup<nvml_processes_fn>(
      lib, {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"});
  device_get_graphics_processes = lookup<nvml_processes_fn>(
      lib,
      {"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2"});
  device_get_topology_common_ancestor =
      lookup<nvml_common_ancestor_fn>(lib, {"nvmlDeviceGetTopologyCommonAncestor"});
  device_get_nvlink_state = lookup<nvml_nvlink_state_fn>(lib, {"nvmlDeviceGetNvLinkState"});
  device_get_nvlink_remote_pci_info = lookup<nvml_nvlink_remote_pci_fn>(
      lib, {"nvmlDeviceGetNvLinkRemotePciInfo_v2", "nvmlDeviceGetNvLinkRemotePciInfo"});
  device_get_p2p_status = lookup<nvml_p2p_status_fn>(lib, {"nvmlDeviceGetP2PStatus"});

  if (const nvml_return result = init(); result != nvml_success) {
    if (result == nvml_error_driver_not_loaded || result == nvml_error_lib_rm_version_mismatch) {
      throw not_available("nvmlInit failed: " + describe(result) + ". " + no_driver_hint);
    }
    fail("nvmlInit", result);
  }
}

nvml::~nvml() { shutdown(); }

std::string nvml::describe(nvml_return result) const {
  std::string text = std::string(nvml_result_name(result)) + " (" + std::to_string(result) + ")";
  if (error_string != nullptr) {
    if (const char* message = error_string(result)) text += std::string(": ") + message;
  }
  return text;
}

void nvml::fail(const char* call, nvml_return result) const {
  const std::string message = std::string(call) + " failed: " + describe(result);
  if (result == nvml_error_driver_not_loaded || result == nvml_error_gpu_is_lost) {
    throw not_available(message + ". Check the driver and the GPU (nvidia-smi).");
  }
  throw nvml_error(message, result);
}

}  // namespace coolbench::telemetry::detail
