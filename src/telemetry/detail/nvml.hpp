// NVML opened at run time. One instance is shared by every gpu_telemetry in
// the process while any of them lives; the last one out calls nvmlShutdown.
#pragma once

#include <memory>
#include <string>

#include "core/dynamic_library.hpp"
#include "telemetry/detail/nvml_api.hpp"

namespace coolbench::telemetry::detail {

class nvml {
 public:
  /// Loads libnvidia-ml (or $COOLBENCH_NVML_LIBRARY) and initialises it.
  /// Throws not_available without a driver, nvml_error on other failures.
  [[nodiscard]] static std::shared_ptr<nvml> acquire();

  explicit nvml(core::dynamic_library library);
  ~nvml();
  nvml(const nvml&) = delete;
  nvml& operator=(const nvml&) = delete;
  nvml(nvml&&) = delete;
  nvml& operator=(nvml&&) = delete;

  /// "NVML_ERROR_NOT_SUPPORTED (3): Not Supported".
  [[nodiscard]] std::string describe(nvml_return result) const;
  /// Throws nvml_error naming the call; not_available for driver problems.
  [[noreturn]] void fail(const char* call, nvml_return result) const;
  void check(const char* call, nvml_return result) const {
    if (result != nvml_success) fail(call, result);
  }

  // Required entry points: loading fails without them.
  nvml_shutdown_fn shutdown = nullptr;
  nvml_count_fn device_get_count = nullptr;
  nvml_handle_by_index_fn device_get_handle_by_index = nullptr;
  nvml_handle_by_pci_fn device_get_handle_by_pci_bus_id = nullptr;
  // Optional entry points: nullptr where this driver lacks them, and the
  // reading is then marked unsupported.
  nvml_error_string_fn error_string = nullptr;
  nvml_system_string_fn system_get_driver_version = nullptr;
  nvml_system_string_fn system_get_nvml_version = nullptr;
  nvml_system_int_fn system_get_cuda_driver_version = nullptr;
  nvml_system_process_name_fn system_get_process_name = nullptr;
  nvml_device_string_fn device_get_name = nullptr;
  nvml_device_string_fn device_get_uuid = nullptr;
  nvml_pci_info_fn device_get_pci_info = nullptr;
  nvml_device_uint_fn device_get_index = nullptr;
  nvml_device_two_int_fn device_get_cuda_compute_capability = nullptr;
  nvml_temperature_fn device_get_temperature = nullptr;
  nvml_threshold_fn device_get_temperature_threshold = nullptr;
  nvml_clock_fn device_get_clock_info = nullptr;
  nvml_clock_fn device_get_max_clock_info = nullptr;
  nvml_clock_fn device_get_max_customer_boost_clock = nullptr;
  nvml_clock_fn device_get_applications_clock = nullptr;
  nvml_clock_fn device_get_default_applications_clock = nullptr;
  nvml_device_uint_fn device_get_power_usage = nullptr;
  nvml_device_uint_fn device_get_enforced_power_limit = nullptr;
  nvml_device_uint_fn device_get_power_default_limit = nullptr;
  nvml_return (*device_get_power_limit_constraints)(nvml_device, unsigned*, unsigned*) = nullptr;
  nvml_device_ull_fn device_get_total_energy_consumption = nullptr;
  nvml_device_int_fn device_get_performance_state = nullptr;
  nvml_device_int_fn device_get_persistence_mode = nullptr;
  nvml_device_ull_fn device_get_current_clock_reasons = nullptr;
  nvml_device_ull_fn device_get_supported_clock_reasons = nullptr;
  nvml_utilization_fn device_get_utilization_rates = nullptr;
  nvml_memory_fn device_get_memory_info = nullptr;
  nvml_memory_v2_fn device_get_memory_info_v2 = nullptr;
  nvml_field_values_fn device_get_field_values = nullptr;
  nvml_processes_fn device_get_compute_processes = nullptr;
  nvml_processes_fn device_get_graphics_processes = nullptr;
  nvml_common_ancestor_fn device_get_topology_common_ancestor = nullptr;
  nvml_nvlink_state_fn device_get_nvlink_state = nullptr;
  nvml_nvlink_remote_pci_fn device_get_nvlink_remote_pci_info = nullptr;
  nvml_p2p_status_fn device_get_p2p_status = nullptr;

 private:
  core::dynamic_library m_library;
};

/// NVML's name of a result code, e.g. "NVML_ERROR_NOT_SUPPORTED".
[[nodiscard]] const char* nvml_result_name(nvml_return result) noexcept;

/// True for results that mean "this GPU or driver does not offer it" rather
/// than "the read failed".
[[nodiscard]] bool nvml_means_unsupported(nvml_return result) noexcept;

}  // namespace coolbench::telemetry::detail
