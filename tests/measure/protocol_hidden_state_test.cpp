// The protocol's hidden-state sentinel on a simulated GPU (sim_gpu.hpp): calibrated after the
// isolation at the start, checked before each burst and after the run; a kept context isolated
// between bursts; a state found at the start or before a burst cleared, and said.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "coolbench/measure/protocol.hpp"
#include "measure/sim_gpu.hpp"

namespace coolbench::measure {
namespace {

using namespace std::chrono_literals;

/// A power-bound chain: several bursts, each after a gate.
sim::gpu_model chain() {
  sim::gpu_model m;
  m.power_bound = true;
  m.base_ms = 5;
  m.heat_c_per_s = 5;
  return m;
}

protocol_options options(isolation how) {
  protocol_options o;
  o.min_time = 200ms;
  o.max_time = 60s;
  o.rel_ci = 0.002;
  o.min_samples = 60;
  o.contexts = 1;
  o.isolation = how;
  return o;
}

struct outcome {
  run_result r;
  std::vector<std::string> isolations;
};

outcome run(sim::gpu& g, const protocol_options& o, bool keep = false, bool fails = false,
            bool lottery = false) {
  sim::workload w(g);
  sim::environment env(g);
  env.sentinel_clean_ms = 0.040;
  env.sentinel_lottery = lottery;
  env.keep_context = keep;
  env.isolation_fails = fails;
  return {measure(w, env, o), env.isolations};
}

int flagged(const hidden_state_record& h, const std::string& prefix) {
  return static_cast<int>(std::count_if(h.checks.begin(), h.checks.end(), [&](const auto& c) {
    return c.hidden_state() && c.where.rfind(prefix, 0) == 0;
  }));
}

TEST(ProtocolHiddenState, WithoutASentinelThereIsNoRecord) {
  sim::gpu g({});
  sim::workload w(g);
  sim::environment env(g);
  EXPECT_FALSE(measure(w, env, options(isolation::touch)).hidden_state);
}

TEST(ProtocolHiddenState, SentinelNoneChecksNothing) {
  sim::gpu g({});
  g.hidden_state = true;
  sim::workload w(g);
  sim::environment env(g);
  env.sentinel_clean_ms = 0.040;
  protocol_options o = options(isolation::touch);
  o.sentinel = sentinel_kind::none;
  const auto r = measure(w, env, o);
  EXPECT_FALSE(r.hidden_state);
  EXPECT_EQ(env.sentinel_checks, 0);
}

TEST(ProtocolHiddenState, AStateFoundAtTheStartIsClearedAndSaid) {
  sim::gpu g({});
  g.hidden_state = true;  // left by earlier work in the process
  const auto [r, done] = run(g, options(isolation::touch));
  ASSERT_TRUE(r.hidden_state);
  const auto& h = *r.hidden_state;
  // Calibrated after the touch, then again in each burst's new context (cold mode).
  EXPECT_EQ(h.calibrations, r.bursts + 1);
  EXPECT_EQ(h.calibration.checks, 1);  // a later context's level: one check, the start's noise
  EXPECT_NEAR(h.calibration.median_ms, 0.040, 0.0001);
  EXPECT_NEAR(h.checks[0].reference_ms, 0.040, 0.0001);
  ASSERT_FALSE(h.checks.empty());
  EXPECT_EQ(h.checks[0].where, "start, as found");
  EXPECT_TRUE(h.checks[0].hidden_state());
  EXPECT_EQ(h.checks[0].action, "cleared by touch");
  EXPECT_EQ(done.front(), "touch");
  EXPECT_EQ(h.summary(),
            "hidden state: sentinel +9.3 %, sensors unchanged; cleared by touch "
            "(start, as found)");
  const bool warned = std::any_of(r.warnings.begin(), r.warnings.end(), [](const auto& w) {
    return w.find("hidden state: sentinel +9.3 %") != std::string::npos;
  });
  EXPECT_TRUE(warned);
  EXPECT_EQ(flagged(h, "before burst"), 0);
}

TEST(ProtocolHiddenState, AWorkloadThatLeavesTheStateIsSeenAfterTheRun) {
  sim::gpu g(chain());
  g.runs_leave_hidden_state = true;
  const auto [r, done] = run(g, options(isolation::touch));
  ASSERT_TRUE(r.hidden_state);
  EXPECT_GT(r.bursts, 1);
  // Each gate's release reset the context: no burst began in the state.
  EXPECT_EQ(flagged(*r.hidden_state, "before burst"), 0);
  EXPECT_EQ(flagged(*r.hidden_state, "after the run"), 1);
  EXPECT_EQ(r.hidden_state->clearings, 0);
}

TEST(ProtocolHiddenState, AKeptContextIsIsolatedBetweenBursts) {
  sim::gpu g(chain());
  g.runs_leave_hidden_state = true;
  const auto [r, done] = run(g, options(isolation::touch), true);
  ASSERT_TRUE(r.hidden_state);
  EXPECT_GT(r.bursts, 1);
  EXPECT_EQ(flagged(*r.hidden_state, "before burst"), 0);
  // One at the start, one in each gate.
  EXPECT_GE(static_cast<int>(done.size()), r.bursts + 1);
}

TEST(ProtocolHiddenState, WithoutIsolationAKeptContextCarriesTheState) {
  sim::gpu g(chain());
  g.runs_leave_hidden_state = true;
  const auto [r, done] = run(g, options(isolation::none), true);
  ASSERT_TRUE(r.hidden_state);
  EXPECT_TRUE(done.empty());
  // Every gate after the first runs of the workload (the warm-up's, then each burst's) finds it.
  EXPECT_GE(flagged(*r.hidden_state, "before burst"), r.bursts - 1);
  EXPECT_EQ(r.hidden_state->clearings, 0);
  EXPECT_EQ(r.hidden_state->summary().rfind("hidden state: sentinel +9.", 0), 0U)
      << r.hidden_state->summary();
}

TEST(ProtocolHiddenState, AnIsolationThatDoesNotClearIsAWarning) {
  sim::gpu g(chain());
  g.runs_leave_hidden_state = true;
  const auto [r, done] = run(g, options(isolation::touch), true, true);
  ASSERT_TRUE(r.hidden_state);
  EXPECT_GT(r.hidden_state->clearings, 0);
  const bool warned = std::any_of(r.warnings.begin(), r.warnings.end(), [](const auto& w) {
    return w.find("not cleared by touch") != std::string::npos;
  });
  EXPECT_TRUE(warned);
}

// A latency-bound sentinel draws its figure per context (here 0, +2.5 %, -1.5 % in turn):
// judged across contexts, every other burst would read as hidden state. Each new context is
// calibrated on its own, so a clean run raises nothing.
TEST(ProtocolHiddenState, EachContextIsJudgedAgainstItsOwnCalibration) {
  sim::gpu g(chain());
  const auto [r, done] = run(g, options(isolation::touch), false, false, true);
  ASSERT_TRUE(r.hidden_state);
  EXPECT_GT(r.bursts, 2);
  EXPECT_GE(r.hidden_state->calibrations, r.bursts);  // one per context: each gate's, at least
  for (const auto& c : r.hidden_state->checks)
    EXPECT_FALSE(c.moved) << c.where << ": " << c.summary();
  EXPECT_EQ(r.hidden_state->summary().rfind("hidden state: none seen", 0), 0U)
      << r.hidden_state->summary();
}

TEST(ProtocolHiddenState, AWorkloadThatLeavesTheStateIsSeenAcrossTheLottery) {
  sim::gpu g(chain());
  g.runs_leave_hidden_state = true;
  const auto [r, done] = run(g, options(isolation::touch), false, false, true);
  ASSERT_TRUE(r.hidden_state);
  EXPECT_EQ(flagged(*r.hidden_state, "after the run"), 1);
}

// Sustained mode releases without a gate: the sentinel takes the new context's level before
// the workload runs, so what the workload leaves is still seen after the run.
TEST(ProtocolHiddenState, SustainedModeJudgesTheContextItMeasuredIn) {
  sim::gpu_model latency_bound;  // barely heats: the sensors stay where the level was taken
  latency_bound.heat_c_per_s = 0.05;
  sim::gpu g(latency_bound);
  g.runs_leave_hidden_state = true;
  protocol_options o = options(isolation::touch);
  o.mode = run_mode::sustained;
  const auto [r, done] = run(g, o, false, false, true);
  ASSERT_TRUE(r.hidden_state);
  EXPECT_EQ(r.hidden_state->calibrations, 2);  // the start's context and the measured one
  EXPECT_EQ(flagged(*r.hidden_state, "after the run"), 1);
}

// A release as the isolation makes a new context: the state as found cannot be judged against
// it (another context's level), and is not carried into it.
TEST(ProtocolHiddenState, AStateFoundBeforeAReleaseIsNotJudged) {
  sim::gpu g({});
  g.hidden_state = true;
  const auto [r, done] = run(g, options(isolation::release), false, false, true);
  ASSERT_TRUE(r.hidden_state);
  const auto& found = r.hidden_state->checks.at(0);
  EXPECT_EQ(found.where, "start, as found");
  EXPECT_FALSE(found.judged);
  EXPECT_FALSE(found.hidden_state());
  EXPECT_EQ(found.summary(),
            "sentinel not judged; the isolation (release) made a new context, which starts clean");
  EXPECT_EQ(done.front(), "release");
}

}  // namespace
}  // namespace coolbench::measure
