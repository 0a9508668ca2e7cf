// Energy per run with its CI on the simulated GPU: the counter's update period is found from
// its steps, windows span k_energy_window_periods of it, the figure is the runs' energy and its
// CI holds it; a counter that moves at every reading bounds the period by the interval; runs
// with no stretch long enough get no CI.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "coolbench/measure/protocol.hpp"
#include "coolbench/report/run_report.hpp"
#include "measure/sim_gpu.hpp"

namespace coolbench::measure {
namespace {

using namespace std::chrono_literals;

/// One long burst of 6 s: a latency-bound workload, one context.
run_result long_run(const sim::gpu_model& m) {
  sim::gpu g(m);
  sim::workload w(g);
  sim::environment env(g);
  protocol_options o;
  o.contexts = 1;
  o.min_time = 6s;
  o.max_time = 60s;
  o.rel_ci = 0.5;
  return measure(w, env, o);
}

/// The energy of one run: busy power over the run, idle over the host's gap between runs.
double expected_j_per_run(const sim::gpu_model& m) {
  return (m.busy_w * m.base_ms + m.idle_w * m.host_gap_ms) / 1000;
}

TEST(Energy, TheCountersPeriodIsFoundAndTheCiHoldsTheRunsEnergy) {
  sim::gpu_model m;
  m.energy_update_ns = 100'000'000;  // the counter moves every 100 ms, read every 20 ms
  const run_result r = long_run(m);
  ASSERT_TRUE(r.complete) << r.error;
  ASSERT_TRUE(r.energy);
  const energy_figure& e = *r.energy;
  EXPECT_TRUE(e.period_resolved);
  EXPECT_NEAR(e.counter_period_ms, 100, 1);
  EXPECT_NEAR(e.reading_interval_ms, 20, 0.5);
  EXPECT_NEAR(e.window_min_ms, k_energy_window_periods * 100, 10);
  EXPECT_GE(e.windows, 4);
  EXPECT_GE(e.seconds, e.windows * e.window_min_ms / 1000 - 1e-9);
  ASSERT_TRUE(e.ci);
  const double expected = expected_j_per_run(m);
  EXPECT_NEAR(e.j_per_run, expected, 0.02 * expected);
  EXPECT_LE(e.ci->first, expected * 1.001);
  EXPECT_GE(e.ci->second, expected * 0.999);
  EXPECT_NEAR(e.mean_power_w, expected / (m.base_ms + m.host_gap_ms) * 1000, 2);
  const std::string text = report::format_energy(r);
  EXPECT_NE(text.find("mean power"), std::string::npos) << text;
  EXPECT_NE(text.find("moved every 100 ms"), std::string::npos) << text;
  const auto doc = report::to_json(r);
  EXPECT_EQ(doc["summary"]["energy"]["windows"], e.windows);
  EXPECT_EQ(doc["summary"]["energy"]["ci_j"].size(), 2U);
}

TEST(Energy, ACounterMovingAtEveryReadingIsBoundedByTheInterval) {
  const run_result r = long_run({});
  ASSERT_TRUE(r.energy);
  EXPECT_FALSE(r.energy->period_resolved);
  EXPECT_NEAR(r.energy->counter_period_ms, 20, 0.5);
  EXPECT_NEAR(r.energy->window_min_ms, k_energy_window_periods * 20, 1);
  EXPECT_NE(report::format_energy(r).find("moved every <= 20 ms"), std::string::npos);
}

TEST(Energy, BurstsShorterThanTheWindowGiveNoCi) {
  sim::gpu_model m;
  m.energy_update_ns = 2'000'000'000;  // a window would need 20 s of uninterrupted runs
  const run_result r = long_run(m);
  EXPECT_FALSE(r.energy);
  ASSERT_TRUE(r.energy_per_run_j);  // the pooled figure, as before
  EXPECT_NE(report::format_energy(r).find("no CI"), std::string::npos);
}

}  // namespace
}  // namespace coolbench::measure
