// What the test doubles of NVML (fake_nvml.cpp) and the CUDA driver (fake_cuda.cpp) report, so
// that tests can compare against the same constants. GPU i is 0-based; values that differ per
// GPU are functions of i. The environment variables that script the doubles are named here too;
// they are read when nvmlInit_v2 / cuInit is called (see the comment at the top of each file).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace coolbench::fake {

using ull = unsigned long long;  // NOLINT(google-runtime-int): NVML's type

// The scripting environment variables.
inline constexpr const char* env_nvml_init_result = "FAKE_NVML_INIT_RESULT";  // int, default 0
inline constexpr const char* env_nvml_gpus = "FAKE_NVML_GPUS";                // default 2
inline constexpr const char* env_nvml_unsupported = "FAKE_NVML_UNSUPPORTED";  // fn,fn → 3
inline constexpr const char* env_nvml_fail = "FAKE_NVML_FAIL";                // fn,fn → 999
inline constexpr const char* env_nvml_processes = "FAKE_NVML_PROCESSES";      // pid:bytes,...
// The energy counter moves by energy_step_mj every this many ms of the steady clock, counted from
// nvmlInit_v2; unset or 0: it never moves (reads fake::energy_mj).
inline constexpr const char* env_nvml_energy_period_ms = "FAKE_NVML_ENERGY_PERIOD_MS";
inline constexpr const char* env_cuda_init_result = "FAKE_CUDA_INIT_RESULT";  // int, default 0
inline constexpr const char* env_cuda_devices = "FAKE_CUDA_DEVICES";          // default "0,1"

inline constexpr unsigned default_gpu_count = 2;
inline constexpr unsigned max_gpu_count = 16;  // FAKE_NVML_GPUS above this is refused
inline constexpr std::string_view default_cuda_devices = "0,1";

// Identity of GPU i: PCI domain 0, bus i, device 0, function 0.
inline std::string gpu_name(unsigned i) { return "Fake GPU " + std::to_string(i); }
inline std::string gpu_uuid(unsigned i) {  // i = 1: "GPU-00000000-0000-0000-0000-000000000001"
  char text[48];
  std::snprintf(text, sizeof text, "GPU-00000000-0000-0000-0000-%012x", i);
  return text;
}
// NVML's form, 8-hex-digit domain, upper-case hex as nvidia-smi prints it: "00000000:01:00.0".
inline std::string nvml_bus_id(unsigned i) {
  char text[32];
  std::snprintf(text, sizeof text, "%08X:%02X:00.0", 0U, i);
  return text;
}
// NVML's 16-byte legacy form (nvmlPciInfo_t::busIdLegacy): "0000:01:00.0".
inline std::string nvml_legacy_bus_id(unsigned i) {
  char text[32];
  std::snprintf(text, sizeof text, "%04X:%02X:00.0", 0U, i & 0xFFU);
  return text;
}
// cuDeviceGetPCIBusId's form, 4-hex-digit domain: "0000:01:00.0". Lower-case hex on purpose, so
// that from bus 0a on a string comparison with the NVML form fails and only a numeric one works.
inline std::string cuda_bus_id(unsigned i) {
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:00.0", 0U, i & 0xFFU);
  return text;
}
inline constexpr unsigned pci_device_id = 0x233510DE;     // H200 SXM (device 2335, vendor 10de)
inline constexpr unsigned pci_subsystem_id = 0x18BE10DE;  // made up

// Temperatures, °C.
constexpr unsigned temperature_c(unsigned i) { return 40 + i; }
constexpr unsigned memory_temperature_c(unsigned i) { return 35 + i; }  // field 82
inline constexpr unsigned threshold_shutdown_c = 95;
inline constexpr unsigned threshold_slowdown_c = 89;
inline constexpr unsigned threshold_mem_max_c = 95;
inline constexpr unsigned threshold_gpu_max_c = 87;

// Clocks, MHz, by nvmlClockType_t (graphics 0, SM 1, memory 2; other types are refused with
// NVML_ERROR_INVALID_ARGUMENT).
struct clock_set {
  unsigned graphics;
  unsigned sm;
  unsigned mem;
};
inline constexpr clock_set current_clocks_mhz{1980, 1980, 3201};
inline constexpr clock_set max_clocks_mhz{1980, 1980, 3201};
inline constexpr clock_set boost_clocks_mhz{1980, 1980, 3201};  // MaxCustomerBoostClock
inline constexpr clock_set applications_clocks_mhz{1980, 1980, 3201};
inline constexpr clock_set default_applications_clocks_mhz{1980, 1980, 3201};

// Power, mW, and energy, mJ.
inline constexpr unsigned power_usage_mw = 123456;    // nvmlDeviceGetPowerUsage
inline constexpr unsigned power_instant_mw = 120000;  // field 186
inline constexpr unsigned power_average_mw = 110000;  // field 185
inline constexpr ull energy_mj = 5000000;             // field 191 and TotalEnergyConsumption
inline constexpr ull energy_step_mj = 70000;          // per step with FAKE_NVML_ENERGY_PERIOD_MS
inline constexpr unsigned enforced_power_limit_mw = 700000;
inline constexpr unsigned default_power_limit_mw = 700000;
inline constexpr unsigned power_limit_min_mw = 200000;
inline constexpr unsigned power_limit_max_mw = 700000;

// State.
inline constexpr int performance_state = 0;  // P0
inline constexpr int persistence_mode = 1;   // enabled
// Current clocks event reasons: SW power cap (0x4) on GPU 0, GPU idle (0x1) on the others.
constexpr ull clock_reasons(unsigned i) { return i == 0 ? 0x4 : 0x1; }
inline constexpr ull supported_clock_reasons = 0x1ff;

// Use.
inline constexpr unsigned utilization_gpu_percent = 87;
inline constexpr unsigned utilization_memory_percent = 45;
inline constexpr ull memory_total_bytes = 150000000000;
inline constexpr ull memory_used_bytes = 1000000000;
inline constexpr ull memory_free_bytes = memory_total_bytes - memory_used_bytes;

// Versions.
inline constexpr int compute_capability_major = 9;
inline constexpr int compute_capability_minor = 0;
inline constexpr int cuda_driver_version = 13000;
inline constexpr std::string_view driver_version = "580.159.04";
inline constexpr std::string_view nvml_version = "13.580.159.04";

// The other field values (nvmlDeviceGetFieldValues), all unsigned long long, ns. Fields
// 251–253 and every id not listed here answer NVML_ERROR_NOT_SUPPORTED per field.
inline constexpr ull perf_policy_power_ns = 1234000;  // field 74
inline constexpr ull perf_policy_sync_boost_ns = 0;   // field 76
inline constexpr ull reason_sw_thermal_ns = 0;        // field 269
inline constexpr ull reason_hw_thermal_ns = 0;        // field 270
inline constexpr ull reason_hw_power_brake_ns = 0;    // field 271

// Processes (FAKE_NVML_PROCESSES, on GPU 0 only). Bytes "na" reports NVML's "not available".
inline std::string process_name(unsigned pid) { return "fakeproc" + std::to_string(pid); }
inline constexpr unsigned no_instance_id = 0xFFFFFFFF;

// Topology: GPUs 2k and 2k+1 are a pair on one PCIe switch (PIX), joined by NVLinks 0..3 of each;
// links 4..5 exist and are down; any other two GPUs meet across NUMA nodes (SYS), no NVLink P2P.
constexpr unsigned nvlink_links = 6;
constexpr unsigned nvlinks_to_partner = 4;
constexpr bool partners(unsigned i, unsigned j) { return i != j && i / 2 == j / 2; }
constexpr int topology_level(unsigned i, unsigned j) {
  return partners(i, j) ? 10 : 50;
}  // gpu/compute instance id without MIG

}  // namespace coolbench::fake
