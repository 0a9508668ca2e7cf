// What each NVML reading the sampler makes costs on this GPU and driver:
// every field of the sampler's field batch read alone, the batch's fast and
// full forms, and each direct call, as the median and the largest of REPEATS
// calls (docs/perf/ci.md, "The protocol's own cost"). Reading order is
// interleaved so a slow stretch of the driver does not land on one reading.
//   nvml_reading_cost [DEVICE] [REPEATS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "telemetry/detail/nvml.hpp"

namespace {

using coolbench::telemetry::detail::nvml;
namespace api = coolbench::telemetry::detail;

struct reading {
  reading(std::string n, std::function<int()> c) : name(std::move(n)), call(std::move(c)) {}
  std::string name;
  std::function<int()> call;  // the NVML result
  std::vector<double> us;
  int last_result = 0;
};

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  const unsigned ordinal = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 0;
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 40;
  const auto lib = nvml::acquire();
  api::nvml_device device = nullptr;
  lib->check("nvmlDeviceGetHandleByIndex", lib->device_get_handle_by_index(ordinal, &device));
  std::vector<reading> readings;
  const auto fields = [&](std::string name, std::vector<std::uint32_t> ids) {
    if (lib->device_get_field_values == nullptr) return;  // a driver without the batch
    readings.emplace_back(std::move(name), [&lib, device, ids] {
      std::vector<api::nvml_field_value> v(ids.size());
      for (std::size_t i = 0; i < ids.size(); ++i) v[i].field_id = ids[i];
      return lib->device_get_field_values(device, static_cast<int>(v.size()), v.data());
    });
  };
  const std::vector<std::pair<const char*, std::uint32_t>> ids = {
      {"memory_temp", api::nvml_fi_memory_temp},
      {"power_instant", api::nvml_fi_power_instant},
      {"power_average", api::nvml_fi_power_average},
      {"sw_power_cap_ns", api::nvml_fi_perf_policy_power},
      {"sync_boost_ns", api::nvml_fi_perf_policy_sync_boost},
      {"sw_thermal_ns", api::nvml_fi_reason_sw_thermal},
      {"energy_mj", api::nvml_fi_energy},
      {"hw_thermal_ns", api::nvml_fi_reason_hw_thermal},
      {"hw_power_brake_ns", api::nvml_fi_reason_hw_power_brake}};
  std::vector<std::uint32_t> all;
  for (const auto& [name, id] : ids) {
    fields(std::string("field ") + name, {id});
    all.push_back(id);
  }
  fields("field batch, fast (first 6)", {all.begin(), all.begin() + 6});
  fields("field batch, full (all 9)", all);
  readings.emplace_back("nvmlDeviceGetTotalEnergyConsumption", [&] {
    unsigned long long mj = 0;  // NOLINT(google-runtime-int)
    if (lib->device_get_total_energy_consumption == nullptr) return -1;
    return lib->device_get_total_energy_consumption(device, &mj);
  });
  readings.emplace_back("nvmlDeviceGetTemperature", [&] {
    unsigned t = 0;
    if (lib->device_get_temperature == nullptr) return -1;
    return lib->device_get_temperature(device, api::nvml_temperature_gpu, &t);
  });
  readings.emplace_back("nvmlDeviceGetClockInfo (SM)", [&] {
    unsigned c = 0;
    if (lib->device_get_clock_info == nullptr) return -1;
    return lib->device_get_clock_info(device, api::nvml_clock_sm, &c);
  });
  readings.emplace_back("nvmlDeviceGetCurrentClocksEventReasons", [&] {
    unsigned long long r = 0;  // NOLINT(google-runtime-int)
    if (lib->device_get_current_clock_reasons == nullptr) return -1;
    return lib->device_get_current_clock_reasons(device, &r);
  });
  readings.emplace_back("nvmlDeviceGetPerformanceState", [&] {
    int p = 0;
    if (lib->device_get_performance_state == nullptr) return -1;
    return lib->device_get_performance_state(device, &p);
  });
  readings.emplace_back("nvmlDeviceGetUtilizationRates", [&] {
    api::nvml_utilization u{};
    if (lib->device_get_utilization_rates == nullptr) return -1;
    return lib->device_get_utilization_rates(device, &u);
  });
  readings.emplace_back("nvmlDeviceGetMemoryInfo_v2", [&] {
    if (lib->device_get_memory_info_v2 == nullptr) return -1;
    api::nvml_memory_v2 memory{};
    memory.version = api::nvml_memory_v2_version;
    return lib->device_get_memory_info_v2(device, &memory);
  });
  for (int r = 0; r < repeats; ++r) {
    for (auto& reading : readings) {
      const auto start = std::chrono::steady_clock::now();
      reading.last_result = reading.call();
      const auto end = std::chrono::steady_clock::now();
      reading.us.push_back(std::chrono::duration<double, std::micro>(end - start).count());
    }
  }
  std::printf("| reading | median µs | p90 µs | max µs | result |\n|---|---|---|---|---|\n");
  for (const auto& reading : readings) {
    std::printf("| %s | %.1f | %.1f | %.1f | %s |\n", reading.name.c_str(),
                quantile(reading.us, 0.5), quantile(reading.us, 0.9), quantile(reading.us, 1.0),
                reading.last_result == 0  ? "ok"
                : reading.last_result < 0 ? "absent in this driver"
                                          : lib->describe(reading.last_result).c_str());
  }
  return 0;
}
