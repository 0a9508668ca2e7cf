// The part of NVML's C interface that coolbench calls, declared here because
// libnvidia-ml is opened at run time and no nvml.h is needed to build. Types,
// values and layouts follow NVML's documented ABI; field ids were checked on
// an H200 with driver 580.159.04 (see the comments at each).
#pragma once

#include <cstdint>

namespace coolbench::telemetry::detail {

using nvml_return = int;  // nvmlReturn_t
inline constexpr nvml_return nvml_success = 0;
inline constexpr nvml_return nvml_error_uninitialized = 1;
inline constexpr nvml_return nvml_error_invalid_argument = 2;
inline constexpr nvml_return nvml_error_not_supported = 3;
inline constexpr nvml_return nvml_error_no_permission = 4;
inline constexpr nvml_return nvml_error_not_found = 6;
inline constexpr nvml_return nvml_error_insufficient_size = 7;
inline constexpr nvml_return nvml_error_driver_not_loaded = 9;
inline constexpr nvml_return nvml_error_timeout = 10;
inline constexpr nvml_return nvml_error_function_not_found = 13;
inline constexpr nvml_return nvml_error_gpu_is_lost = 15;
inline constexpr nvml_return nvml_error_lib_rm_version_mismatch = 18;
inline constexpr nvml_return nvml_error_no_data = 21;
inline constexpr nvml_return nvml_error_unknown = 999;

struct nvml_device_st;
using nvml_device = nvml_device_st*;  // nvmlDevice_t

// nvmlTemperatureSensors_t / nvmlTemperatureThresholds_t
inline constexpr int nvml_temperature_gpu = 0;
inline constexpr int nvml_threshold_shutdown = 0;
inline constexpr int nvml_threshold_slowdown = 1;
inline constexpr int nvml_threshold_mem_max = 2;
inline constexpr int nvml_threshold_gpu_max = 3;

// nvmlClockType_t
inline constexpr int nvml_clock_graphics = 0;
inline constexpr int nvml_clock_sm = 1;
inline constexpr int nvml_clock_mem = 2;

// nvmlValueType_t
inline constexpr int nvml_value_double = 0;
inline constexpr int nvml_value_uint = 1;
inline constexpr int nvml_value_ulong = 2;
inline constexpr int nvml_value_ulonglong = 3;
inline constexpr int nvml_value_slonglong = 4;
inline constexpr int nvml_value_sint = 5;
inline constexpr int nvml_value_ushort = 6;

// Field ids for nvmlDeviceGetFieldValues.
inline constexpr std::uint32_t nvml_fi_perf_policy_power =
    74;  // = CLOCKS_EVENT_REASON_SW_POWER_CAP
inline constexpr std::uint32_t nvml_fi_perf_policy_sync_boost =
    76;  // = CLOCKS_EVENT_REASON_SYNC_BOOST
inline constexpr std::uint32_t nvml_fi_memory_temp = 82;
inline constexpr std::uint32_t nvml_fi_power_average = 185;  // mW
inline constexpr std::uint32_t nvml_fi_power_instant = 186;  // mW
inline constexpr std::uint32_t nvml_fi_energy = 191;         // mJ
// The three slowdown time counters. Driver 580.159.04 answers them at
// 269–271 (the CUDA 13 numbering) and reports 251–253 as not supported;
// earlier headers numbered them 251–253, which is the fallback.
inline constexpr std::uint32_t nvml_fi_reason_sw_thermal = 269;
inline constexpr std::uint32_t nvml_fi_reason_hw_thermal = 270;
inline constexpr std::uint32_t nvml_fi_reason_hw_power_brake = 271;
inline constexpr std::uint32_t nvml_fi_reason_sw_thermal_old = 251;
inline constexpr std::uint32_t nvml_fi_reason_hw_thermal_old = 252;
inline constexpr std::uint32_t nvml_fi_reason_hw_power_brake_old = 253;

union nvml_value {  // nvmlValue_t
  double d;
  unsigned int ui;
  unsigned long ul;        // NOLINT(google-runtime-int): NVML's type
  unsigned long long ull;  // NOLINT(google-runtime-int)
  long long sll;           // NOLINT(google-runtime-int)
  int si;
  unsigned short us;  // NOLINT(google-runtime-int)
};

struct nvml_field_value {  // nvmlFieldValue_t
  std::uint32_t field_id;
  std::uint32_t scope_id;
  std::int64_t timestamp_us;
  std::int64_t latency_us;
  int value_type;
  nvml_return nvml_result;
  nvml_value value;
};
static_assert(sizeof(nvml_field_value) == 40);

struct nvml_memory {         // nvmlMemory_t
  unsigned long long total;  // NOLINT(google-runtime-int)
  unsigned long long free;   // NOLINT(google-runtime-int)
  unsigned long long used;   // NOLINT(google-runtime-int)
};

// nvmlMemory_v2_t: `used` leaves out the memory the driver reserves, as
// nvidia-smi's memory.used does; v1's `used` counts it.
struct nvml_memory_v2 {
  unsigned int version;
  unsigned long long total;     // NOLINT(google-runtime-int)
  unsigned long long reserved;  // NOLINT(google-runtime-int)
  unsigned long long free;      // NOLINT(google-runtime-int)
  unsigned long long used;      // NOLINT(google-runtime-int)
};
static_assert(sizeof(nvml_memory_v2) == 40);
inline constexpr unsigned nvml_memory_v2_version = (2U << 24U) | sizeof(nvml_memory_v2);

struct nvml_utilization {  // nvmlUtilization_t
  unsigned int gpu;
  unsigned int memory;
};

struct nvml_process_info {  // nvmlProcessInfo_t (v2 and v3 share this layout)
  unsigned int pid;
  unsigned long long used_gpu_memory;  // NOLINT(google-runtime-int)
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
static_assert(sizeof(nvml_process_info) == 24);

// NVML writes this value for usedGpuMemory when it cannot tell (containers).
inline constexpr unsigned long long nvml_value_not_available = ~0ULL;  // NOLINT

struct nvml_pci_info {  // nvmlPciInfo_t
  char bus_id_legacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_subsystem_id;
  char bus_id[32];
};
static_assert(sizeof(nvml_pci_info) == 68);

// Buffer sizes NVML documents for its string queries.
inline constexpr unsigned nvml_name_buffer = 96;
inline constexpr unsigned nvml_uuid_buffer = 96;
inline constexpr unsigned nvml_version_buffer = 80;
inline constexpr unsigned nvml_process_name_buffer = 256;

// The signatures of the functions coolbench calls. The symbol names (with
// their versioned variants) are in nvml.cpp.
using nvml_init_fn = nvml_return (*)();
using nvml_shutdown_fn = nvml_return (*)();
using nvml_error_string_fn = const char* (*)(nvml_return);
using nvml_system_string_fn = nvml_return (*)(char*, unsigned);
using nvml_system_int_fn = nvml_return (*)(int*);
using nvml_system_process_name_fn = nvml_return (*)(unsigned, char*, unsigned);
using nvml_count_fn = nvml_return (*)(unsigned*);
using nvml_handle_by_index_fn = nvml_return (*)(unsigned, nvml_device*);
using nvml_handle_by_pci_fn = nvml_return (*)(const char*, nvml_device*);
using nvml_device_string_fn = nvml_return (*)(nvml_device, char*, unsigned);
using nvml_device_uint_fn = nvml_return (*)(nvml_device, unsigned*);
using nvml_device_int_fn = nvml_return (*)(nvml_device, int*);
using nvml_device_ull_fn = nvml_return (*)(nvml_device, unsigned long long*);  // NOLINT
using nvml_device_two_int_fn = nvml_return (*)(nvml_device, int*, int*);
using nvml_pci_info_fn = nvml_return (*)(nvml_device, nvml_pci_info*);
using nvml_temperature_fn = nvml_return (*)(nvml_device, int, unsigned*);
using nvml_threshold_fn = nvml_return (*)(nvml_device, int, unsigned*);
using nvml_clock_fn = nvml_return (*)(nvml_device, int, unsigned*);
using nvml_memory_fn = nvml_return (*)(nvml_device, nvml_memory*);
using nvml_memory_v2_fn = nvml_return (*)(nvml_device, nvml_memory_v2*);
using nvml_utilization_fn = nvml_return (*)(nvml_device, nvml_utilization*);
using nvml_field_values_fn = nvml_return (*)(nvml_device, int, nvml_field_value*);
using nvml_processes_fn = nvml_return (*)(nvml_device, unsigned*, nvml_process_info*);
using nvml_common_ancestor_fn = nvml_return (*)(nvml_device, nvml_device, int*);
using nvml_nvlink_state_fn = nvml_return (*)(nvml_device, unsigned, unsigned*);
using nvml_nvlink_remote_pci_fn = nvml_return (*)(nvml_device, unsigned, nvml_pci_info*);
using nvml_p2p_status_fn = nvml_return (*)(nvml_device, nvml_device, int, int*);

// nvmlGpuTopologyLevel_t: how far apart two GPUs sit on the PCIe tree.
inline constexpr int nvml_topology_internal = 0;       // the same board
inline constexpr int nvml_topology_single = 10;        // one PCIe switch
inline constexpr int nvml_topology_multiple = 20;      // several PCIe switches, no host bridge
inline constexpr int nvml_topology_hostbridge = 30;    // one host bridge
inline constexpr int nvml_topology_node = 40;          // host bridges of one NUMA node
inline constexpr int nvml_topology_system = 50;        // across NUMA nodes (SMP interconnect)
inline constexpr unsigned nvml_nvlink_max_links = 18;  // NVML_NVLINK_MAX_LINKS (H100/H200)
inline constexpr int nvml_p2p_caps_index_nvlink = 2;   // NVML_P2P_CAPS_INDEX_NVLINK
inline constexpr int nvml_p2p_status_ok = 0;

}  // namespace coolbench::telemetry::detail
