// Matched A/B runs (measure_ab) on the simulated GPU: the ABBA order, one context per pair with
// a release between pairs, every burst gated to the target, a 2 % difference called SLOWER and
// FASTER, the same workload twice called SAME, through the per-context levels that no sensor
// shows; the document read back gives the same verdict.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "coolbench/measure/ab.hpp"
#include "coolbench/report/ab_report.hpp"
#include "measure/sim_gpu.hpp"

namespace coolbench::measure {
namespace {

using namespace std::chrono_literals;

/// The simulated workload at `factor` times the GPU's base latency: B with 2 % more work.
class scaled_workload final : public workload {
 public:
  scaled_workload(sim::gpu& g, double factor, std::string name)
      : m_gpu(g), m_inner(g), m_factor(factor), m_name(std::move(name)) {}
  std::string describe() const override { return m_name; }
  std::optional<int> device() const override { return 0; }
  void prepare() override { m_inner.prepare(); }
  timing run() override {
    const double base = m_gpu.m.base_ms;
    // The second workload in a context runs `second_in_context` times slower (as on the
    // H200: docs/perf/compare.md).
    if (m_context != m_gpu.device_releases) {
      m_context = m_gpu.device_releases;
      if (first_in_context == nullptr || first_in_context->m_context != m_context ||
          first_in_context == this) {
        first_in_context = this;
      }
    }
    const double order = first_in_context == this ? 1.0 : second_in_context;
    m_gpu.m.base_ms = base * m_factor * order;
    const timing t = m_inner.run();
    m_gpu.m.base_ms = base;
    runs.push_back(t.start_ns);
    return t;
  }
  void release() override { m_inner.release(); }
  std::vector<std::int64_t> runs;  ///< each run's start
  double second_in_context = 1.0;
  /// The workload that ran first in the current context, shared by A and B.
  inline static const scaled_workload* first_in_context = nullptr;

 private:
  int m_context = -1;
  sim::gpu& m_gpu;
  sim::workload m_inner;
  double m_factor;
  std::string m_name;
};

/// A GPU whose contexts draw levels 1.6 % apart (as the H200's), with some jitter and a coarse
/// timer, heating while it runs.
sim::gpu_model lottery_gpu() {
  sim::gpu_model m;
  m.base_ms = 0.25;
  m.jitter_ms = 0.002;
  m.tick_ms = 0.000032;
  m.heat_c_per_s = 4;
  m.context_levels = {1.0, 1.012, 0.996, 1.016, 1.004, 0.999, 1.009};
  return m;
}

protocol_options ab_options() {
  protocol_options o;
  o.rel_ci = 0.002;
  o.max_time = 300s;
  o.contexts = 5;  // the command's default: 6 pairs at least
  return o;
}

struct ab_case {
  ab_result result;
  int device_releases = 0;
  std::vector<std::int64_t> a_runs, b_runs;
};

ab_case run_ab(double factor, sim::gpu_model m = lottery_gpu(), protocol_options o = ab_options(),
               double second_in_context = 1.0) {
  sim::gpu g(m);
  scaled_workload::first_in_context = nullptr;
  scaled_workload a(g, 1.0, "A");
  scaled_workload b(g, factor, "B");
  a.second_in_context = second_in_context;
  b.second_in_context = second_in_context;
  sim::environment env(g);
  ab_case c;
  c.result = measure_ab(a, b, env, o);
  c.device_releases = g.device_releases;
  c.a_runs = a.runs;
  c.b_runs = b.runs;
  return c;
}

/// The first and last start of the measurement samples of `run` in context `k`.
std::pair<std::int64_t, std::int64_t> span_of(const run_result& run, int k) {
  std::int64_t first = INT64_MAX;
  std::int64_t last = 0;
  for (const auto& s : run.samples) {
    if (s.context != k) continue;
    first = std::min(first, s.time.start_ns);
    last = std::max(last, s.time.start_ns);
  }
  return {first, last};
}

TEST(MatchedAB, PairsComeInAbbaOrderEachInItsOwnContext) {
  const ab_case c = run_ab(1.02);
  const ab_result& r = c.result;
  ASSERT_TRUE(r.complete) << r.error;
  ASSERT_GE(r.pairs.size(), 6U);
  EXPECT_EQ(r.pairs.size() % 2, 0U) << "as many AB pairs as BA pairs";
  for (const auto& p : r.pairs) {
    EXPECT_EQ(p.a_first, p.pair % 2 == 1) << "pair " << p.pair;
    // Every sample (warm-up included) of both workloads in pair k ran in context k, and the
    // first workload's burst was over before the second's began.
    const auto [a_first, a_last] = span_of(r.a, p.pair);
    const auto [b_first, b_last] = span_of(r.b, p.pair);
    ASSERT_LT(a_first, INT64_MAX);
    ASSERT_LT(b_first, INT64_MAX);
    if (p.a_first) {
      EXPECT_LT(a_last, b_first) << "pair " << p.pair << ": A then B";
    } else {
      EXPECT_LT(b_last, a_first) << "pair " << p.pair << ": B then A";
    }
  }
  // A release between pairs (and at the end): each pair a fresh context.
  EXPECT_EQ(c.device_releases, static_cast<int>(r.pairs.size()) + 1);
  EXPECT_EQ(r.isolation, "release");
  for (const auto& s : r.a.samples) EXPECT_LE(s.context, static_cast<int>(r.pairs.size()));
}

TEST(MatchedAB, EveryBurstStartsGatedToTheTarget) {
  sim::gpu_model m = lottery_gpu();
  m.heat_c_per_s = 60;  // a burst heats the GPU well above the target
  m.start_c = 55;
  protocol_options o = ab_options();
  o.target_temp_c = 45;
  const ab_case c = run_ab(1.02, m, o);
  ASSERT_TRUE(c.result.complete) << c.result.error;
  ASSERT_GE(c.result.pairs.size(), 6U);
  if (std::getenv("AB_TEST_PRINT") != nullptr) {
    std::printf("%s", report::format_ab_summary(c.result, 0.01).c_str());
  }
  for (const auto& p : c.result.pairs) {
    ASSERT_TRUE(p.a_start_temp_c && p.b_start_temp_c);
    EXPECT_LE(*p.a_start_temp_c, 45) << "pair " << p.pair;
    EXPECT_LE(*p.b_start_temp_c, 45) << "pair " << p.pair;
  }
  EXPECT_GT(c.result.a.seconds_gating + c.result.b.seconds_gating, 0);
}

TEST(MatchedAB, TwoPercentMoreWorkIsSlowerAndTheOtherWayFaster) {
  for (const double factor : {1.02, 1 / 1.02}) {
    const ab_case c = run_ab(factor);
    const ab_result& r = c.result;
    ASSERT_TRUE(r.time) << r.error;
    EXPECT_TRUE(r.converged) << to_string(r.stop_reason);
    EXPECT_NEAR(r.time->ratio, factor, 0.003);
    EXPECT_LE(r.time->lower, factor + 0.001);
    EXPECT_GE(r.time->upper, factor - 0.001);
    const auto v = report::ab_verdict(r, 0.01);
    EXPECT_EQ(v.verdict, factor > 1 ? "SLOWER" : "FASTER") << v.reason;
  }
}

TEST(MatchedAB, TheSameWorkloadTwiceIsSameWithinAFewTenthsOfAPercent) {
  const ab_case c = run_ab(1.0);
  const ab_result& r = c.result;
  ASSERT_TRUE(r.time) << r.error;
  EXPECT_LE(r.time->lower, 1.0);
  EXPECT_GE(r.time->upper, 1.0);
  EXPECT_LE(r.time->upper - 1, 0.003);
  EXPECT_LE(1 - r.time->lower, 0.003);
  EXPECT_EQ(report::ab_verdict(r, 0.01).verdict, "SAME");
  // Unmatched, the runs' own figures move with the context draws: the pairs' ratio does not.
  ASSERT_TRUE(r.a.contexts && r.b.contexts);
  EXPECT_GT(r.a.contexts->spread, 0.01);
}

// The second burst of a pair 1.3 % slower than the first, whichever workload: AB pairs read
// 1.02 x 1.013, BA pairs 1.02 / 1.013; each couple's geometric mean cancels it, the CI over the
// couples stays narrow, and the factor is reported.
TEST(MatchedAB, TheSecondBurstsSlowdownCancelsWithinEachCouple) {
  for (const double factor : {1.02, 1.0}) {
    const ab_case c = run_ab(factor, lottery_gpu(), ab_options(), 1.013);
    const ab_result& r = c.result;
    ASSERT_TRUE(r.time) << r.error;
    ASSERT_GE(r.pairs.size(), 4U);
    ASSERT_TRUE(r.pairs[0].ratio && r.pairs[1].ratio);
    EXPECT_NEAR(*r.pairs[0].ratio, factor * 1.013, 0.004) << "AB: B second";
    EXPECT_NEAR(*r.pairs[1].ratio, factor / 1.013, 0.004) << "BA: A second";
    EXPECT_NEAR(r.time->ratio, factor, 0.002);
    EXPECT_LE(r.time->upper - r.time->lower, 0.006);
    ASSERT_TRUE(r.second_burst);
    EXPECT_NEAR(r.second_burst->ratio, 1.013, 0.002);
    EXPECT_EQ(report::ab_verdict(r, 0.01).verdict, factor > 1 ? "SLOWER" : "SAME");
  }
}

TEST(MatchedAB, TheDocumentReadBackGivesTheSameComparison) {
  const ab_case c = run_ab(1.02);
  nlohmann::json doc = report::ab_to_json(c.result, 0.01);
  EXPECT_EQ(doc["schema"], "coolbench.ab/1");
  EXPECT_EQ(doc["verdict"], "SLOWER");
  EXPECT_EQ(doc["pairs"][1]["order"], "BA");
  EXPECT_EQ(doc["a"]["schema"], "coolbench.run/1");
  const report::ab_document ab = report::read_ab_document(std::move(doc), "ab.json");
  const report::run_comparison cmp = report::compare_ab(ab, 0.01);
  EXPECT_EQ(cmp.verdict, "SLOWER");
  EXPECT_EQ(cmp.matched_couples, c.result.couples);
  ASSERT_TRUE(cmp.time);
  EXPECT_DOUBLE_EQ(cmp.time->ratio, c.result.time->ratio);
  const std::string text = report::format_ab_summary(c.result, 0.01);
  EXPECT_NE(text.find("verdict: SLOWER"), std::string::npos) << text;
  const std::string page = report::ab_html(ab);
  EXPECT_NE(page.find("pair-ba"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
}

TEST(MatchedAB, AHostWorkloadIsRefused) {
  sim::gpu g({});
  scaled_workload a(g, 1.0, "A");
  scaled_workload b(g, 1.0, "B");
  sim::environment env(g);
  env.host_only = true;
  const ab_result r = measure_ab(a, b, env, ab_options());
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.stop_reason, stop_reason::invalid_input);
  EXPECT_NE(r.error.find("GPU"), std::string::npos);
}

TEST(MatchedAB, AnInterruptKeepsWhatWasMeasured) {
  sim::gpu g(lottery_gpu());
  scaled_workload a(g, 1.0, "A");
  scaled_workload b(g, 1.02, "B");
  sim::environment env(g);
  env.interrupt_after = 400;
  const ab_result r = measure_ab(a, b, env, ab_options());
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.stop_reason, stop_reason::interrupted);
  EXPECT_FALSE(r.a.samples.empty());
  EXPECT_FALSE(r.a.final_release.empty()) << "the GPU is handed back";
}

}  // namespace
}  // namespace coolbench::measure
