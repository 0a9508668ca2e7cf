// The sampler's start-up energy probe over the NVML test double (tests/telemetry/fake), whose
// energy counter moves every FAKE_NVML_ENERGY_PERIOD_MS: what it learns at the protocol's sampler
// settings from counters of 100 ms and 20 ms, one that never moves, and reads that fail.
//
// The fake NVML reads its script at nvmlInit only, so each test sets it before the sampler's
// gpu_telemetry exists and lets it die before returning.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "coolbench/telemetry/sampler.hpp"
#include "telemetry/fake/fake_values.hpp"

namespace coolbench::telemetry {
namespace {

using namespace std::chrono_literals;

class energy_probe_nvml : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("COOLBENCH_NVML_LIBRARY", FAKE_NVML_PATH, 1);
    setenv("COOLBENCH_CUDA_LIBRARY", FAKE_CUDA_PATH, 1);
    for (const char* name : {fake::env_nvml_fail, fake::env_nvml_energy_period_ms}) unsetenv(name);
  }
  void TearDown() override {
    for (const char* name : {fake::env_nvml_fail, fake::env_nvml_energy_period_ms}) unsetenv(name);
  }

  /// Runs a sampler at the protocol's settings (every 20 ms, the counters every 200 ms, energy
  /// every 1000 ms, the probe's defaults) until its probe is done, and returns what it learned.
  static energy_probe_result probe() {
    sampler s(make_gpu_source(0), {.period = 20ms,
                                   .slow_period = 200ms,
                                   .energy_period = 1000ms,
                                   .energy_probe = energy_probe_options{}});
    s.start();
    const std::optional<energy_probe_result> r = s.energy_probe(5000ms);
    s.stop();
    EXPECT_TRUE(r) << "the probe did not finish in 5 s";
    if (r) std::printf("probe: %s\n", r->note.c_str());
    return r.value_or(energy_probe_result{});
  }
};

TEST_F(energy_probe_nvml, learns_a_100_ms_counter) {
  setenv(fake::env_nvml_energy_period_ms, "100", 1);
  const energy_probe_result r = probe();
  ASSERT_TRUE(r.period_ms) << r.note;
  // Each change is placed up to a 20 ms tick late; a loaded CI machine adds some.
  EXPECT_NEAR(*r.period_ms, 100, 15) << r.note;
  EXPECT_TRUE(r.resolved) << r.note;
  EXPECT_EQ(r.failed_reads, 0);
  // Bounded: five changes 100 ms apart take at most about half a second.
  EXPECT_LE(r.reads, 35) << r.note;
  EXPECT_LE(r.seconds, 0.7) << r.note;
}

TEST_F(energy_probe_nvml, bounds_a_20_ms_counter_by_the_sampler_period) {
  setenv(fake::env_nvml_energy_period_ms, "20", 1);
  const energy_probe_result r = probe();
  ASSERT_TRUE(r.period_ms) << r.note;
  // Read every 20 ms, a 20 ms counter moves at (nearly) every read: the probe knows the period
  // to about a tick, and never gives more than the ticks' spacing allows.
  EXPECT_NEAR(*r.period_ms, 20, 10) << r.note;
}

TEST_F(energy_probe_nvml, a_counter_that_never_moves_is_given_up_within_its_bounds) {
  const energy_probe_result r = probe();  // the double's counter stands still by default
  EXPECT_FALSE(r.period_ms);
  EXPECT_LE(r.reads, energy_probe_options{}.max_reads);
  EXPECT_LE(r.seconds, 1.0 + 0.1);
  EXPECT_NE(r.note.find("did not move"), std::string::npos) << r.note;
}

TEST_F(energy_probe_nvml, reads_that_fail_teach_nothing_and_say_so) {
  setenv(fake::env_nvml_energy_period_ms, "100", 1);
  setenv(fake::env_nvml_fail, "nvmlDeviceGetFieldValues,nvmlDeviceGetTotalEnergyConsumption", 1);
  const energy_probe_result r = probe();
  EXPECT_FALSE(r.period_ms);
  EXPECT_GT(r.reads, 0);
  EXPECT_EQ(r.failed_reads, r.reads);
  EXPECT_NE(r.note.find("every read of the energy counter failed"), std::string::npos) << r.note;
}

}  // namespace
}  // namespace coolbench::telemetry
