// The protocol on a simulated GPU (sim_gpu.hpp): gating, bursts, throttle
// handling, stopping, the modes and the baselines, interrupts. The property
// the product exists for is checked directly: the coolbench policy gives the
// same figure from a hot start as from a cold one, a plain loop does not.
#include "coolbench/measure/protocol.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "measure/protocol_helpers.hpp"
#include "measure/sim_gpu.hpp"

namespace coolbench::measure {
namespace {

using namespace std::chrono_literals;
using namespace protocol_helpers;

/// A profile-mode run of `time` on a simulated GPU of model `m`.
run_result run_profile(const sim::gpu_model& m, std::chrono::seconds time) {
  sim::gpu g(m);
  protocol_options o = quick_options();
  o.mode = run_mode::profile;
  o.profile_time = time;
  return run_sim(g, o);
}

TEST(Protocol, LatencyBoundColdRunConvergesInOneBurst) {
  sim::gpu g({});
  const run_result r = run_sim(g, quick_options());
  EXPECT_TRUE(r.complete) << r.error;
  EXPECT_TRUE(r.converged) << to_string(r.stop_reason);
  EXPECT_EQ(to_string(r.stop_reason), "converged");
  EXPECT_EQ(r.bursts, 1);
  EXPECT_EQ(r.discarded, 0);
  EXPECT_NEAR(r.summary.median_ms, 0.4, 1e-9);
  ASSERT_TRUE(r.median_ci);
  EXPECT_LE(r.median_ci->first, r.summary.median_ms);
  EXPECT_GE(r.median_ci->second, r.summary.median_ms);
  EXPECT_GT(r.warmup_runs, 0);
  // Released before measuring and at the end: the GPU is handed back, and
  // the result says what the last release did.
  EXPECT_GE(g.device_releases, 2);
  EXPECT_EQ(g.prepares, g.releases);
  EXPECT_EQ(r.final_release, "release: simulated");
}

// The HW counters are read once a second only (the sampler's slowest tier, at the protocol's
// settings; the 20 ms ticks between leave them unread), and the HW power brake engages for 1 ms
// every second, which only its counter shows: the steps of that counter, one read to the next,
// still mark samples and end bursts.
// What the workload itself found (a model's nodes ran on a slower path) is read before the final
// release drops it, and lands in the result's warnings once, however often it is said.
TEST(Protocol, TheWorkloadsOwnWarningsReachTheResult) {
  sim::gpu g({});
  sim::workload w(g);
  sim::environment env(g);
  const std::string fallback =
      "1 node of the model ran a slower path than the engine's own, so the figure is not the "
      "engine's: node 'gelu' (FusedElementwise): elementwise program interpreted";
  w.own_warnings = {fallback, fallback};
  const run_result r = measure(w, env, quick_options());
  EXPECT_TRUE(r.complete) << r.error;
  EXPECT_EQ(std::count(r.warnings.begin(), r.warnings.end(), fallback), 1);
}

TEST(Protocol, AHwPowerBrakeOnlyTheCountersTierSeesIsCaught) {
  sim::gpu_model m;
  m.hw_counters_every_ns = 1'000'000'000;
  m.hw_brake_every_ns = 1'000'000'000;
  sim::gpu g(m);
  protocol_options o = quick_options();
  o.min_time = 3s;
  o.rel_ci = 0.5;
  const run_result r = run_sim(g, o);
  const auto moved = std::count_if(r.samples.begin(), r.samples.end(), [](const auto& s) {
    return s.conditions.throttle_counter_moved;
  });
  EXPECT_GT(moved, 0);
  EXPECT_GT(r.bursts, 1);
}

// The brake engages half a second after the counters' last read and slows the runs it meets
// by half; the counter reports it half a second later, beyond sensor_lag (200 ms). The watch
// searches the slowed runs over the whole second since the counters' previous read, so none of
// them is kept.
TEST(Protocol, ARunSlowedBetweenTwoReadsOfTheHwCountersIsNotKept) {
  sim::gpu_model m;
  m.hw_counters_every_ns = 1'000'000'000;
  m.hw_brake_every_ns = 1'000'000'000;
  m.hw_brake_offset_ns = 500'000'000;
  m.hw_brake_slowdown = 1.5;
  sim::gpu g(m);
  protocol_options o = quick_options();
  o.min_time = 4s;
  o.rel_ci = 0.5;
  const run_result r = run_sim(g, o);
  const auto slowed = [&](const auto& s) { return s.time.latency_ms > 1.3 * m.base_ms; };
  const auto slow_runs = std::count_if(r.samples.begin(), r.samples.end(), slowed);
  const auto slow_kept = std::count_if(r.samples.begin(), r.samples.end(), [&](const auto& s) {
    return slowed(s) && s.kept && s.phase == sample_phase::measure;
  });
  EXPECT_GT(slow_runs, 0);  // the brake met some runs
  EXPECT_EQ(slow_kept, 0);
  EXPECT_GT(r.bursts, 1);
}

// A 19.5 us workload on a 32 ns timer (the H200's CUDA events): one tick is
// 0.16 % of the figure, coarser than a 0.1 % CI, and the run says so.
TEST(Protocol, ATimerStepNoFinerThanTheCiIsReported) {
  sim::gpu_model m;
  m.base_ms = 0.0195;
  m.jitter_ms = 0.0002;
  m.tick_ms = 0.000032;
  sim::gpu g(m);
  protocol_options o = quick_options();
  o.rel_ci = 0.001;
  const run_result r = run_sim(g, o);
  ASSERT_TRUE(r.timer_step_ms);
  EXPECT_NEAR(*r.timer_step_ms, 0.000032, 1e-12);
  ASSERT_EQ(r.warnings.size(), 1U);
  EXPECT_NE(r.warnings[0].find("timer's step, 0.000032 ms, is 0.16% of the median"),
            std::string::npos)
      << r.warnings[0];

  // The same jitter on an exact timer: steps far below the CI, no warning.
  m.tick_ms = 0;
  sim::gpu exact(m);
  const run_result fine = run_sim(exact, o);
  ASSERT_TRUE(fine.timer_step_ms);
  EXPECT_LT(*fine.timer_step_ms, 0.000032 / 10);
  EXPECT_TRUE(fine.warnings.empty());

  // A timer that gives one value only: no step, no warning.
  sim::gpu constant({});
  const run_result same = run_sim(constant, quick_options());
  EXPECT_FALSE(same.timer_step_ms);
  EXPECT_TRUE(same.warnings.empty());
}

TEST(Protocol, PowerBoundColdRunMeasuresInBurstsAndDiscardsCappedSamples) {
  sim::gpu g(power_bound_chain());
  protocol_options o = quick_options();
  o.min_samples = 60;
  const run_result r = run_sim(g, o);
  EXPECT_TRUE(r.complete) << r.error;
  EXPECT_GT(r.bursts, 1);
  EXPECT_GT(r.discarded, 0);
  // Every kept sample ran at the full clock: the cold figure.
  EXPECT_NEAR(r.summary.median_ms, 5.0, 1e-9);
  EXPECT_NEAR(r.summary.max_ms, 5.0, 1e-9);
  for (const auto& s : r.samples) {
    if (s.kept) {
      EXPECT_FALSE(s.throttled) << s.throttle_reason;
    }
  }
  EXPECT_FALSE(r.discarded_by_reason.empty());
  // Only spans the runs filled count: 400 W for 5 ms (5.9 ms when capped),
  // not the idle gating between bursts.
  ASSERT_TRUE(r.energy_per_run_j);
  EXPECT_GT(*r.energy_per_run_j, 1.9);
  EXPECT_LT(*r.energy_per_run_j, 2.5);
}

// A chain long enough that the warm-up window outlasts the cold state (the
// README's gemm:bf16:8192:8192:8192:4 on the H200): the warm-up stops at the
// cap and the GPU cools before the first burst, instead of heating for the
// whole warm-up limit and wasting a burst that starts capped.
TEST(Protocol, ColdWarmUpStopsAtTheCapAndCoolsBeforeTheFirstBurst) {
  sim::gpu g(power_bound_chain());
  sim::workload w(g);
  sim::environment env(g);
  std::vector<std::string> said;
  const run_result r =
      measure(w, env, quick_options(), [&](const std::string& line) { said.push_back(line); });
  EXPECT_TRUE(r.complete) << r.error;
  const auto has = [&](const std::string& text) {
    return std::any_of(said.begin(), said.end(),
                       [&](const std::string& l) { return l.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(has("warm-up reached sw_power_cap")) << ::testing::PrintToString(said);
  EXPECT_FALSE(has("did not settle"));
  EXPECT_LT(r.warmup_runs, 40);  // a dozen, then 3 after each gate; not 5 s of them
  int first_burst_kept = 0;
  for (const auto& s : r.samples) first_burst_kept += s.burst == 1 && s.kept ? 1 : 0;
  EXPECT_GT(first_burst_kept, 0);
  EXPECT_NEAR(r.summary.median_ms, 5.0, 1e-9);
}

// NVML reports late: the latency locates the change the sensors confirm.
TEST(Protocol, LateTelemetryStillKeepsOnlyColdSamples) {
  sim::gpu_model m;
  m.power_bound = true;
  m.base_ms = 1.4;  // bf16 8192^3 on the H200
  m.report_lag_ns = 45'000'000;
  sim::gpu g(m);
  protocol_options o = quick_options();
  o.min_samples = 100;
  const run_result r = run_sim(g, o);
  EXPECT_TRUE(r.complete) << r.error;
  EXPECT_GT(r.bursts, 1);
  EXPECT_GT(r.discarded, 0);
  EXPECT_NEAR(r.summary.max_ms, 1.4, 1e-9);  // not one capped sample kept
  EXPECT_NEAR(r.summary.median_ms, 1.4, 1e-9);
}

// The stopping rule met just after the cap bit, before NVML reports it (seen
// on the H200): the protocol waits out the lag before trusting the last
// samples, and measures on.
TEST(Protocol, StoppingWaitsForLateTelemetry) {
  sim::gpu_model m;
  m.power_bound = true;
  m.base_ms = 1.4;
  m.report_lag_ns = 45'000'000;
  sim::gpu g(m);
  protocol_options o = quick_options();
  o.min_time = 0ms;
  o.min_samples = 46;  // about 64 ms: the cap bites at 60 ms, NVML says so at 105
  o.rel_ci = 0.2;
  const run_result r = run_sim(g, o);
  EXPECT_TRUE(r.complete) << r.error;
  EXPECT_NEAR(r.summary.max_ms, 1.4, 1e-9);
  EXPECT_GT(r.discarded, 0);
}

TEST(Protocol, HotStartGivesTheColdFigureAndANaiveLoopDoesNot) {
  sim::gpu_model m;
  m.heat_c_per_s = 2;
  m.derate_from_c = 50;
  m.derate_per_c = 0.01;
  protocol_options o = quick_options();

  sim::gpu cold(m);
  const run_result from_cold = run_sim(cold, o);
  m.start_c = 75;
  sim::gpu hot(m);
  const run_result from_hot = run_sim(hot, o);
  EXPECT_GT(from_hot.seconds_gating, 1.0);
  EXPECT_LE(relative_difference(from_hot.summary.median_ms, from_cold.summary.median_ms), 0.003);

  o.policy = sampling_policy::naive;
  sim::gpu naive_hot(m);
  const run_result naive = run_sim(naive_hot, o);
  EXPECT_GT(relative_difference(naive.summary.median_ms, from_cold.summary.median_ms), 0.05);
  EXPECT_EQ(naive.discarded, 0);  // a plain loop keeps everything
  EXPECT_DOUBLE_EQ(naive.seconds_gating, 0);
}

TEST(Protocol, GateTimesOutWithAClearMessage) {
  sim::gpu_model m;
  m.ambient_c = 60;
  m.start_c = 60;
  sim::gpu g(m);
  protocol_options o = quick_options();
  o.gate_timeout = 3s;
  const run_result r = run_sim(g, o);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(to_string(r.stop_reason), "gate time-out");
  EXPECT_NE(r.error.find("--target-temp"), std::string::npos) << r.error;
  EXPECT_GE(r.seconds_gating, 3.0);
}

TEST(Protocol, InterruptKeepsWhatWasMeasuredAndReleases) {
  sim::gpu g({});
  const run_result r = run_sim(g, quick_options(), 100);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(to_string(r.stop_reason), "interrupted");
  EXPECT_GT(r.summary.count, 0);
  EXPECT_GE(g.device_releases, 2);
  EXPECT_EQ(g.prepares, g.releases);
}

TEST(Protocol, StopsAtMaxSamplesWhenTheCiCannotBeMet) {
  sim::gpu g({});
  protocol_options o = quick_options();
  o.min_time = 0ms;
  o.max_samples = 40;
  o.min_samples = 40;
  o.rel_ci = 1e-9;
  const run_result r = run_sim(g, o);
  EXPECT_EQ(r.summary.count, 40);
  // Identical latencies: the CI is a point, so even 1e-9 is met.
  EXPECT_TRUE(to_string(r.stop_reason) == "converged" || to_string(r.stop_reason) == "max samples")
      << to_string(r.stop_reason);
}

TEST(Protocol, SustainedSoaksThenLabelsThrottledSamples) {
  sim::gpu_model m;
  m.heat_c_per_s = 8;
  m.steady_c = 70;
  m.derate_from_c = 60;
  sim::gpu g(m);
  protocol_options o = quick_options();
  o.mode = run_mode::sustained;
  o.soak_window = 2s;
  o.max_temp_c = 85;
  const run_result r = run_sim(g, o);
  EXPECT_TRUE(r.complete) << r.error;
  EXPECT_EQ(r.discarded, 0);
  ASSERT_TRUE(r.throttled_summary);
  EXPECT_GT(r.summary.median_ms, 0.4 * 1.02);  // the equilibrium is slower
  ASSERT_TRUE(r.temp_range_c);
  EXPECT_GE(r.temp_range_c->first, 68);
  // Released before the soak (isolation from earlier work) and at the end.
  EXPECT_EQ(r.releases, 2 + r.pauses);
  EXPECT_EQ(g.device_releases, r.releases);
}

TEST(Protocol, ProfileTablesShowTheDerate) {
  sim::gpu_model m;
  m.heat_c_per_s = 10;
  m.steady_c = 75;
  m.derate_from_c = 45;
  m.derate_per_c = 0.005;
  const run_result r = run_profile(m, 10s);
  EXPECT_TRUE(r.complete) << r.error;
  ASSERT_TRUE(r.profile);
  EXPECT_GE(r.profile->by_temperature.size(), 3U);
  EXPECT_GT(r.profile->derate, 0.05);
  ASSERT_TRUE(r.profile->ms_per_c);
  EXPECT_GT(*r.profile->ms_per_c, 0);
  ASSERT_TRUE(r.profile->pct_per_100mhz);
  EXPECT_LT(*r.profile->pct_per_100mhz, 0);  // faster clock, lower latency
  // Reported as it happened: the fastest bucket is the warm-up's state.
  ASSERT_TRUE(r.profile->fastest_clock_vs_warmup);
  EXPECT_LT(std::abs(*r.profile->fastest_clock_vs_warmup), protocol_options{}.step_threshold);
}

// NVML's clock and reasons lag: on the H200 a bf16 8192^3 chain was capped
// ~130 ms before NVML said so, and a profile put those runs in the 1980 MHz
// bucket. The profile says when its fastest bucket is slower than the
// warm-up at that clock, and only then.
TEST(Protocol, ProfileSaysWhenTheClockLabelsLagTheGpu) {
  for (const std::int64_t lag_ns : {std::int64_t{0}, std::int64_t{130'000'000}}) {
    sim::gpu_model m;
    m.power_bound = true;
    m.base_ms = 1.4;
    m.report_lag_ns = lag_ns;
    const run_result r = run_profile(m, 2s);
    EXPECT_TRUE(r.complete) << r.error;
    ASSERT_TRUE(r.profile);
    ASSERT_TRUE(r.profile->fastest_clock_vs_warmup) << "lag " << lag_ns;
    const bool warned = std::any_of(r.warnings.begin(), r.warnings.end(), [](const auto& w) {
      return w.find("changed state before NVML reported it") != std::string::npos;
    });
    // Uncapped 1.4 ms, capped 1.4 / 0.85: the derate against the warm-up
    // holds whatever NVML labelled the first capped runs with.
    EXPECT_NEAR(r.profile->derate, 1 / 0.85 - 1, 0.01) << "lag " << lag_ns;
    if (lag_ns == 0) {
      EXPECT_LT(std::abs(*r.profile->fastest_clock_vs_warmup), protocol_options{}.step_threshold);
      EXPECT_FALSE(warned);
    } else {
      // Most of the 130 ms lag is capped runs labelled 1980 MHz.
      EXPECT_GT(*r.profile->fastest_clock_vs_warmup, 0.05);
      EXPECT_TRUE(warned);
    }
  }
}

// A chain whose 20 warm-up runs outlast the cold state (bf16 8192^3 x4 on
// the H200): the cap cuts the warm-up, the GPU is gated again, and the
// derate is taken against the 3 re-warm runs of the measuring context.
TEST(Protocol, ProfileAfterAWarmUpCutByTheCapTakesTheReWarmAsItsReference) {
  sim::gpu_model m;
  m.power_bound = true;
  m.base_ms = 5.5;
  const run_result r = run_profile(m, 3s);
  EXPECT_TRUE(r.complete) << r.error;
  ASSERT_TRUE(r.profile);
  ASSERT_TRUE(r.profile->warmup_median_ms);
  EXPECT_NEAR(*r.profile->warmup_median_ms, 5.5, 0.01);
  EXPECT_NEAR(r.profile->derate, 1 / 0.85 - 1, 0.01);
  EXPECT_GE(r.releases, 2);  // the gate after the cut warm-up released
}

TEST(Protocol, ClockDiscardDropsSlowClockSamplesAndSleeps) {
  sim::gpu_model m;
  m.power_bound = true;
  m.cap_clock_fraction = 0.7;  // below nvbench's 75 %
  m.base_ms = 5;
  sim::gpu g(m);
  protocol_options o = quick_options();
  o.policy = sampling_policy::clock_discard;
  o.max_time = 5s;
  const run_result r = run_sim(g, o);
  EXPECT_GT(r.discarded, 0);
  for (const auto& s : r.samples) {
    if (s.kept && s.conditions.sm_clock_mhz) {
      EXPECT_GE(*s.conditions.sm_clock_mhz, 0.75 * 1980);
    }
  }
}

TEST(Protocol, FixedSleepSleepsBetweenGroups) {
  sim::gpu g({});
  protocol_options o = quick_options();
  o.policy = sampling_policy::fixed_sleep;
  o.repeats_to_cooldown = 10;
  o.cooldown_interval = 100ms;
  o.min_samples = 50;
  o.max_samples = 50;
  const run_result r = run_sim(g, o);
  EXPECT_EQ(r.summary.count, 50);
  // 5 sleeps of 100 ms at least.
  EXPECT_GE(r.seconds_total, 0.5);
}

TEST(Protocol, EnergyPerRunFromTheCounter) {
  sim::gpu_model m;
  m.base_ms = 1;
  sim::gpu g(m);
  const run_result r = run_sim(g, quick_options());
  ASSERT_TRUE(r.energy_per_run_j);
  // 400 W for 1 ms, plus the host gaps at idle power.
  EXPECT_NEAR(*r.energy_per_run_j, 0.4, 0.01);
}

// Issue "measurement protocol" §6: a GPU that disappears mid-run, or memory
// that runs out on a re-acquire, ends the run with what was measured kept,
// the error said, and the device handed back all the same.
TEST(Protocol, AGpuThatDisappearsMidRunKeepsWhatWasMeasured) {
  sim::gpu g({});
  sim::workload w(g);
  sim::environment env(g);
  protocol_options o = quick_options();
  o.rel_ci = 1e-12;  // would run on to max time
  w.fail_run_after = 200;
  const run_result r = measure(w, env, o);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(to_string(r.stop_reason), "error");
  EXPECT_NE(r.error.find("fell off the bus"), std::string::npos) << r.error;
  int measured = 0;
  for (const auto& s : r.samples) measured += s.phase == sample_phase::measure && s.kept ? 1 : 0;
  EXPECT_GT(measured, 0);
  EXPECT_EQ(r.summary.count, measured);
  EXPECT_EQ(static_cast<int>(r.samples.size()), 200);
  EXPECT_NEAR(r.summary.median_ms, 0.4, 1e-9);
  EXPECT_GE(g.device_releases, 2);  // the end's release is still attempted
  EXPECT_EQ(g.prepares, g.releases);
  EXPECT_EQ(r.final_release, "release: simulated");

  // A GPU that is gone cannot be released either: the run's own error stays
  // the one reported, and the release's failure is said beside it.
  sim::gpu gone({});
  sim::workload w2(gone);
  sim::environment env2(gone);
  w2.fail_run_after = 0;
  env2.releases_before_failing = 1;  // the gate's release works, the end's does not
  const run_result r2 = measure(w2, env2, quick_options());
  EXPECT_FALSE(r2.complete);
  EXPECT_NE(r2.error.find("fell off the bus"), std::string::npos) << r2.error;
  EXPECT_EQ(r2.final_release, "release failed: cuDevicePrimaryCtxReset failed: CUDA_ERROR_UNKNOWN");
}

TEST(Protocol, OutOfMemoryOnAReacquireKeepsTheEarlierBursts) {
  sim::gpu g(power_bound_chain());
  sim::workload w(g);
  sim::environment env(g);
  protocol_options o = quick_options();
  o.min_samples = 60;
  // The warm-up reaches the cap (5 ms runs: 12 of them outlast the 60 ms)
  // and the GPU cools again, the second acquisition; burst 1 is cold, and
  // the acquisition after it runs out of memory.
  w.fail_prepare_at = 3;
  const run_result r = measure(w, env, o);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(to_string(r.stop_reason), "error");
  EXPECT_NE(r.error.find("out of memory"), std::string::npos) << r.error;
  EXPECT_EQ(r.bursts, 1);
  EXPECT_GT(r.summary.count, 0);
  EXPECT_NEAR(r.summary.median_ms, 5.0, 1e-9);  // burst 1's cold samples
  EXPECT_EQ(g.prepares, 2);
  EXPECT_EQ(g.releases, 2);
}

TEST(Protocol, AWorkloadThatRefusesItsInputIsTheCallersToFix) {
  sim::gpu g({});
  sim::workload w(g);
  sim::environment env(g);
  w.refuse_prepare = true;
  const run_result r = measure(w, env, quick_options());
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(to_string(r.stop_reason), "invalid input");
  EXPECT_NE(r.error.find("'batch'"), std::string::npos) << r.error;
  EXPECT_TRUE(r.samples.empty());
  EXPECT_GE(g.device_releases, 2);
}

TEST(Protocol, ImpossibleOptionsAreRefused) {
  sim::gpu g({});
  protocol_options o;
  o.min_samples = 100;
  o.max_samples = 10;
  EXPECT_THROW((void)run_sim(g, o), invalid_argument);
  o = {};
  o.min_time = 10s;
  o.max_time = 1s;
  EXPECT_THROW((void)run_sim(g, o), invalid_argument);
  o = {};
  o.max_temp_c = 40;
  o.target_temp_c = 45;
  EXPECT_THROW((void)run_sim(g, o), invalid_argument);
  o = {};
  o.contexts = 4;
  o.mode = run_mode::sustained;
  EXPECT_THROW((void)run_sim(g, o), invalid_argument);
  o.mode = run_mode::cold;
  o.policy = sampling_policy::naive;
  EXPECT_THROW((void)run_sim(g, o), invalid_argument);
  o = {};
  o.contexts = 0;
  EXPECT_THROW((void)run_sim(g, o), invalid_argument);
  EXPECT_THROW((void)parse_run_mode("warm"), invalid_argument);
  EXPECT_EQ(parse_sampling_policy("fixed-sleep"), sampling_policy::fixed_sleep);
}

// --max-time is the whole run: a gate or a warm-up under way when it passes
// ends the run there (`coolbench exec` overran it by a PyTorch start-up and a
// warm-up on an H100). A GPU a degree under the target that the workload
// heats by 4 °C a second, and that needs about 12 s to cool back: the first
// burst (at its longest, 0.5 s) ends above the target, and its gate would
// wait long past the 3 s the run has.
TEST(Protocol, MaxTimeBoundsTheWholeRunGatesIncluded) {
  sim::gpu_model m;
  m.start_c = 44;
  m.heat_c_per_s = 4;
  m.cool_tau_s = 60;
  m.jitter_ms = 0.05;  // a spread, so the CI never gets below rel_ci
  sim::gpu g(m);
  protocol_options o = quick_options();
  o.rel_ci = 1e-9;
  o.min_time = 0ms;
  o.max_time = 3s;
  o.warmup_max_time = 300ms;
  o.max_burst = 500ms;
  o.gate_timeout = 600s;
  const run_result r = run_sim(g, o);
  EXPECT_TRUE(r.complete) << r.error;
  EXPECT_EQ(to_string(r.stop_reason), "max time");
  EXPECT_LE(r.seconds_total, 3.2);
  EXPECT_GT(r.seconds_gating, 1.0);  // cut in the gate: its wait so far counts
  EXPECT_GT(r.samples.size(), 0U);
  // Nothing measured by then: the run says so, and is incomplete.
  o.max_time = 200ms;
  const run_result early = run_sim(g, o);
  EXPECT_FALSE(early.complete);
  EXPECT_NE(early.error.find("raise --max-time"), std::string::npos) << early.error;
}

}  // namespace
}  // namespace coolbench::measure
