// NVML's total-energy counter on a GPU under load, against the power readings integrated over
// the same time: the counter's update period from its steps, and agreement within the error
// one period at each end allows; then the protocol's energy per run with its CI, against the
// power its samples read (docs/measure.md, "Energy"). Label gpu: skips, saying why, without one.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "coolbench/core/error.hpp"
#include "coolbench/measure/heater.hpp"
#include "coolbench/measure/protocol.hpp"
#include "coolbench/measure/workload.hpp"
#include "coolbench/stats/summary.hpp"
#include "coolbench/telemetry/gpu.hpp"

namespace coolbench {
namespace {

using namespace std::chrono_literals;
using telemetry::gpu_telemetry;

struct reading {
  double t_s;
  double energy_j;
  double power_w;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class energy_counter : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      if (gpu_telemetry::device_count() == 0) GTEST_SKIP() << "no GPU visible to CUDA";
    } catch (const not_available& e) {
      GTEST_SKIP() << "no GPU here: " << e.what();
    }
  }
};

/// Reads the counter and the power as fast as NVML answers for `span`.
std::vector<reading> read_for(const gpu_telemetry& gpu, std::chrono::milliseconds span) {
  std::vector<reading> out;
  const auto t0 = std::chrono::steady_clock::now();
  while (seconds_since(t0) < std::chrono::duration<double>(span).count()) {
    const auto s = gpu.read(telemetry::read_scope::all);
    if (!s.energy_mj.ok() || !s.power_w.ok()) continue;
    out.push_back(
        {seconds_since(t0), static_cast<double>(s.energy_mj.value) / 1000, s.power_w.value});
  }
  return out;
}

TEST_F(energy_counter, MovesOnAPeriodAndAgreesWithThePowerIntegrated) {
  gpu_telemetry gpu(0);
  measure::heater load(0, measure::parse_gemm_chain("gemm:fp16:4096:4096:4096:4"));
  load.start();
  std::this_thread::sleep_for(500ms);  // past the ramp: a steady draw
  const std::vector<reading> r = read_for(gpu, 3000ms);
  (void)load.stop();
  ASSERT_GE(r.size(), 50U) << "NVML answered too slowly";
  std::vector<double> steps;
  double last_change = -1;
  for (std::size_t i = 1; i < r.size(); ++i) {
    if (r[i].energy_j == r[i - 1].energy_j) continue;
    if (last_change >= 0) steps.push_back(r[i].t_s - last_change);
    last_change = r[i].t_s;
  }
  ASSERT_GE(steps.size(), 5U);
  const double period_s = stats::median(steps);
  // From the first change to the last, the counter covers whole periods; the power in between,
  // integrated (trapezoid), should hold the same energy.
  std::size_t first = 1;
  while (r[first].energy_j == r[first - 1].energy_j) ++first;
  std::size_t last = r.size() - 1;
  while (r[last].energy_j == r[last - 1].energy_j) --last;
  double integrated = 0;
  for (std::size_t i = first + 1; i <= last; ++i) {
    integrated += (r[i].power_w + r[i - 1].power_w) / 2 * (r[i].t_s - r[i - 1].t_s);
  }
  const double counted = r[last].energy_j - r[first].energy_j;
  const double span = r[last].t_s - r[first].t_s;
  std::printf(
      "energy counter: %zu reads in %.2f s (%.1f ms apart), moved every %.1f ms (median of %zu "
      "steps); %.1f J counted, %.1f J integrated from power (%.1f W mean), ratio %.4f\n",
      r.size(), r.back().t_s, 1000 * r.back().t_s / static_cast<double>(r.size()), 1000 * period_s,
      steps.size(), counted, integrated, integrated / span, counted / integrated);
  // Each end is off by up to one read interval; the power readings' own averaging adds some.
  const double allowed = 0.05 + 2 * (r.back().t_s / static_cast<double>(r.size())) / span;
  EXPECT_NEAR(counted / integrated, 1.0, allowed);
}

TEST_F(energy_counter, TheProtocolsEnergyPerRunHasACiAndMatchesThePowerRead) {
  auto w = measure::make_workload("gemm:fp16:gpt2-small", 0);
  auto env = measure::make_gpu_environment(0);
  measure::protocol_options o;
  o.contexts = 1;
  // The protocol reads the energy counter about once a second; the start-up probe's period
  // (about 100 ms on an H200) sizes the windows at about one reading interval, so 5 s of
  // measurement hold several (docs/measure.md, "Energy").
  o.min_time = 5s;
  o.max_time = 60s;
  o.rel_ci = 0.5;
  o.target_temp_c = 60;  // this test is about energy, not the cold state
  const measure::run_result r = measure::measure(*w, *env, o);
  ASSERT_TRUE(r.complete) << r.error;
  ASSERT_TRUE(r.energy_probe) << "the GPU environment ran no probe";
  std::printf("start-up probe: %s\n", r.energy_probe->note.c_str());
  ASSERT_TRUE(r.energy_probe->period_ms) << r.energy_probe->note;
  ASSERT_TRUE(r.energy) << "no window of " << measure::k_energy_window_periods
                        << " counter periods in " << r.seconds_total << " s";
  const auto& e = *r.energy;
  std::vector<double> power;
  for (const auto& s : r.samples) {
    if (s.kept && s.conditions.power_w) power.push_back(*s.conditions.power_w);
  }
  ASSERT_FALSE(power.empty());
  const double median_power = stats::median(power);
  std::printf(
      "protocol energy: %.6f J per run, CI %.6f to %.6f, %d windows of >= %.0f ms, counter "
      "period %s%.1f ms from %s (reads %.1f ms apart); mean power %.1f W, samples' median "
      "power %.1f W; %.5f ms median latency\n",
      e.j_per_run, e.ci ? e.ci->first : 0, e.ci ? e.ci->second : 0, e.windows, e.window_min_ms,
      e.period_resolved ? "" : "<= ", e.counter_period_ms, to_string(e.period_source).c_str(),
      e.reading_interval_ms, e.mean_power_w, median_power, r.summary.median_ms);
  // The readings, 1 s apart, cannot resolve a counter of about 100 ms: the probe sized the
  // windows, so that a few seconds hold several.
  EXPECT_EQ(e.period_source, measure::energy_period_source::probe) << e.period_note;
  ASSERT_TRUE(e.ci) << "one window only";
  EXPECT_LE(e.ci->first, e.j_per_run);
  EXPECT_GE(e.ci->second, e.j_per_run);
  // The samples' power is the highest read while each ran: at least the mean, not far above.
  EXPECT_NEAR(e.mean_power_w / median_power, 1.0, 0.15);
  // J per run = mean power x the time per run (the host's gap between runs included).
  const double per_run_s = e.seconds / e.runs;
  EXPECT_NEAR(e.j_per_run / (e.mean_power_w * per_run_s), 1.0, 0.05);
}

}  // namespace
}  // namespace coolbench
