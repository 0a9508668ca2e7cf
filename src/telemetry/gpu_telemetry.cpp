#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "coolbench/core/clock.hpp"
#include "coolbench/core/error.hpp"
#include "coolbench/telemetry/gpu.hpp"
#include "telemetry/detail/cuda_driver.hpp"
#include "telemetry/detail/nvml.hpp"

namespace coolbench::telemetry {

using namespace detail;  // NOLINT(google-build-using-namespace): the NVML ABI names

namespace {

// Marks a field a fast read did not ask for (not an NVML code).
constexpr nvml_return field_not_read = -1;

/// Reads one value through an optional NVML entry point. A missing entry
/// point or an "unsupported" answer gives unsupported; other errors, failed;
/// a lost GPU throws, because nothing else on it can be read either.
template <class T, class Raw, class Fn, class... Args>
reading<T> read_value(const nvml& lib, const char* call, Fn fn, nvml_device device, Args... args) {
  if (fn == nullptr) return reading<T>::unsupported();
  Raw raw{};
  const nvml_return result = fn(device, args..., &raw);
  if (result == nvml_success) return reading<T>::of(static_cast<T>(raw));
  if (result == nvml_error_gpu_is_lost) lib.fail(call, result);
  return nvml_means_unsupported(result) ? reading<T>::unsupported() : reading<T>::failed();
}

reading<std::uint64_t> field_as_u64(const nvml_field_value& field) {
  if (field.nvml_result == field_not_read) return reading<std::uint64_t>::skipped();
  if (field.nvml_result != nvml_success) {
    return nvml_means_unsupported(field.nvml_result) ? reading<std::uint64_t>::unsupported()
                                                     : reading<std::uint64_t>::failed();
  }
  switch (field.value_type) {
    case nvml_value_uint: return reading<std::uint64_t>::of(field.value.ui);
    case nvml_value_ulong: return reading<std::uint64_t>::of(field.value.ul);
    case nvml_value_ulonglong: return reading<std::uint64_t>::of(field.value.ull);
    case nvml_value_slonglong:
      return field.value.sll < 0
                 ? reading<std::uint64_t>::failed()
                 : reading<std::uint64_t>::of(static_cast<std::uint64_t>(field.value.sll));
    case nvml_value_sint:
      return field.value.si < 0
                 ? reading<std::uint64_t>::failed()
                 : reading<std::uint64_t>::of(static_cast<std::uint64_t>(field.value.si));
    case nvml_value_ushort: return reading<std::uint64_t>::of(field.value.us);
    default: return reading<std::uint64_t>::failed();  // a double where a count belongs
  }
}

reading<double> milliwatts_to_watts(reading<std::uint64_t> mw) {
  return mw.ok() ? reading<double>::of(static_cast<double>(mw.value) / 1000.0)
                 : reading<double>{0.0, mw.status};
}

template <class To, class From>
reading<To> convert(reading<From> from) {
  return {static_cast<To>(from.value), from.status};
}

/// One figure of the memory info: v2 where the driver has it (its `used`
/// matches nvidia-smi's), else v1.
reading<std::uint64_t> read_memory(const nvml& lib, nvml_device device,
                                   unsigned long long nvml_memory_v2::*figure) {  // NOLINT
  nvml_memory_v2 memory{};
  memory.version = nvml_memory_v2_version;
  nvml_return result = nvml_error_function_not_found;
  if (lib.device_get_memory_info_v2 != nullptr)
    result = lib.device_get_memory_info_v2(device, &memory);
  if (result != nvml_success && lib.device_get_memory_info != nullptr) {
    nvml_memory v1{};
    result = lib.device_get_memory_info(device, &v1);
    memory.total = v1.total;
    memory.free = v1.free;
    memory.used = v1.used;
  }
  if (result == nvml_success) return reading<std::uint64_t>::of(memory.*figure);
  if (result == nvml_error_gpu_is_lost) lib.fail("nvmlDeviceGetMemoryInfo", result);
  return nvml_means_unsupported(result) ? reading<std::uint64_t>::unsupported()
                                        : reading<std::uint64_t>::failed();
}

std::string read_string(const nvml& lib, const char* call, nvml_device_string_fn fn,
                        nvml_device device, unsigned size) {
  if (fn == nullptr) return {};
  std::vector<char> buffer(size, '\0');
  lib.check(call, fn(device, buffer.data(), size));
  return buffer.data();
}

std::string read_system_string(nvml_system_string_fn fn) {
  if (fn == nullptr) return {};
  std::array<char, nvml_version_buffer> buffer{};
  return fn(buffer.data(), static_cast<unsigned>(buffer.size())) == nvml_success ? buffer.data()
                                                                                 : std::string{};
}

// Indexes into the field-value batch read() asks for in one NVML call. The
// costly fields come last, dearest last, so each read_scope asks for a prefix:
// fast the first fast_slot_count, counters the first counters_slot_count.
enum field_slot : std::size_t {
  slot_memory_temp,
  slot_power_instant,
  slot_power_average,
  slot_sw_power_cap,
  slot_sync_boost,
  slot_sw_thermal,
  fast_slot_count,
  slot_hw_thermal = fast_slot_count,
  slot_hw_power_brake,
  counters_slot_count,
  slot_energy = counters_slot_count,
  slot_count,
};

}  // namespace

constexpr std::size_t slots_read(read_scope scope) {
  switch (scope) {
    case read_scope::fast: return fast_slot_count;
    case read_scope::counters: return counters_slot_count;
    case read_scope::all: break;
  }
  return slot_count;
}

struct gpu_telemetry::impl {
  std::shared_ptr<nvml> lib;
  nvml_device device = nullptr;
  gpu_identity identity;
  // In field_slot order.
  std::array<std::uint32_t, slot_count> field_ids{
      nvml_fi_memory_temp,       nvml_fi_power_instant,          nvml_fi_power_average,
      nvml_fi_perf_policy_power, nvml_fi_perf_policy_sync_boost, nvml_fi_reason_sw_thermal,
      nvml_fi_reason_hw_thermal, nvml_fi_reason_hw_power_brake,  nvml_fi_energy};

  std::array<nvml_field_value, slot_count> read_fields(read_scope scope) const {
    const std::size_t count = slots_read(scope);
    std::array<nvml_field_value, slot_count> fields{};
    for (std::size_t i = 0; i < slot_count; ++i) {
      fields[i].field_id = field_ids[i];
      fields[i].nvml_result = i < count ? nvml_success : field_not_read;
    }
    nvml_return result = nvml_error_function_not_found;
    if (lib->device_get_field_values != nullptr) {
      result = lib->device_get_field_values(device, static_cast<int>(count), fields.data());
    }
    if (result == nvml_error_gpu_is_lost) lib->fail("nvmlDeviceGetFieldValues", result);
    if (result != nvml_success) {
      for (std::size_t i = 0; i < count; ++i) fields[i].nvml_result = result;
    }
    return fields;
  }

  void choose_reason_counter_ids() {
    // Older drivers number the three slowdown counters 251–253 (see nvml_api.hpp).
    // Only an "unsupported" answer for the field itself counts: a transient
    // failure must not move the counters to ids the driver does not know.
    const auto fields = read_fields(read_scope::fast);
    if (!nvml_means_unsupported(fields[slot_sw_thermal].nvml_result)) return;
    field_ids[slot_sw_thermal] = nvml_fi_reason_sw_thermal_old;
    field_ids[slot_hw_thermal] = nvml_fi_reason_hw_thermal_old;
    field_ids[slot_hw_power_brake] = nvml_fi_reason_hw_power_brake_old;
  }

  void read_identity() {
    const nvml& n = *lib;
    auto& id = identity;
    id.name = read_string(n, "nvmlDeviceGetName", n.device_get_name, device, nvml_name_buffer);
    id.uuid = read_string(n, "nvmlDeviceGetUUID", n.device_get_uuid, device, nvml_uuid_buffer);
    if (n.device_get_pci_info != nullptr) {
      nvml_pci_info pci{};
      n.check("nvmlDeviceGetPciInfo", n.device_get_pci_info(device, &pci));
      id.pci_bus_id = pci.bus_id[0] != '\0' ? pci.bus_id : pci.bus_id_legacy;
    }
    if (n.device_get_index != nullptr) {
      unsigned index = 0;
      n.check("nvmlDeviceGetIndex", n.device_get_index(device, &index));
      id.nvml_index = index;
    }
    id.driver_version = read_system_string(n.system_get_driver_version);
    id.nvml_version = read_system_string(n.system_get_nvml_version);
    if (n.system_get_cuda_driver_version != nullptr) {
      int version = 0;
      if (n.system_get_cuda_driver_version(&version) == nvml_success) {
        id.cuda_driver_version = reading<int>::of(version);
      }
    }
    if (n.device_get_cuda_compute_capability != nullptr) {
      int major = 0;
      int minor = 0;
      if (n.device_get_cuda_compute_capability(device, &major, &minor) == nvml_success) {
        id.compute_capability = reading<int>::of(major * 10 + minor);
      }
    }
    const auto threshold = [&](int which) {
      return read_value<int, unsigned>(n, "nvmlDeviceGetTemperatureThreshold",
                                       n.device_get_temperature_threshold, device, which);
    };
    id.temp_shutdown_c = threshold(nvml_threshold_shutdown);
    id.temp_slowdown_c = threshold(nvml_threshold_slowdown);
    id.temp_mem_max_c = threshold(nvml_threshold_mem_max);
    id.temp_gpu_max_c = threshold(nvml_threshold_gpu_max);
    const auto clock = [&](const char* call, nvml_clock_fn fn, int type) {
      return read_value<unsigned, unsigned>(n, call, fn, device, type);
    };
    id.clock_sm_max_mhz =
        clock("nvmlDeviceGetMaxClockInfo", n.device_get_max_clock_info, nvml_clock_sm);
    id.clock_mem_max_mhz =
        clock("nvmlDeviceGetMaxClockInfo", n.device_get_max_clock_info, nvml_clock_mem);
    id.clock_graphics_max_mhz =
        clock("nvmlDeviceGetMaxClockInfo", n.device_get_max_clock_info, nvml_clock_graphics);
    id.clock_sm_boost_mhz = clock("nvmlDeviceGetMaxCustomerBoostClock",
                                  n.device_get_max_customer_boost_clock, nvml_clock_sm);
    id.clock_graphics_app_mhz = clock("nvmlDeviceGetApplicationsClock",
                                      n.device_get_applications_clock, nvml_clock_graphics);
    id.clock_graphics_default_app_mhz =
        clock("nvmlDeviceGetDefaultApplicationsClock", n.device_get_default_applications_clock,
              nvml_clock_graphics);
    const auto watts = [&](const char* call, nvml_device_uint_fn fn) {
      return milliwatts_to_watts(
          convert<std::uint64_t>(read_value<unsigned, unsigned>(n, call, fn, device)));
    };
    id.power_limit_w = watts("nvmlDeviceGetEnforcedPowerLimit", n.device_get_enforced_power_limit);
    id.power_default_limit_w =
        watts("nvmlDeviceGetPowerManagementDefaultLimit", n.device_get_power_default_limit);
    if (n.device_get_power_limit_constraints != nullptr) {
      unsigned min_mw = 0;
      unsigned max_mw = 0;
      if (n.device_get_power_limit_constraints(device, &min_mw, &max_mw) == nvml_success) {
        id.power_min_limit_w = reading<double>::of(min_mw / 1000.0);
        id.power_max_limit_w = reading<double>::of(max_mw / 1000.0);
      }
    }
    id.memory_total_bytes = read_memory(n, device, &nvml_memory_v2::total);
    id.persistence_mode = convert<bool>(read_value<int, int>(
        n, "nvmlDeviceGetPersistenceMode", n.device_get_persistence_mode, device));
    id.supported_clock_reasons =
        read_value<std::uint64_t, unsigned long long>(n, "nvmlDeviceGetSupportedClocksEventReasons",
                                                      n.device_get_supported_clock_reasons, device);
  }
};

int gpu_telemetry::device_count() {
  // Loading NVML first makes a machine without the driver fail with NVML's
  // message, the same one every other GPU command gives.
  const auto lib = nvml::acquire();
  return static_cast<int>(cuda_pci_bus_ids().size());
}

gpu_telemetry::gpu_telemetry(int cuda_ordinal) : m_impl(std::make_unique<impl>()) {
  m_impl->lib = nvml::acquire();
  const auto bus_ids = cuda_pci_bus_ids();
  if (cuda_ordinal < 0 || cuda_ordinal >= static_cast<int>(bus_ids.size())) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    throw invalid_argument("no GPU with CUDA ordinal " + std::to_string(cuda_ordinal) +
                           ": CUDA sees " + std::to_string(bus_ids.size()) + " GPU(s)" +
                           (visible != nullptr
                                ? std::string(" (CUDA_VISIBLE_DEVICES=") + visible + ")"
                                : std::string()) +
                           ". `coolbench info --device all` lists them.");
  }
  const std::string& bus_id = bus_ids[static_cast<std::size_t>(cuda_ordinal)];
  const nvml& n = *m_impl->lib;
  const nvml_return result = n.device_get_handle_by_pci_bus_id(bus_id.c_str(), &m_impl->device);
  if (result != nvml_success) {
    n.fail(("nvmlDeviceGetHandleByPciBusId(\"" + bus_id + "\") for CUDA device " +
            std::to_string(cuda_ordinal))
               .c_str(),
           result);
  }
  m_impl->identity.cuda_ordinal = cuda_ordinal;
  m_impl->read_identity();
  m_impl->choose_reason_counter_ids();
}

gpu_telemetry::~gpu_telemetry() = default;
gpu_telemetry::gpu_telemetry(gpu_telemetry&&) noexcept = default;
gpu_telemetry& gpu_telemetry::operator=(gpu_telemetry&&) noexcept = default;

const gpu_identity& gpu_telemetry::identity() const noexcept { return m_impl->identity; }

gpu_sample gpu_telemetry::read(read_scope scope) const {
  const nvml& n = *m_impl->lib;
  nvml_device device = m_impl->device;
  gpu_sample s;
  s.time_ns = steady_now_ns();

  s.temp_gpu_c = read_value<int, unsigned>(n, "nvmlDeviceGetTemperature", n.device_get_temperature,
                                           device, nvml_temperature_gpu);
  const auto clock = [&](int type) {
    return read_value<unsigned, unsigned>(n, "nvmlDeviceGetClockInfo", n.device_get_clock_info,
                                          device, type);
  };
  s.clock_sm_mhz = clock(nvml_clock_sm);
  s.clock_mem_mhz = clock(nvml_clock_mem);
  s.clock_graphics_mhz = clock(nvml_clock_graphics);

  const auto fields = m_impl->read_fields(scope);
  s.temp_mem_c = convert<int>(field_as_u64(fields[slot_memory_temp]));
  s.power_w = milliwatts_to_watts(field_as_u64(fields[slot_power_instant]));
  if (!s.power_w.ok()) {
    // Drivers without the instantaneous field: NVML's usual power reading.
    s.power_w = milliwatts_to_watts(convert<std::uint64_t>(read_value<unsigned, unsigned>(
        n, "nvmlDeviceGetPowerUsage", n.device_get_power_usage, device)));
  }
  s.power_avg_w = milliwatts_to_watts(field_as_u64(fields[slot_power_average]));
  s.energy_mj = field_as_u64(fields[slot_energy]);
  if (s.energy_mj.status != reading_status::ok && s.energy_mj.status != reading_status::skipped) {
    s.energy_mj = read_value<std::uint64_t, unsigned long long>(
        n, "nvmlDeviceGetTotalEnergyConsumption", n.device_get_total_energy_consumption, device);
  }
  s.reason_counters.sw_power_cap_ns = field_as_u64(fields[slot_sw_power_cap]);
  s.reason_counters.sync_boost_ns = field_as_u64(fields[slot_sync_boost]);
  s.reason_counters.sw_thermal_ns = field_as_u64(fields[slot_sw_thermal]);
  s.reason_counters.hw_thermal_ns = field_as_u64(fields[slot_hw_thermal]);
  s.reason_counters.hw_power_brake_ns = field_as_u64(fields[slot_hw_power_brake]);

  s.pstate = read_value<int, int>(n, "nvmlDeviceGetPerformanceState",
                                  n.device_get_performance_state, device);
  s.clock_reasons = read_value<std::uint64_t, unsigned long long>(
      n, "nvmlDeviceGetCurrentClocksEventReasons", n.device_get_current_clock_reasons, device);

  if (n.device_get_utilization_rates != nullptr) {
    nvml_utilization util{};
    const nvml_return result = n.device_get_utilization_rates(device, &util);
    if (result == nvml_success) {
      s.util_gpu_pct = reading<unsigned>::of(util.gpu);
      s.util_mem_pct = reading<unsigned>::of(util.memory);
    } else if (!nvml_means_unsupported(result)) {
      s.util_gpu_pct = s.util_mem_pct = reading<unsigned>::failed();
    }
  }
  s.memory_used_bytes = read_memory(n, device, &nvml_memory_v2::used);
  return s;
}

namespace {

std::string process_name(const nvml& n, unsigned pid) {
  if (std::ifstream comm("/proc/" + std::to_string(pid) + "/comm"); comm) {
    std::string name;
    std::getline(comm, name);
    if (!name.empty()) return name;
  }
  // The process may live in another PID namespace (containers); NVML knows it.
  if (n.system_get_process_name != nullptr) {
    std::array<char, nvml_process_name_buffer> buffer{};
    if (n.system_get_process_name(pid, buffer.data(), static_cast<unsigned>(buffer.size())) ==
        nvml_success) {
      return buffer.data();
    }
  }
  return {};
}

void append_processes(const nvml& n, const char* call, nvml_processes_fn fn, nvml_device device,
                      bool graphics, std::vector<gpu_process>& out) {
  if (fn == nullptr) return;
  std::vector<nvml_process_info> infos(16);
  for (int attempt = 0;; ++attempt) {
    auto count = static_cast<unsigned>(infos.size());
    const nvml_return result = fn(device, &count, infos.data());
    if (result == nvml_success) {
      infos.resize(count);
      break;
    }
    // Processes can start between the two calls: grow and ask again.
    if (result == nvml_error_insufficient_size && attempt < 4) {
      infos.resize(count + 16);
      continue;
    }
    if (nvml_means_unsupported(result)) return;
    n.fail(call, result);
  }
  for (const auto& info : infos) {
    // A process with both kinds of context is listed once, as compute.
    const bool listed = std::any_of(out.begin(), out.end(),
                                    [&](const gpu_process& p) { return p.pid == info.pid; });
    if (listed) continue;
    gpu_process process;
    process.pid = info.pid;
    process.used_memory_bytes = info.used_gpu_memory == nvml_value_not_available
                                    ? reading<std::uint64_t>::unsupported()
                                    : reading<std::uint64_t>::of(info.used_gpu_memory);
    process.name = process_name(n, info.pid);
    process.graphics = graphics;
    out.push_back(std::move(process));
  }
}

}  // namespace

std::vector<gpu_process> gpu_telemetry::processes() const {
  const nvml& n = *m_impl->lib;
  std::vector<gpu_process> list;
  append_processes(n, "nvmlDeviceGetComputeRunningProcesses", n.device_get_compute_processes,
                   m_impl->device, false, list);
  append_processes(n, "nvmlDeviceGetGraphicsRunningProcesses", n.device_get_graphics_processes,
                   m_impl->device, true, list);
  return list;
}

namespace {

std::string pcie_path_name(int level) {
  switch (level) {
    case nvml_topology_internal: return "BOARD";
    case nvml_topology_single: return "PIX";
    case nvml_topology_multiple: return "PXB";
    case nvml_topology_hostbridge: return "PHB";
    case nvml_topology_node: return "NODE";
    case nvml_topology_system: return "SYS";
    default: return {};
  }
}

bool same_pci_function(const nvml_pci_info& a, const nvml_pci_info& b) {
  return a.domain == b.domain && a.bus == b.bus && a.device == b.device;
}

}  // namespace

std::string gpu_link::label() const {
  if (nvlink_p2p.ok() && nvlink_p2p.value) {
    if (direct_nvlinks.ok() && direct_nvlinks.value > 0)
      return "NV" + std::to_string(direct_nvlinks.value);
    if (active_nvlinks.ok() && active_nvlinks.value > 0)
      return "NV" + std::to_string(active_nvlinks.value);
  } else if (direct_nvlinks.ok() && direct_nvlinks.value > 0) {
    return "NV" + std::to_string(direct_nvlinks.value);
  }
  return pcie_path.empty() ? "?" : pcie_path;
}

gpu_link gpu_telemetry::link_to(const gpu_telemetry& other) const {
  const nvml& n = *m_impl->lib;
  const nvml_device self = m_impl->device;
  const nvml_device peer = other.m_impl->device;
  gpu_link link;
  int level = -1;
  if (n.device_get_topology_common_ancestor != nullptr &&
      n.device_get_topology_common_ancestor(self, peer, &level) == nvml_success) {
    link.pcie_path = pcie_path_name(level);
  }
  if (int status = -1;
      n.device_get_p2p_status != nullptr &&
      n.device_get_p2p_status(self, peer, nvml_p2p_caps_index_nvlink, &status) == nvml_success) {
    link.nvlink_p2p = reading<bool>::of(status == nvml_p2p_status_ok);
  }
  if (n.device_get_nvlink_state == nullptr) return link;
  nvml_pci_info peer_pci{};
  const bool know_peer =
      n.device_get_pci_info != nullptr && n.device_get_pci_info(peer, &peer_pci) == nvml_success;
  unsigned active = 0;
  unsigned direct = 0;
  bool any_link = false;
  // Links are numbered from 0; a GPU with fewer than the maximum answers the
  // rest as not supported or an invalid argument.
  for (unsigned l = 0; l < nvml_nvlink_max_links; ++l) {
    unsigned enabled = 0;
    if (n.device_get_nvlink_state(self, l, &enabled) != nvml_success) continue;
    any_link = true;
    if (enabled == 0) continue;
    ++active;
    nvml_pci_info remote{};
    if (know_peer && n.device_get_nvlink_remote_pci_info != nullptr &&
        n.device_get_nvlink_remote_pci_info(self, l, &remote) == nvml_success &&
        same_pci_function(remote, peer_pci)) {
      ++direct;
    }
  }
  if (any_link) {
    link.active_nvlinks = reading<unsigned>::of(active);
    if (know_peer) link.direct_nvlinks = reading<unsigned>::of(direct);
  }
  return link;
}

}  // namespace coolbench::telemetry
