// A test double of libnvidia-ml.so.1: exports the NVML functions coolbench looks up (the first
// name of each lookup in src/telemetry/detail/nvml.cpp) with scripted answers, so the NVML
// wrapper and the CLI can be tested without a GPU (COOLBENCH_NVML_LIBRARY=<this library>).
//
// The script is read from the environment when nvmlInit_v2 finds NVML not yet initialised:
//   FAKE_NVML_INIT_RESULT  what nvmlInit_v2 returns (default 0; 9 = driver not loaded)
//   FAKE_NVML_GPUS         number of GPUs, 0..16 (default 2)
//   FAKE_NVML_UNSUPPORTED  function names, comma-separated, that return NOT_SUPPORTED (3)
//   FAKE_NVML_FAIL         function names, comma-separated, that return UNKNOWN (999)
//   FAKE_NVML_PROCESSES    "pid:bytes,pid:bytes": compute processes on GPU 0 (bytes may be "na")
//   FAKE_NVML_ENERGY_PERIOD_MS  the energy counter moves every this many ms (default 0: never)
// Every value reported is in fake_values.hpp. A malformed script aborts with a message on
// stderr: it is always a bug in the test. Calls other than nvmlInit_v2 and nvmlErrorString
// return NVML_ERROR_UNINITIALIZED (1) before a successful nvmlInit_v2 or after the matching
// nvmlShutdown (initialisation is reference-counted, as in NVML).

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "telemetry/detail/nvml_api.hpp"
#include "telemetry/fake/fake_values.hpp"

namespace {

namespace fake = coolbench::fake;
using namespace coolbench::telemetry::detail;  // NOLINT(google-build-using-namespace): the ABI
using fake::ull;

// ---- The script ---------------------------------------------------------------------------

struct fake_process {
  unsigned pid;
  ull bytes;
};

struct script {
  nvml_return init_result = nvml_success;
  unsigned gpu_count = fake::default_gpu_count;
  std::vector<std::string> unsupported;
  std::vector<std::string> failing;
  std::vector<fake_process> processes;
  unsigned energy_period_ms = 0;
  std::chrono::steady_clock::time_point energy_origin;
};

[[noreturn]] void bad_script(const char* variable, std::string_view value) {
  std::fprintf(stderr, "fake_nvml: cannot read %s=\"%.*s\"\n", variable,
               static_cast<int>(value.size()), value.data());
  std::abort();
}

// The pieces of `text` between `separator`s, empty ones included.
std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> pieces;
  for (std::size_t start = 0;;) {
    const std::size_t end = text.find(separator, start);
    pieces.push_back(text.substr(start, end - start));
    if (end == std::string_view::npos) return pieces;
    start = end + 1;
  }
}

template <class T>
std::optional<T> parse_number(std::string_view text, int base = 10) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

template <class T>
T env_number(const char* variable, T fallback) {
  const char* text = std::getenv(variable);
  if (text == nullptr || *text == '\0') return fallback;
  const std::optional<T> value = parse_number<T>(text);
  if (!value) bad_script(variable, text);
  return *value;
}

std::vector<std::string> env_names(const char* variable) {
  std::vector<std::string> names;
  if (const char* text = std::getenv(variable)) {
    for (const std::string_view name : split(text, ',')) {
      if (!name.empty()) names.emplace_back(name);
    }
  }
  return names;
}

std::vector<fake_process> env_processes(const char* variable) {
  std::vector<fake_process> processes;
  const char* text = std::getenv(variable);
  if (text == nullptr) return processes;
  for (const std::string_view entry : split(text, ',')) {
    if (entry.empty()) continue;
    const std::vector<std::string_view> parts = split(entry, ':');
    const std::optional<unsigned> pid = parse_number<unsigned>(parts[0]);
    std::optional<ull> bytes;
    if (parts.size() == 2) {
      bytes = parts[1] == "na" ? nvml_value_not_available : parse_number<ull>(parts[1]);
    }
    if (!pid || !bytes) bad_script(variable, text);
    processes.push_back({*pid, *bytes});
  }
  return processes;
}

script read_script() {
  script result;
  result.init_result = env_number<int>(fake::env_nvml_init_result, nvml_success);
  result.gpu_count = env_number<unsigned>(fake::env_nvml_gpus, fake::default_gpu_count);
  if (result.gpu_count > fake::max_gpu_count) {
    bad_script(fake::env_nvml_gpus, std::getenv(fake::env_nvml_gpus));
  }
  result.unsupported = env_names(fake::env_nvml_unsupported);
  result.failing = env_names(fake::env_nvml_fail);
  result.processes = env_processes(fake::env_nvml_processes);
  result.energy_period_ms = env_number<unsigned>(fake::env_nvml_energy_period_ms, 0);
  result.energy_origin = std::chrono::steady_clock::now();
  return result;
}

// Written only by nvmlInit_v2 while NVML is not initialised; read-only while it is.
script g_script;                // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
std::atomic<int> g_init_count;  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
std::mutex g_init_mutex;        // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)

// ---- Preambles every entry point starts with ------------------------------------------------

bool listed(const std::vector<std::string>& names, const char* fn) {
  return std::find(names.begin(), names.end(), fn) != names.end();
}

// True, with the result to return, when `fn` is scripted to fail.
bool scripted_failure(const char* fn, nvml_return* result) {
  if (listed(g_script.unsupported, fn)) {
    *result = nvml_error_not_supported;
  } else if (listed(g_script.failing, fn)) {
    *result = nvml_error_unknown;
  } else {
    return false;
  }
  return true;
}

// True, with the result to return, when `fn` must not answer: NVML is not initialised, or the
// script says so.
bool refused(const char* fn, nvml_return* result) {
  if (g_init_count.load() == 0) {
    *result = nvml_error_uninitialized;
    return true;
  }
  return scripted_failure(fn, result);
}

// Handles point into this array; a handle is valid while its index is below the GPU count.
struct fake_gpu {
  unsigned index;
};
constexpr std::array<fake_gpu, fake::max_gpu_count> make_gpus() {
  std::array<fake_gpu, fake::max_gpu_count> gpus{};
  for (unsigned i = 0; i < gpus.size(); ++i) gpus[i].index = i;
  return gpus;
}
std::array<fake_gpu, fake::max_gpu_count> g_gpus = make_gpus();  // NOLINT: handles are non-const

nvml_device handle_of(unsigned index) { return reinterpret_cast<nvml_device>(&g_gpus[index]); }

// refused(), and also true (NVML_ERROR_INVALID_ARGUMENT) for a handle that is not one of ours.
bool refused(const char* fn, nvml_device device, unsigned* index, nvml_return* result) {
  if (refused(fn, result)) return true;
  for (unsigned i = 0; i < g_script.gpu_count; ++i) {
    if (handle_of(i) == device) {
      *index = i;
      return false;
    }
  }
  *result = nvml_error_invalid_argument;
  return true;
}

// ---- Answer shapes ---------------------------------------------------------------------------

// The shape of most device queries: the preambles, then one value written through `out`.
// `value` maps the GPU index to the answer, or to nullopt for an argument NVML rejects.
template <class T, class Value>
nvml_return answer(const char* fn, nvml_device device, T* out, Value value) {
  nvml_return result = nvml_success;
  unsigned index = 0;
  if (refused(fn, device, &index, &result)) return result;
  if (out == nullptr) return nvml_error_invalid_argument;
  const std::optional<T> answered = value(index);
  if (!answered) return nvml_error_invalid_argument;
  *out = *answered;
  return nvml_success;
}

// Copies `text` with its terminator, or answers NVML_ERROR_INSUFFICIENT_SIZE as NVML does.
nvml_return copy_string(std::string_view text, char* buffer, unsigned length) {
  if (buffer == nullptr) return nvml_error_invalid_argument;
  if (length < text.size() + 1) return nvml_error_insufficient_size;
  std::memcpy(buffer, text.data(), text.size());
  buffer[text.size()] = '\0';
  return nvml_success;
}

nvml_return system_string(const char* fn, std::string_view text, char* buffer, unsigned length) {
  nvml_return result = nvml_success;
  if (refused(fn, &result)) return result;
  return copy_string(text, buffer, length);
}

template <class Text>
nvml_return device_string(const char* fn, nvml_device device, char* buffer, unsigned length,
                          Text text) {
  nvml_return result = nvml_success;
  unsigned index = 0;
  if (refused(fn, device, &index, &result)) return result;
  return copy_string(text(index), buffer, length);
}

std::optional<unsigned> clock_of(const fake::clock_set& clocks, int type) {
  switch (type) {
    case nvml_clock_graphics: return clocks.graphics;
    case nvml_clock_sm: return clocks.sm;
    case nvml_clock_mem: return clocks.mem;
    default: return std::nullopt;
  }
}

std::optional<unsigned> threshold_of(int type) {
  switch (type) {
    case nvml_threshold_shutdown: return fake::threshold_shutdown_c;
    case nvml_threshold_slowdown: return fake::threshold_slowdown_c;
    case nvml_threshold_mem_max: return fake::threshold_mem_max_c;
    case nvml_threshold_gpu_max: return fake::threshold_gpu_max_c;
    default: return std::nullopt;
  }
}

// The fields nvmlDeviceGetFieldValues answers; every other id is NOT_SUPPORTED per field
// (251–253 included, as on driver 580.159.04).
struct field_row {
  std::uint32_t id;
  int value_type;
  ull value;
  bool plus_gpu_index;  // the value is value + GPU index
};
constexpr std::array field_table{
    field_row{nvml_fi_memory_temp, nvml_value_uint, fake::memory_temperature_c(0), true},
    field_row{nvml_fi_power_average, nvml_value_uint, fake::power_average_mw, false},
    field_row{nvml_fi_power_instant, nvml_value_uint, fake::power_instant_mw, false},
    field_row{nvml_fi_energy, nvml_value_ulonglong, fake::energy_mj, false},
    field_row{nvml_fi_perf_policy_power, nvml_value_ulonglong, fake::perf_policy_power_ns, false},
    field_row{nvml_fi_perf_policy_sync_boost, nvml_value_ulonglong, fake::perf_policy_sync_boost_ns,
              false},
    field_row{nvml_fi_reason_sw_thermal, nvml_value_ulonglong, fake::reason_sw_thermal_ns, false},
    field_row{nvml_fi_reason_hw_thermal, nvml_value_ulonglong, fake::reason_hw_thermal_ns, false},
    field_row{nvml_fi_reason_hw_power_brake, nvml_value_ulonglong, fake::reason_hw_power_brake_ns,
              false},
};

// The energy counter now: fake::energy_mj, plus a step every FAKE_NVML_ENERGY_PERIOD_MS.
ull energy_now() {
  if (g_script.energy_period_ms == 0) return fake::energy_mj;
  const auto since = std::chrono::steady_clock::now() - g_script.energy_origin;
  const auto steps = std::chrono::duration_cast<std::chrono::milliseconds>(since).count() /
                     g_script.energy_period_ms;
  return fake::energy_mj + static_cast<ull>(steps) * fake::energy_step_mj;
}

void fill_field(nvml_field_value& field, unsigned gpu) {
  field.timestamp_us = 0;
  field.latency_us = 0;
  field.value.ull = 0;
  const auto* row = std::find_if(field_table.begin(), field_table.end(),
                                 [&](const field_row& r) { return r.id == field.field_id; });
  if (row == field_table.end()) {
    field.nvml_result = nvml_error_not_supported;
    return;
  }
  const ull value =
      row->id == nvml_fi_energy ? energy_now() : row->value + (row->plus_gpu_index ? gpu : 0);
  field.value_type = row->value_type;
  field.nvml_result = nvml_success;
  if (row->value_type == nvml_value_uint) {
    field.value.ui = static_cast<unsigned>(value);
  } else {
    field.value.ull = value;
  }
}

// NVML's size protocol: too small a *count gets the needed count and INSUFFICIENT_SIZE.
nvml_return list_processes(const char* fn, nvml_device device, unsigned* count,
                           nvml_process_info* infos, bool compute) {
  nvml_return result = nvml_success;
  unsigned index = 0;
  if (refused(fn, device, &index, &result)) return result;
  if (count == nullptr) return nvml_error_invalid_argument;
  const std::span<const fake_process> processes =
      compute && index == 0 ? std::span<const fake_process>(g_script.processes)
                            : std::span<const fake_process>();
  const auto needed = static_cast<unsigned>(processes.size());
  if (*count < needed) {
    *count = needed;
    return nvml_error_insufficient_size;
  }
  if (needed > 0 && infos == nullptr) return nvml_error_invalid_argument;
  for (unsigned i = 0; i < needed; ++i) {
    infos[i] = {processes[i].pid, processes[i].bytes, fake::no_instance_id, fake::no_instance_id};
  }
  *count = needed;
  return nvml_success;
}

// "domain:bus:device.function" or "bus:device.function", hexadecimal, any number of digits.
struct pci_address {
  unsigned domain = 0;
  unsigned bus = 0;
  unsigned device = 0;
  unsigned function = 0;
  bool operator==(const pci_address&) const = default;
};

std::optional<pci_address> parse_pci_bus_id(std::string_view text) {
  const std::size_t dot = text.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::vector<std::string_view> parts = split(text.substr(0, dot), ':');
  if (parts.size() != 2 && parts.size() != 3) return std::nullopt;
  const std::optional<unsigned> domain =
      parts.size() == 3 ? parse_number<unsigned>(parts[0], 16) : 0U;
  const std::optional<unsigned> bus = parse_number<unsigned>(parts[parts.size() - 2], 16);
  const std::optional<unsigned> device = parse_number<unsigned>(parts.back(), 16);
  const std::optional<unsigned> function = parse_number<unsigned>(text.substr(dot + 1), 16);
  if (!domain || !bus || !device || !function) return std::nullopt;
  return pci_address{*domain, *bus, *device, *function};
}

struct error_text {
  nvml_return code;
  const char* text;
};
// NVML's own wording.
constexpr std::array error_texts{
    error_text{nvml_success, "Success"},
    error_text{nvml_error_uninitialized, "Uninitialized"},
    error_text{nvml_error_invalid_argument, "Invalid Argument"},
    error_text{nvml_error_not_supported, "Not Supported"},
    error_text{nvml_error_no_permission, "Insufficient Permissions"},
    error_text{nvml_error_not_found, "Not Found"},
    error_text{nvml_error_insufficient_size, "Insufficient Size"},
    error_text{nvml_error_driver_not_loaded, "Driver Not Loaded"},
    error_text{nvml_error_timeout, "Timeout"},
    error_text{nvml_error_function_not_found, "Function Not Found"},
    error_text{nvml_error_gpu_is_lost, "GPU is lost"},
    error_text{nvml_error_lib_rm_version_mismatch, "RM has detected an NVML/RM version mismatch."},
    error_text{nvml_error_no_data, "No data"},
    error_text{nvml_error_unknown, "Unknown Error"},
};

}  // namespace

// ---- The exported NVML interface -----------------------------------------------------------
// NOLINTBEGIN(readability-identifier-naming): NVML's names

#pragma GCC visibility push(default)
extern "C" {

nvml_return nvmlInit_v2() {
  std::lock_guard lock(g_init_mutex);
  if (g_init_count.load() == 0) g_script = read_script();
  nvml_return result = g_script.init_result;
  if (result == nvml_success) scripted_failure(__func__, &result);
  if (result == nvml_success) ++g_init_count;
  return result;
}

nvml_return nvmlShutdown() {
  std::lock_guard lock(g_init_mutex);
  nvml_return result = nvml_success;
  if (refused(__func__, &result)) return result;
  --g_init_count;
  return nvml_success;
}

const char* nvmlErrorString(nvml_return result) {
  const auto* found = std::find_if(error_texts.begin(), error_texts.end(),
                                   [&](const error_text& e) { return e.code == result; });
  return found != error_texts.end() ? found->text : "Unknown Error";
}

nvml_return nvmlSystemGetDriverVersion(char* version, unsigned length) {
  return system_string(__func__, fake::driver_version, version, length);
}

nvml_return nvmlSystemGetNVMLVersion(char* version, unsigned length) {
  return system_string(__func__, fake::nvml_version, version, length);
}

nvml_return nvmlSystemGetCudaDriverVersion_v2(int* version) {
  nvml_return result = nvml_success;
  if (refused(__func__, &result)) return result;
  if (version == nullptr) return nvml_error_invalid_argument;
  *version = fake::cuda_driver_version;
  return nvml_success;
}

nvml_return nvmlSystemGetProcessName(unsigned pid, char* name, unsigned length) {
  return system_string(__func__, fake::process_name(pid), name, length);
}

nvml_return nvmlDeviceGetCount_v2(unsigned* count) {
  nvml_return result = nvml_success;
  if (refused(__func__, &result)) return result;
  if (count == nullptr) return nvml_error_invalid_argument;
  *count = g_script.gpu_count;
  return nvml_success;
}

nvml_return nvmlDeviceGetHandleByIndex_v2(unsigned index, nvml_device* device) {
  nvml_return result = nvml_success;
  if (refused(__func__, &result)) return result;
  if (device == nullptr || index >= g_script.gpu_count) return nvml_error_invalid_argument;
  *device = handle_of(index);
  return nvml_success;
}

nvml_return nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, nvml_device* device) {
  nvml_return result = nvml_success;
  if (refused(__func__, &result)) return result;
  if (bus_id == nullptr || device == nullptr) return nvml_error_invalid_argument;
  const std::optional<pci_address> wanted = parse_pci_bus_id(bus_id);
  for (unsigned i = 0; wanted && i < g_script.gpu_count; ++i) {
    if (*wanted == pci_address{0, i, 0, 0}) {
      *device = handle_of(i);
      return nvml_success;
    }
  }
  return nvml_error_not_found;
}

nvml_return nvmlDeviceGetName(nvml_device device, char* name, unsigned length) {
  return device_string(__func__, device, name, length, fake::gpu_name);
}

nvml_return nvmlDeviceGetUUID(nvml_device device, char* uuid, unsigned length) {
  return device_string(__func__, device, uuid, length, fake::gpu_uuid);
}

nvml_return nvmlDeviceGetPciInfo_v3(nvml_device device, nvml_pci_info* pci) {
  return answer(__func__, device, pci, [](unsigned i) {
    nvml_pci_info info{};
    std::snprintf(info.bus_id_legacy, sizeof info.bus_id_legacy, "%s",
                  fake::nvml_legacy_bus_id(i).c_str());
    std::snprintf(info.bus_id, sizeof info.bus_id, "%s", fake::nvml_bus_id(i).c_str());
    info.domain = 0;
    info.bus = i;
    info.device = 0;
    info.pci_device_id = fake::pci_device_id;
    info.pci_subsystem_id = fake::pci_subsystem_id;
    return std::optional(info);
  });
}

nvml_return nvmlDeviceGetIndex(nvml_device device, unsigned* index) {
  return answer(__func__, device, index, [](unsigned i) { return i; });
}

nvml_return nvmlDeviceGetCudaComputeCapability(nvml_device device, int* major, int* minor) {
  nvml_return result = nvml_success;
  unsigned index = 0;
  if (refused(__func__, device, &index, &result)) return result;
  if (major == nullptr || minor == nullptr) return nvml_error_invalid_argument;
  *major = fake::compute_capability_major;
  *minor = fake::compute_capability_minor;
  return nvml_success;
}

nvml_return nvmlDeviceGetTemperature(nvml_device device, int sensor, unsigned* celsius) {
  return answer(__func__, device, celsius, [sensor](unsigned i) {
    return sensor == nvml_temperature_gpu ? std::optional(fake::temperature_c(i)) : std::nullopt;
  });
}

nvml_return nvmlDeviceGetTemperatureThreshold(nvml_device device, int type, unsigned* celsius) {
  return answer(__func__, device, celsius, [type](unsigned) { return threshold_of(type); });
}

nvml_return nvmlDeviceGetClockInfo(nvml_device device, int type, unsigned* mhz) {
  return answer(__func__, device, mhz,
                [type](unsigned) { return clock_of(fake::current_clocks_mhz, type); });
}

nvml_return nvmlDeviceGetMaxClockInfo(nvml_device device, int type, unsigned* mhz) {
  return answer(__func__, device, mhz,
                [type](unsigned) { return clock_of(fake::max_clocks_mhz, type); });
}

nvml_return nvmlDeviceGetMaxCustomerBoostClock(nvml_device device, int type, unsigned* mhz) {
  return answer(__func__, device, mhz,
                [type](unsigned) { return clock_of(fake::boost_clocks_mhz, type); });
}

nvml_return nvmlDeviceGetApplicationsClock(nvml_device device, int type, unsigned* mhz) {
  return answer(__func__, device, mhz,
                [type](unsigned) { return clock_of(fake::applications_clocks_mhz, type); });
}

nvml_return nvmlDeviceGetDefaultApplicationsClock(nvml_device device, int type, unsigned* mhz) {
  return answer(__func__, device, mhz,
                [type](unsigned) { return clock_of(fake::default_applications_clocks_mhz, type); });
}

nvml_return nvmlDeviceGetPowerUsage(nvml_device device, unsigned* mw) {
  return answer(__func__, device, mw, [](unsigned) { return fake::power_usage_mw; });
}

nvml_return nvmlDeviceGetEnforcedPowerLimit(nvml_device device, unsigned* mw) {
  return answer(__func__, device, mw, [](unsigned) { return fake::enforced_power_limit_mw; });
}

nvml_return nvmlDeviceGetPowerManagementDefaultLimit(nvml_device device, unsigned* mw) {
  return answer(__func__, device, mw, [](unsigned) { return fake::default_power_limit_mw; });
}

nvml_return nvmlDeviceGetPowerManagementLimitConstraints(nvml_device device, unsigned* min_mw,
                                                         unsigned* max_mw) {
  nvml_return result = nvml_success;
  unsigned index = 0;
  if (refused(__func__, device, &index, &result)) return result;
  if (min_mw == nullptr || max_mw == nullptr) return nvml_error_invalid_argument;
  *min_mw = fake::power_limit_min_mw;
  *max_mw = fake::power_limit_max_mw;
  return nvml_success;
}

nvml_return nvmlDeviceGetTotalEnergyConsumption(nvml_device device, ull* mj) {
  return answer(__func__, device, mj, [](unsigned) { return energy_now(); });
}

nvml_return nvmlDeviceGetPerformanceState(nvml_device device, int* pstate) {
  return answer(__func__, device, pstate, [](unsigned) { return fake::performance_state; });
}

nvml_return nvmlDeviceGetPersistenceMode(nvml_device device, int* mode) {
  return answer(__func__, device, mode, [](unsigned) { return fake::persistence_mode; });
}

nvml_return nvmlDeviceGetCurrentClocksEventReasons(nvml_device device, ull* reasons) {
  return answer(__func__, device, reasons, [](unsigned i) { return fake::clock_reasons(i); });
}

nvml_return nvmlDeviceGetSupportedClocksEventReasons(nvml_device device, ull* reasons) {
  return answer(__func__, device, reasons, [](unsigned) { return fake::supported_clock_reasons; });
}

nvml_return nvmlDeviceGetUtilizationRates(nvml_device device, nvml_utilization* utilization) {
  return answer(__func__, device, utilization, [](unsigned) {
    return nvml_utilization{fake::utilization_gpu_percent, fake::utilization_memory_percent};
  });
}

nvml_return nvmlDeviceGetMemoryInfo(nvml_device device, nvml_memory* memory) {
  return answer(__func__, device, memory, [](unsigned) {
    return nvml_memory{fake::memory_total_bytes, fake::memory_free_bytes, fake::memory_used_bytes};
  });
}

nvml_return nvmlDeviceGetFieldValues(nvml_device device, int count, nvml_field_value* values) {
  nvml_return result = nvml_success;
  unsigned index = 0;
  if (refused(__func__, device, &index, &result)) return result;
  if (count < 0 || (count > 0 && values == nullptr)) return nvml_error_invalid_argument;
  for (nvml_field_value& field : std::span(values, static_cast<std::size_t>(count))) {
    fill_field(field, index);
  }
  return nvml_success;
}

nvml_return nvmlDeviceGetComputeRunningProcesses_v3(nvml_device device, unsigned* count,
                                                    nvml_process_info* infos) {
  return list_processes(__func__, device, count, infos, true);
}

nvml_return nvmlDeviceGetGraphicsRunningProcesses_v3(nvml_device device, unsigned* count,
                                                     nvml_process_info* infos) {
  return list_processes(__func__, device, count, infos, false);
}

nvml_return nvmlDeviceGetTopologyCommonAncestor(nvml_device a, nvml_device b, int* level) {
  nvml_return result = nvml_success;
  unsigned i = 0;
  unsigned j = 0;
  if (refused(__func__, a, &i, &result) || refused(__func__, b, &j, &result)) return result;
  if (level == nullptr || i == j) return nvml_error_invalid_argument;
  *level = fake::topology_level(i, j);
  return nvml_success;
}

nvml_return nvmlDeviceGetP2PStatus(nvml_device a, nvml_device b, int caps_index, int* status) {
  nvml_return result = nvml_success;
  unsigned i = 0;
  unsigned j = 0;
  if (refused(__func__, a, &i, &result) || refused(__func__, b, &j, &result)) return result;
  if (status == nullptr) return nvml_error_invalid_argument;
  constexpr int nvlink_caps = 2;    // NVML_P2P_CAPS_INDEX_NVLINK
  constexpr int not_supported = 5;  // NVML_P2P_STATUS_NOT_SUPPORTED
  *status = caps_index == nvlink_caps && fake::partners(i, j) ? 0 : not_supported;
  return nvml_success;
}

nvml_return nvmlDeviceGetNvLinkState(nvml_device device, unsigned link, unsigned* active) {
  nvml_return result = nvml_success;
  unsigned index = 0;
  if (refused(__func__, device, &index, &result)) return result;
  if (active == nullptr || link >= fake::nvlink_links) return nvml_error_invalid_argument;
  const bool has_partner = (index ^ 1U) < g_script.gpu_count;
  *active = has_partner && link < fake::nvlinks_to_partner ? 1 : 0;
  return nvml_success;
}

nvml_return nvmlDeviceGetNvLinkRemotePciInfo_v2(nvml_device device, unsigned link,
                                                nvml_pci_info* pci) {
  nvml_return result = nvml_success;
  unsigned index = 0;
  if (refused(__func__, device, &index, &result)) return result;
  const unsigned partner = index ^ 1U;
  if (pci == nullptr || link >= fake::nvlinks_to_partner || partner >= g_script.gpu_count) {
    return nvml_error_invalid_argument;
  }
  *pci = nvml_pci_info{};
  std::snprintf(pci->bus_id, sizeof pci->bus_id, "%s", fake::nvml_bus_id(partner).c_str());
  pci->bus = partner;
  return nvml_success;
}

}  // extern "C"
#pragma GCC visibility pop

// NOLINTEND(readability-identifier-naming)
