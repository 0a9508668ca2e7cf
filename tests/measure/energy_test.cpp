// Energy per run with its CI on the simulated GPU: the counter's update period is found from
// its steps, windows span k_energy_window_periods of it, the figure is the runs' energy and its
// CI holds it; a counter that moves at every reading bounds the period by the interval; runs
// with no stretch long enough get no CI. At the protocol's once-a-second energy reads, the
// period the start-up probe learned sizes the windows, and a probe that learned nothing leaves
// the bound, saying so.
#include <gtest/gtest.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "coolbench/measure/protocol.hpp"
#include "coolbench/report/run_report.hpp"
#include "measure/sim_gpu.hpp"

namespace coolbench::measure {
namespace {

using namespace std::chrono_literals;

/// One long burst of `min_time`: a latency-bound workload, one context. `setup` configures the
/// environment (its probe).
run_result long_run(const sim::gpu_model& m, std::chrono::milliseconds min_time = 6s,
                    const std::function<void(sim::environment&)>& setup = {}) {
  sim::gpu g(m);
  sim::workload w(g);
  sim::environment env(g);
  if (setup) setup(env);
  protocol_options o;
  o.contexts = 1;
  o.min_time = min_time;
  o.max_time = 60s;
  o.rel_ci = 0.5;
  return measure(w, env, o);
}

/// A setup for long_run: the start-up probe found the counter moving every `period_ms`.
std::function<void(sim::environment&)> probed(double period_ms) {
  return [period_ms](sim::environment& env) {
    telemetry::energy_probe_result p;
    p.period_ms = period_ms;
    p.resolved = true;
    env.probe_result = p;
  };
}

/// The protocol's telemetry: the counter moves every `counter_ns` and is read about once a
/// second. The protocol reads it every 1020 ms (the first 20 ms tick at least 1000 ms after the
/// last read's own time stamp); these tests read it every 1100 ms, a whole number of the
/// counter's periods, so each span's two ends lag their readings alike and a window's energy is
/// exact: they test the period, the windows and their CI, not the ends' error (docs/measure.md,
/// "Energy": up to one update period at each end, which real reads' jitter spreads over the
/// windows).
sim::gpu_model protocol_reads(std::int64_t counter_ns, std::int64_t read_every_ns = 1'100'000'000) {
  sim::gpu_model m;
  m.energy_update_ns = counter_ns;
  m.energy_read_every_ns = read_every_ns;
  return m;
}

void with_probe(sim::environment& env) { env.probe = telemetry::energy_probe_options{}; }

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

namespace coolbench::measure {
namespace {

// The run length that had an energy CI when the counter was read every 220 ms (two windows of
// 2.2 s, docs/perf/compare.md).
constexpr auto today_s_case = 4400ms;

TEST(Energy, ThePeriodLearnedAtTheStartGivesAShortRunItsCi) {
  const sim::gpu_model m = protocol_reads(100'000'000);
  const run_result r = long_run(m, today_s_case, with_probe);
  ASSERT_TRUE(r.complete) << r.error;
  ASSERT_TRUE(r.energy_probe);
  ASSERT_TRUE(r.energy_probe->period_ms) << r.energy_probe->note;
  EXPECT_NEAR(*r.energy_probe->period_ms, 100, 20.0 / 4);
  ASSERT_TRUE(r.energy) << "no energy window in " << r.seconds_total << " s";
  const energy_figure& e = *r.energy;
  EXPECT_EQ(e.period_source, energy_period_source::probe);
  EXPECT_TRUE(e.period_resolved);
  EXPECT_NEAR(e.counter_period_ms, 100, 5);
  EXPECT_NEAR(e.reading_interval_ms, 1100, 1);
  EXPECT_TRUE(e.period_note.empty()) << e.period_note;
  // Ten periods are less than one reading interval: a window is one span between readings.
  EXPECT_NEAR(e.window_min_ms, k_energy_window_periods * 100, 50);
  EXPECT_GE(e.windows, 2);
  ASSERT_TRUE(e.ci);
  const double expected = expected_j_per_run(m);
  EXPECT_NEAR(e.j_per_run, expected, 0.02 * expected);
  EXPECT_LE(e.ci->first, expected * 1.001);
  EXPECT_GE(e.ci->second, expected * 0.999);
  const std::string text = report::format_energy(r);
  EXPECT_NE(text.find("moved every 100 ms (learned at the start)"), std::string::npos) << text;
  const auto doc = report::to_json(r);
  EXPECT_EQ(doc["summary"]["energy"]["counter_period_source"], "probe");
  EXPECT_TRUE(doc["summary"]["energy"]["counter_period_note"].is_null());
  EXPECT_NEAR(doc["summary"]["energy_counter_probe"]["period_ms"].get<double>(), 100, 5);
  EXPECT_EQ(doc["summary"]["energy_counter_probe"]["failed_reads"], 0);
}

TEST(Energy, WithoutTheProbeTheSameRunHasNoCi) {
  // The readings alone bound the period by their 1100 ms interval: windows of 11 s.
  const run_result r = long_run(protocol_reads(100'000'000), today_s_case);
  EXPECT_FALSE(r.energy_probe);
  EXPECT_FALSE(r.energy);
  ASSERT_TRUE(r.energy_per_run_j);
  EXPECT_TRUE(report::to_json(r)["summary"]["energy_counter_probe"].is_null());
}

TEST(Energy, A20MsCounterIsBoundedByTheProbesReads) {
  const run_result r = long_run(protocol_reads(20'000'000), today_s_case, with_probe);
  ASSERT_TRUE(r.energy);
  EXPECT_EQ(r.energy->period_source, energy_period_source::probe);
  EXPECT_FALSE(r.energy->period_resolved);  // the probe read every 20 ms: at most 20 ms
  EXPECT_NEAR(r.energy->counter_period_ms, 20, 0.5);
  EXPECT_TRUE(r.energy->ci);
  EXPECT_NE(report::format_energy(r).find("moved every <= 20 ms (learned at the start)"),
            std::string::npos);
}

TEST(Energy, AProbeWhoseReadsFailedLeavesTheBoundAndSaysSo) {
  const auto failing = [](sim::environment& env) {
    with_probe(env);
    env.probe_reads_fail = true;
  };
  const run_result short_run = long_run(protocol_reads(100'000'000), today_s_case, failing);
  ASSERT_TRUE(short_run.energy_probe);
  EXPECT_FALSE(short_run.energy_probe->period_ms);
  EXPECT_FALSE(short_run.energy);  // 11 s windows
  const std::string text = report::format_energy(short_run);
  EXPECT_NE(text.find("no CI"), std::string::npos) << text;
  EXPECT_NE(text.find("the start-up probe learned no period: every read of the energy counter "
                      "failed"),
            std::string::npos)
      << text;
  EXPECT_TRUE(report::to_json(short_run)["summary"]["energy_counter_probe"]["period_ms"].is_null());

  // With energy read every 400 ms, the bound's 4 s windows fit the run's bursts (about 8 s
  // each): the bound is used, with the reason in the JSON.
  const run_result r = long_run(protocol_reads(100'000'000, 400'000'000), 12s, failing);
  ASSERT_TRUE(r.energy);
  EXPECT_EQ(r.energy->period_source, energy_period_source::reading_interval);
  EXPECT_FALSE(r.energy->period_resolved);
  EXPECT_NEAR(r.energy->counter_period_ms, 400, 1);
  EXPECT_GE(r.energy->window_min_ms, 4000 - 10);
  const auto doc = report::to_json(r);
  EXPECT_EQ(doc["summary"]["energy"]["counter_period_source"], "reading interval");
  EXPECT_NE(doc["summary"]["energy"]["counter_period_note"].get<std::string>().find(
                "the start-up probe learned no period"),
            std::string::npos);
}

TEST(Energy, AProbedPeriodLongerThanTheReadingIntervalIsNotBelieved) {
  // The counter moved at every 400 ms reading: a 2 s period from the probe cannot be right.
  const auto wrong = [](sim::environment& env) {
    telemetry::energy_probe_result p;
    p.period_ms = 2000;
    p.resolved = true;
    p.steps = 4;
    p.note = "scripted";
    env.probe_result = p;
  };
  const run_result r = long_run(protocol_reads(100'000'000, 400'000'000), 12s, wrong);
  ASSERT_TRUE(r.energy);
  EXPECT_EQ(r.energy->period_source, energy_period_source::reading_interval);
  EXPECT_NEAR(r.energy->counter_period_ms, 400, 1);
  EXPECT_NE(r.energy->period_note.find("longer than the readings' interval"), std::string::npos)
      << r.energy->period_note;
}

TEST(Energy, AProbedPeriodTheReadingsSawTheCounterOutlastIsNotBelieved) {
  // Read every 20 ms, a 100 ms counter stands still for 80 ms at a time: a probe's 50 ms is wrong,
  // and the readings' own estimate is used.
  sim::gpu_model m;
  m.energy_update_ns = 100'000'000;
  const run_result r = long_run(m, 6s, probed(50));
  ASSERT_TRUE(r.energy);
  EXPECT_EQ(r.energy->period_source, energy_period_source::readings);
  EXPECT_NEAR(r.energy->counter_period_ms, 100, 1);
  EXPECT_NE(r.energy->period_note.find("stand still for 80.0 ms"), std::string::npos)
      << r.energy->period_note;
}

TEST(Energy, AStillOfThePeriodItselfDoesNotContradictTheProbe) {
  // A 100 ms counter read every 20 ms, every other read's value taken 4 ms after its time stamp
  // (waiting for NVML behind another GPU): at times a value is seen from a read just after its
  // step to one just before the next, 100 ms apart. The probe's 100 ms is right all the same.
  sim::gpu_model m;
  m.energy_update_ns = 100'000'000;
  m.report_lag_ns = 2'000'000;
  m.energy_late_on_odd_ticks_ns = 4'000'000;
  const run_result r = long_run(m, 6s, probed(100));
  ASSERT_TRUE(r.energy);
  EXPECT_EQ(r.energy->period_source, energy_period_source::probe) << r.energy->period_note;
  EXPECT_EQ(r.energy->counter_period_ms, 100);
  EXPECT_TRUE(r.energy->period_note.empty()) << r.energy->period_note;
}

TEST(Energy, AProbeTheReadingsAgreeWithIsUsedAtAnyInterval) {
  sim::gpu_model m;
  m.energy_update_ns = 100'000'000;  // read every 20 ms: the readings resolve it too
  const run_result r = long_run(m, 6s, with_probe);
  ASSERT_TRUE(r.energy);
  EXPECT_EQ(r.energy->period_source, energy_period_source::probe);
  EXPECT_NEAR(r.energy->counter_period_ms, 100, 5);
  EXPECT_TRUE(r.energy->period_note.empty()) << r.energy->period_note;
}

}  // namespace
}  // namespace coolbench::measure
