// gpu_telemetry over the test doubles of NVML and the CUDA driver (tests/telemetry/fake): the
// decoding of every reading, the CUDA ordinal → NVML mapping, and the error paths.
//
// The fake NVML reads its script (FAKE_NVML_*) at nvmlInit only, and one NVML instance is shared
// while any gpu_telemetry lives, so every test sets its environment before it constructs
// gpu_telemetry objects and lets them all die before it returns. The fake CUDA driver reads its
// script at every cuInit.
#include "coolbench/telemetry/gpu.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "coolbench/core/clock.hpp"
#include "coolbench/core/error.hpp"
#include "coolbench/telemetry/sampler.hpp"
#include "telemetry/fake/fake_values.hpp"

namespace coolbench::telemetry {
namespace {

using namespace std::chrono_literals;

constexpr const char* fake_env[] = {fake::env_nvml_init_result, fake::env_nvml_gpus,
                                    fake::env_nvml_unsupported, fake::env_nvml_fail,
                                    fake::env_nvml_processes,   fake::env_cuda_init_result,
                                    fake::env_cuda_devices};

// Above PID_MAX_LIMIT (2^22): no process has these pids, so their names come from NVML.
constexpr unsigned absent_pid = 4194304 + 100;

class gpu_telemetry_test : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("COOLBENCH_NVML_LIBRARY", FAKE_NVML_PATH, 1);
    setenv("COOLBENCH_CUDA_LIBRARY", FAKE_CUDA_PATH, 1);
    for (const char* name : fake_env) unsetenv(name);
  }
  void TearDown() override {
    for (const char* name : fake_env) unsetenv(name);
    setenv("COOLBENCH_NVML_LIBRARY", FAKE_NVML_PATH, 1);
  }
};

template <class T>
void expect_ok(const reading<T>& r, T value, const char* what) {
  EXPECT_EQ(r.status, reading_status::ok) << what;
  EXPECT_EQ(r.value, value) << what;
}

void expect_identity(const gpu_identity& id, int ordinal, unsigned gpu) {
  EXPECT_EQ(id.cuda_ordinal, ordinal);
  EXPECT_EQ(id.nvml_index, gpu);
  EXPECT_EQ(id.name, fake::gpu_name(gpu));
  EXPECT_EQ(id.uuid, fake::gpu_uuid(gpu));
  EXPECT_EQ(id.pci_bus_id, fake::nvml_bus_id(gpu));
  EXPECT_EQ(id.driver_version, fake::driver_version);
  EXPECT_EQ(id.nvml_version, fake::nvml_version);
  expect_ok(id.cuda_driver_version, 13000, "cuda_driver_version");
  expect_ok(id.compute_capability, 90, "compute_capability");
  expect_ok(id.temp_shutdown_c, static_cast<int>(fake::threshold_shutdown_c), "temp_shutdown_c");
  expect_ok(id.temp_slowdown_c, static_cast<int>(fake::threshold_slowdown_c), "temp_slowdown_c");
  expect_ok(id.temp_mem_max_c, static_cast<int>(fake::threshold_mem_max_c), "temp_mem_max_c");
  expect_ok(id.temp_gpu_max_c, static_cast<int>(fake::threshold_gpu_max_c), "temp_gpu_max_c");
  expect_ok(id.clock_sm_max_mhz, fake::max_clocks_mhz.sm, "clock_sm_max_mhz");
  expect_ok(id.clock_mem_max_mhz, fake::max_clocks_mhz.mem, "clock_mem_max_mhz");
  expect_ok(id.clock_graphics_max_mhz, fake::max_clocks_mhz.graphics, "clock_graphics_max_mhz");
  expect_ok(id.clock_sm_boost_mhz, fake::boost_clocks_mhz.sm, "clock_sm_boost_mhz");
  expect_ok(id.clock_graphics_app_mhz, fake::applications_clocks_mhz.graphics,
            "clock_graphics_app_mhz");
  expect_ok(id.clock_graphics_default_app_mhz, fake::default_applications_clocks_mhz.graphics,
            "clock_graphics_default_app_mhz");
  expect_ok(id.power_limit_w, 700.0, "power_limit_w");
  expect_ok(id.power_default_limit_w, 700.0, "power_default_limit_w");
  expect_ok(id.power_min_limit_w, 200.0, "power_min_limit_w");
  expect_ok(id.power_max_limit_w, 700.0, "power_max_limit_w");
  expect_ok(id.memory_total_bytes, std::uint64_t{fake::memory_total_bytes}, "memory_total_bytes");
  expect_ok(id.persistence_mode, true, "persistence_mode");
  expect_ok(id.supported_clock_reasons, std::uint64_t{fake::supported_clock_reasons},
            "supported_clock_reasons");
}

// Every reading of a sample, by name, with its status.
std::vector<std::pair<std::string, reading_status>> statuses(const gpu_sample& s) {
  const auto& c = s.reason_counters;
  return {{"temp_gpu_c", s.temp_gpu_c.status},
          {"temp_mem_c", s.temp_mem_c.status},
          {"clock_sm_mhz", s.clock_sm_mhz.status},
          {"clock_mem_mhz", s.clock_mem_mhz.status},
          {"clock_graphics_mhz", s.clock_graphics_mhz.status},
          {"power_w", s.power_w.status},
          {"power_avg_w", s.power_avg_w.status},
          {"energy_mj", s.energy_mj.status},
          {"pstate", s.pstate.status},
          {"clock_reasons", s.clock_reasons.status},
          {"sw_power_cap_ns", c.sw_power_cap_ns.status},
          {"sync_boost_ns", c.sync_boost_ns.status},
          {"sw_thermal_ns", c.sw_thermal_ns.status},
          {"hw_thermal_ns", c.hw_thermal_ns.status},
          {"hw_power_brake_ns", c.hw_power_brake_ns.status},
          {"util_gpu_pct", s.util_gpu_pct.status},
          {"util_mem_pct", s.util_mem_pct.status},
          {"memory_used_bytes", s.memory_used_bytes.status}};
}

// A reading without a value must hold no value either (never a 0 that looks real).
template <class T>
void expect_status(const reading<T>& r, reading_status status, const char* what) {
  EXPECT_EQ(r.status, status) << what;
  EXPECT_FALSE(r.ok()) << what;
}

TEST_F(gpu_telemetry_test, counts_the_gpus_cuda_sees) {
  EXPECT_EQ(gpu_telemetry::device_count(), 2);
  setenv(fake::env_cuda_devices, "1", 1);
  EXPECT_EQ(gpu_telemetry::device_count(), 1);
  setenv(fake::env_cuda_devices, "", 1);
  EXPECT_EQ(gpu_telemetry::device_count(), 0);
}

TEST_F(gpu_telemetry_test, reads_the_identity_of_each_gpu) {
  const gpu_telemetry gpu0(0);
  const gpu_telemetry gpu1(1);
  {
    SCOPED_TRACE("GPU 0");
    expect_identity(gpu0.identity(), 0, 0);
  }
  {
    SCOPED_TRACE("GPU 1");
    expect_identity(gpu1.identity(), 1, 1);
  }
}

TEST_F(gpu_telemetry_test, maps_cuda_ordinals_through_the_pci_bus_id) {
  setenv(fake::env_cuda_devices, "1,0", 1);
  const gpu_telemetry first(0);
  const gpu_telemetry second(1);
  EXPECT_EQ(first.identity().cuda_ordinal, 0);
  EXPECT_EQ(first.identity().name, "Fake GPU 1");
  EXPECT_EQ(first.identity().nvml_index, 1U);
  EXPECT_EQ(first.identity().pci_bus_id, fake::nvml_bus_id(1));
  EXPECT_EQ(second.identity().cuda_ordinal, 1);
  EXPECT_EQ(second.identity().name, "Fake GPU 0");
  // Each handle reads its own GPU: temperatures differ by GPU.
  expect_ok(first.read().temp_gpu_c, static_cast<int>(fake::temperature_c(1)), "temp of ordinal 0");
  expect_ok(second.read().temp_gpu_c, static_cast<int>(fake::temperature_c(0)),
            "temp of ordinal 1");
}

TEST_F(gpu_telemetry_test, an_ordinal_out_of_range_names_the_count) {
  for (const int ordinal : {2, -1, 99}) {
    try {
      const gpu_telemetry gpu(ordinal);
      ADD_FAILURE() << "ordinal " << ordinal << " was accepted";
    } catch (const invalid_argument& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("ordinal " + std::to_string(ordinal)), std::string::npos) << message;
      EXPECT_NE(message.find("CUDA sees 2 GPU(s)"), std::string::npos) << message;
    }
  }
}

TEST_F(gpu_telemetry_test, reads_every_value_with_its_unit) {
  for (unsigned i = 0; i < 2; ++i) {
    SCOPED_TRACE("GPU " + std::to_string(i));
    const gpu_telemetry gpu(static_cast<int>(i));
    const std::int64_t before = steady_now_ns();
    const gpu_sample s = gpu.read();
    for (const auto& [name, status] : statuses(s)) {
      EXPECT_EQ(status, reading_status::ok) << name;
    }
    EXPECT_GE(s.time_ns, before);
    EXPECT_LE(s.time_ns, steady_now_ns());
    expect_ok(s.temp_gpu_c, static_cast<int>(fake::temperature_c(i)), "temp_gpu_c");
    expect_ok(s.temp_mem_c, static_cast<int>(fake::memory_temperature_c(i)), "temp_mem_c");
    expect_ok(s.clock_sm_mhz, fake::current_clocks_mhz.sm, "clock_sm_mhz");
    expect_ok(s.clock_mem_mhz, fake::current_clocks_mhz.mem, "clock_mem_mhz");
    expect_ok(s.clock_graphics_mhz, fake::current_clocks_mhz.graphics, "clock_graphics_mhz");
    // The instantaneous field (120 W), not nvmlDeviceGetPowerUsage (123.456 W).
    expect_ok(s.power_w, 120.0, "power_w");
    expect_ok(s.power_avg_w, 110.0, "power_avg_w");
    expect_ok(s.energy_mj, std::uint64_t{fake::energy_mj}, "energy_mj");
    expect_ok(s.pstate, fake::performance_state, "pstate");
    expect_ok(s.clock_reasons, std::uint64_t{fake::clock_reasons(i)}, "clock_reasons");
    const auto& c = s.reason_counters;
    expect_ok(c.sw_power_cap_ns, std::uint64_t{fake::perf_policy_power_ns}, "sw_power_cap_ns");
    expect_ok(c.sync_boost_ns, std::uint64_t{fake::perf_policy_sync_boost_ns}, "sync_boost_ns");
    expect_ok(c.sw_thermal_ns, std::uint64_t{fake::reason_sw_thermal_ns}, "sw_thermal_ns");
    expect_ok(c.hw_thermal_ns, std::uint64_t{fake::reason_hw_thermal_ns}, "hw_thermal_ns");
    expect_ok(c.hw_power_brake_ns, std::uint64_t{fake::reason_hw_power_brake_ns},
              "hw_power_brake_ns");
    expect_ok(s.util_gpu_pct, fake::utilization_gpu_percent, "util_gpu_pct");
    expect_ok(s.util_mem_pct, fake::utilization_memory_percent, "util_mem_pct");
    expect_ok(s.memory_used_bytes, std::uint64_t{fake::memory_used_bytes}, "memory_used_bytes");
  }
}

TEST_F(gpu_telemetry_test, a_fast_read_skips_only_the_costly_readings) {
  const gpu_telemetry gpu(0);
  const gpu_sample s = gpu.read(read_scope::fast);
  const std::set<std::string> costly = {"energy_mj", "hw_thermal_ns", "hw_power_brake_ns"};
  for (const auto& [name, status] : statuses(s)) {
    EXPECT_EQ(status, costly.contains(name) ? reading_status::skipped : reading_status::ok) << name;
  }
  EXPECT_EQ(s.energy_mj.value, 0U);  // skipped, not a made-up zero reading
  expect_ok(s.reason_counters.sw_thermal_ns, std::uint64_t{fake::reason_sw_thermal_ns},
            "sw_thermal_ns");
  expect_ok(s.power_w, 120.0, "power_w");
}

TEST_F(gpu_telemetry_test, a_counters_read_skips_only_the_energy_counter) {
  const gpu_telemetry gpu(0);
  const gpu_sample s = gpu.read(read_scope::counters);
  for (const auto& [name, status] : statuses(s)) {
    EXPECT_EQ(status, name == "energy_mj" ? reading_status::skipped : reading_status::ok) << name;
  }
  EXPECT_EQ(s.energy_mj.value, 0U);
  expect_ok(s.reason_counters.hw_thermal_ns, std::uint64_t{fake::reason_hw_thermal_ns},
            "hw_thermal_ns");
  expect_ok(s.reason_counters.hw_power_brake_ns, std::uint64_t{fake::reason_hw_power_brake_ns},
            "hw_power_brake_ns");
}

TEST_F(gpu_telemetry_test, unsupported_functions_give_unsupported_readings) {
  setenv(fake::env_nvml_unsupported,
         "nvmlDeviceGetTemperature,nvmlDeviceGetClockInfo,nvmlDeviceGetPerformanceState,"
         "nvmlDeviceGetCurrentClocksEventReasons,nvmlDeviceGetMemoryInfo,"
         "nvmlDeviceGetTemperatureThreshold,nvmlDeviceGetMaxClockInfo,"
         "nvmlDeviceGetEnforcedPowerLimit,nvmlDeviceGetPersistenceMode,"
         "nvmlSystemGetCudaDriverVersion_v2",
         1);
  const gpu_telemetry gpu(0);
  const gpu_identity& id = gpu.identity();
  EXPECT_EQ(id.name, "Fake GPU 0");  // what is supported still reads
  expect_status(id.cuda_driver_version, reading_status::unsupported, "cuda_driver_version");
  expect_status(id.temp_shutdown_c, reading_status::unsupported, "temp_shutdown_c");
  expect_status(id.temp_gpu_max_c, reading_status::unsupported, "temp_gpu_max_c");
  expect_status(id.clock_sm_max_mhz, reading_status::unsupported, "clock_sm_max_mhz");
  expect_status(id.power_limit_w, reading_status::unsupported, "power_limit_w");
  expect_status(id.memory_total_bytes, reading_status::unsupported, "memory_total_bytes");
  expect_status(id.persistence_mode, reading_status::unsupported, "persistence_mode");
  expect_ok(id.power_default_limit_w, 700.0, "power_default_limit_w");

  const gpu_sample s = gpu.read();
  expect_status(s.temp_gpu_c, reading_status::unsupported, "temp_gpu_c");
  expect_status(s.clock_sm_mhz, reading_status::unsupported, "clock_sm_mhz");
  expect_status(s.clock_mem_mhz, reading_status::unsupported, "clock_mem_mhz");
  expect_status(s.clock_graphics_mhz, reading_status::unsupported, "clock_graphics_mhz");
  expect_status(s.pstate, reading_status::unsupported, "pstate");
  expect_status(s.clock_reasons, reading_status::unsupported, "clock_reasons");
  expect_status(s.memory_used_bytes, reading_status::unsupported, "memory_used_bytes");
  EXPECT_EQ(s.temp_gpu_c.value, 0);  // no stale or made-up value behind the status
  expect_ok(s.power_w, 120.0, "power_w");
  expect_ok(s.temp_mem_c, static_cast<int>(fake::memory_temperature_c(0)), "temp_mem_c");
}

TEST_F(gpu_telemetry_test, without_field_values_power_and_energy_fall_back) {
  setenv(fake::env_nvml_unsupported, "nvmlDeviceGetFieldValues", 1);
  {
    const gpu_telemetry gpu(0);
    const gpu_sample s = gpu.read();
    expect_ok(s.power_w, 123.456, "power_w from nvmlDeviceGetPowerUsage");
    expect_ok(s.energy_mj, std::uint64_t{fake::energy_mj}, "energy from TotalEnergyConsumption");
    expect_status(s.power_avg_w, reading_status::unsupported, "power_avg_w");
    expect_status(s.temp_mem_c, reading_status::unsupported, "temp_mem_c");
    expect_status(s.reason_counters.sw_power_cap_ns, reading_status::unsupported, "sw_power_cap");
    expect_status(s.reason_counters.hw_thermal_ns, reading_status::unsupported, "hw_thermal_ns");
  }
  setenv(fake::env_nvml_unsupported,
         "nvmlDeviceGetFieldValues,nvmlDeviceGetPowerUsage,nvmlDeviceGetTotalEnergyConsumption", 1);
  {
    const gpu_telemetry gpu(0);
    const gpu_sample s = gpu.read();
    expect_status(s.power_w, reading_status::unsupported, "power_w");
    expect_status(s.energy_mj, reading_status::unsupported, "energy_mj");
    EXPECT_EQ(s.power_w.value, 0.0);
  }
}

TEST_F(gpu_telemetry_test, failing_functions_give_failed_readings) {
  setenv(fake::env_nvml_fail,
         "nvmlDeviceGetTemperature,nvmlDeviceGetClockInfo,nvmlDeviceGetFieldValues,"
         "nvmlDeviceGetUtilizationRates,nvmlDeviceGetTemperatureThreshold",
         1);
  const gpu_telemetry gpu(0);
  expect_status(gpu.identity().temp_slowdown_c, reading_status::failed, "temp_slowdown_c");
  const gpu_sample s = gpu.read();
  expect_status(s.temp_gpu_c, reading_status::failed, "temp_gpu_c");
  expect_status(s.clock_sm_mhz, reading_status::failed, "clock_sm_mhz");
  expect_status(s.temp_mem_c, reading_status::failed, "temp_mem_c");
  expect_status(s.power_avg_w, reading_status::failed, "power_avg_w");
  expect_status(s.reason_counters.sync_boost_ns, reading_status::failed, "sync_boost_ns");
  expect_status(s.util_gpu_pct, reading_status::failed, "util_gpu_pct");
  expect_status(s.util_mem_pct, reading_status::failed, "util_mem_pct");
  // The fallbacks still answer.
  expect_ok(s.power_w, 123.456, "power_w");
  expect_ok(s.energy_mj, std::uint64_t{fake::energy_mj}, "energy_mj");
  expect_ok(s.pstate, 0, "pstate");
}

TEST_F(gpu_telemetry_test, unsupported_utilization_leaves_both_unsupported) {
  setenv(fake::env_nvml_unsupported, "nvmlDeviceGetUtilizationRates", 1);
  const gpu_telemetry gpu(1);
  const gpu_sample s = gpu.read();
  expect_status(s.util_gpu_pct, reading_status::unsupported, "util_gpu_pct");
  expect_status(s.util_mem_pct, reading_status::unsupported, "util_mem_pct");
  expect_ok(s.memory_used_bytes, std::uint64_t{fake::memory_used_bytes}, "memory_used_bytes");
}

TEST_F(gpu_telemetry_test, a_driver_that_is_not_loaded_is_not_available) {
  setenv(fake::env_nvml_init_result, "9", 1);
  for (const bool count_only : {true, false}) {
    try {
      if (count_only) {
        (void)gpu_telemetry::device_count();
      } else {
        const gpu_telemetry gpu(0);
      }
      ADD_FAILURE() << "NVML that cannot init was accepted";
    } catch (const not_available& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("NVML_ERROR_DRIVER_NOT_LOADED"), std::string::npos) << message;
      EXPECT_NE(message.find("NVIDIA driver"), std::string::npos) << message;
    }
  }
}

TEST_F(gpu_telemetry_test, a_missing_nvml_library_is_not_available) {
  setenv("COOLBENCH_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  try {
    const gpu_telemetry gpu(0);
    ADD_FAILURE() << "a missing NVML was accepted";
  } catch (const not_available& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << message;
    EXPECT_NE(message.find("driver"), std::string::npos) << message;
  }
  EXPECT_THROW((void)gpu_telemetry::device_count(), not_available);
}

TEST_F(gpu_telemetry_test, cuda_without_devices_counts_zero) {
  setenv(fake::env_cuda_init_result, "100", 1);  // CUDA_ERROR_NO_DEVICE
  EXPECT_EQ(gpu_telemetry::device_count(), 0);
  EXPECT_THROW(gpu_telemetry(0), invalid_argument);
}

TEST_F(gpu_telemetry_test, lists_processes_with_memory_and_names) {
  // More than the 16 entries processes() first asks for, so NVML's size protocol runs.
  const auto self = static_cast<unsigned>(getpid());
  std::string script = std::to_string(self) + ":1048576," + std::to_string(absent_pid) + ":na";
  constexpr unsigned extra = 20;
  for (unsigned k = 1; k <= extra; ++k) {
    script += "," + std::to_string(absent_pid + k) + ":" + std::to_string(k * 1000);
  }
  setenv(fake::env_nvml_processes, script.c_str(), 1);

  std::string own_name;
  std::getline(std::ifstream("/proc/self/comm"), own_name);
  ASSERT_FALSE(own_name.empty());

  const gpu_telemetry gpu0(0);
  const auto processes = gpu0.processes();
  ASSERT_EQ(processes.size(), 2 + extra);
  EXPECT_EQ(processes[0].pid, self);
  expect_ok(processes[0].used_memory_bytes, std::uint64_t{1048576}, "own memory");
  EXPECT_EQ(processes[0].name, own_name);  // from /proc/<pid>/comm
  EXPECT_FALSE(processes[0].graphics);
  EXPECT_EQ(processes[1].pid, absent_pid);
  expect_status(processes[1].used_memory_bytes, reading_status::unsupported, "\"na\" memory");
  EXPECT_EQ(processes[1].name, fake::process_name(absent_pid));  // from nvmlSystemGetProcessName
  for (unsigned k = 1; k <= extra; ++k) {
    const gpu_process& p = processes[1 + k];
    EXPECT_EQ(p.pid, absent_pid + k);
    expect_ok(p.used_memory_bytes, std::uint64_t{k * 1000}, "memory");
    EXPECT_EQ(p.name, "fakeproc" + std::to_string(absent_pid + k));
  }
  // The fake lists processes on GPU 0 only.
  EXPECT_TRUE(gpu_telemetry(1).processes().empty());
}

TEST_F(gpu_telemetry_test, no_processes_is_an_empty_list) {
  const gpu_telemetry gpu(0);
  EXPECT_TRUE(gpu.processes().empty());
}

TEST_F(gpu_telemetry_test, a_sampler_reads_the_fake_gpu) {
  sampler s(make_gpu_source(0), {.period = 10ms});
  const std::int64_t start = steady_now_ns();
  s.start();
  std::this_thread::sleep_for(60ms);
  s.stop();
  const auto samples = s.since(start - 1);
  ASSERT_GE(samples.size(), 2U);  // 7 ticks fit in 60 ms; a loaded machine may lose some
  for (const gpu_sample& sample : samples) {
    expect_ok(sample.temp_gpu_c, 40, "temp_gpu_c");
    expect_ok(sample.power_w, 120.0, "power_w");
  }
  EXPECT_EQ(s.stats().failed_reads, 0U);
}

TEST_F(gpu_telemetry_test, make_gpu_source_checks_the_ordinal_at_once) {
  EXPECT_THROW((void)make_gpu_source(7), invalid_argument);
}

TEST_F(gpu_telemetry_test, links_between_gpus_read_nvlink_and_the_pcie_path) {
  setenv(fake::env_nvml_gpus, "4", 1);
  setenv(fake::env_cuda_devices, "0,1,2,3", 1);
  const gpu_telemetry gpu0(0);
  const gpu_telemetry gpu1(1);
  const gpu_telemetry gpu2(2);
  const gpu_link pair = gpu0.link_to(gpu1);  // partners: NVLinks 0..3, one PCIe switch
  EXPECT_EQ(pair.pcie_path, "PIX");
  expect_ok(pair.direct_nvlinks, fake::nvlinks_to_partner, "direct_nvlinks");
  expect_ok(pair.active_nvlinks, fake::nvlinks_to_partner, "active_nvlinks");
  expect_ok(pair.nvlink_p2p, true, "nvlink_p2p");
  EXPECT_EQ(pair.label(), "NV4");
  const gpu_link far = gpu0.link_to(gpu2);  // not partners: across NUMA nodes, no NVLink P2P
  EXPECT_EQ(far.pcie_path, "SYS");
  expect_ok(far.direct_nvlinks, 0U, "direct_nvlinks");
  expect_ok(far.nvlink_p2p, false, "nvlink_p2p");
  EXPECT_EQ(far.label(), "SYS");
  EXPECT_EQ(gpu2.link_to(gpu1).label(), "SYS");
}

TEST_F(gpu_telemetry_test, links_the_driver_does_not_report_read_unknown) {
  setenv(fake::env_nvml_unsupported,
         "nvmlDeviceGetTopologyCommonAncestor,nvmlDeviceGetNvLinkState,nvmlDeviceGetP2PStatus", 1);
  const gpu_telemetry gpu0(0);
  const gpu_telemetry gpu1(1);
  const gpu_link link = gpu0.link_to(gpu1);
  EXPECT_EQ(link.pcie_path, "");
  expect_status(link.direct_nvlinks, reading_status::unsupported, "direct_nvlinks");
  expect_status(link.active_nvlinks, reading_status::unsupported, "active_nvlinks");
  expect_status(link.nvlink_p2p, reading_status::unsupported, "nvlink_p2p");
  EXPECT_EQ(link.label(), "?");
}

}  // namespace
}  // namespace coolbench::telemetry
