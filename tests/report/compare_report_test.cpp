// coolbench compare's verdicts (report/compare_report.hpp) on a hand-written
// run (data/small_run.json) and variants of it: the ratio and its CI, SAME,
// SLOWER, UNSURE for a wide CI and for a change that does not hold in clock
// cycles, one context's draw said, and what makes runs not comparable.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "coolbench/report/compare_report.hpp"
#include "coolbench/report/run_document.hpp"

namespace coolbench::report {
namespace {

nlohmann::json small_run() {
  std::ifstream in(std::string(TEST_DATA_DIR) + "/small_run.json");
  return nlohmann::json::parse(in);
}

/// The run with every latency, the figure and its CI scaled by `f`, the
/// clock by `clock`, and the CI over contexts set to ±`half` of the figure.
nlohmann::json scaled(double f, double clock = 1, double half = 0.002) {
  auto doc = small_run();
  auto& contexts = doc["summary"]["contexts"];
  const double mean = contexts["mean_ms"].get<double>() * f;
  contexts["mean_ms"] = mean;
  contexts["ci_ms"] = {mean * (1 - half), mean * (1 + half)};
  for (auto& s : doc["samples"]) {
    s["latency_ms"] = s["latency_ms"].get<double>() * f;
    s["sm_clock_mhz"] = s["sm_clock_mhz"].get<double>() * clock;
  }
  return doc;
}

run_comparison compare(const nlohmann::json& a, const nlohmann::json& b) {
  return compare_runs(read_run_document(a, "a.json"), read_run_document(b, "b.json"), 0.01);
}

TEST(Compare, TheSameRunTwiceIsSame) {
  const auto c = compare(scaled(1), scaled(1));
  EXPECT_EQ(c.verdict, "SAME") << c.reason;
  ASSERT_TRUE(c.time);
  EXPECT_DOUBLE_EQ(c.time->ratio, 1);
  // MOVER of two ±0.2% intervals: above, B's upper side and A's lower side.
  EXPECT_NEAR(c.time->upper, std::exp(std::hypot(std::log(1.002), std::log(0.998))), 1e-12);
  EXPECT_NEAR(c.time->lower, std::exp(-std::hypot(std::log(0.998), std::log(1.002))), 1e-12);
  EXPECT_EQ(c.uncertainty, "A over 2 contexts, B over 2 contexts");
  EXPECT_FALSE(c.one_context_draw);
  EXPECT_TRUE(c.issues.empty());
}

TEST(Compare, TwoPercentSlowerIsSlowerInTimeAndCycles) {
  const auto c = compare(scaled(1), scaled(1.02));
  EXPECT_EQ(c.verdict, "SLOWER") << c.reason;
  EXPECT_NEAR(c.time->ratio, 1.02, 1e-12);
  EXPECT_GT(c.time->lower, 1);
  ASSERT_TRUE(c.cycles);
  EXPECT_NEAR(c.cycles->ratio, 1.02, 1e-12);
  EXPECT_EQ(compare(scaled(1.02), scaled(1)).verdict, "FASTER");
}

TEST(Compare, AWideCiIsUnsure) {
  const auto c = compare(scaled(1, 1, 0.03), scaled(1.01, 1, 0.03));
  EXPECT_EQ(c.verdict, "UNSURE");
  EXPECT_NE(c.reason.find("wider than ±1%"), std::string::npos) << c.reason;
}

TEST(Compare, FasterOnlyBecauseOfAHigherClockIsUnsure) {
  // 5% less time at a 10% higher SM clock: 4.5% more cycles.
  const auto c = compare(scaled(1), scaled(0.95, 1.10));
  EXPECT_EQ(c.verdict, "UNSURE") << c.reason;
  EXPECT_LT(c.time->upper, 1);
  EXPECT_GT(c.cycles->lower, 1);
  EXPECT_NE(c.reason.find("not in clock cycles"), std::string::npos) << c.reason;
}

TEST(Compare, OneContextsDrawIsSaid) {
  auto one = scaled(1);
  one["summary"]["contexts"] = nullptr;
  one["summary"]["median_ci_ms"] = {0.503, 0.505};
  const auto c = compare(one, scaled(1));
  EXPECT_TRUE(c.one_context_draw);
  // Its kept samples come from contexts 1 and 2: pooled, the CI is over samples.
  EXPECT_EQ(c.uncertainty,
            "A samples of 2 contexts pooled (a CI over samples, not contexts), B over 2 contexts");
  EXPECT_NEAR(c.baseline_ms.value(), 0.504, 1e-12);  // the median, without contexts
  const std::string text = compare_text({c}, 0.01);
  EXPECT_NE(text.find("(*) a CI over samples, not contexts"), std::string::npos) << text;
  // Only context 2's samples: one context's draw.
  auto single = one;
  for (auto& s : single["samples"]) s["context"] = 2;
  EXPECT_EQ(compare(single, scaled(1)).uncertainty, "A one context's draw, B over 2 contexts");
}

TEST(Compare, RunsOfAnotherGpuModeOrPolicyAreNotComparable) {
  auto other = scaled(1);
  other["environment"]["gpu"]["name"] = "NVIDIA H100 80GB HBM3";
  other["environment"]["gpu"]["driver_version"] = "575.51.03";
  other["configuration"]["mode"] = "sustained";
  const auto c = compare(scaled(1), other);
  int refusals = 0;
  int warnings = 0;
  for (const auto& i : c.issues) (i.refuse ? refusals : warnings) += 1;
  EXPECT_EQ(refusals, 2);  // GPU model, mode
  EXPECT_EQ(warnings, 1);  // driver
  auto card = scaled(1);
  card["environment"]["gpu"]["uuid"] = "GPU-another";
  card["environment"]["gpu"]["power_limit_w"] = 600.0;
  const auto w = compare(scaled(1), card);
  ASSERT_EQ(w.issues.size(), 2U);
  EXPECT_FALSE(w.issues[0].refuse);
  EXPECT_NE(w.issues[1].what.find("power limit [W] differs: 700.0 against 600.0"),
            std::string::npos)
      << w.issues[1].what;
}

TEST(Compare, JsonAndHtmlCarryTheVerdicts) {
  const std::vector<run_comparison> list = {compare(scaled(1), scaled(1.02)),
                                            compare(scaled(1), scaled(1))};
  const auto j = compare_json(list, 0.01);
  EXPECT_EQ(j["schema"], "coolbench.compare/1");
  EXPECT_EQ(j["comparisons"][0]["verdict"], "SLOWER");
  EXPECT_EQ(j["comparisons"][1]["verdict"], "SAME");
  EXPECT_NEAR(j["comparisons"][0]["time"]["ratio"].get<double>(), 1.02, 1e-12);
  const std::string html = compare_html(list, 0.01);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("ratio time verdict-SLOWER"), std::string::npos);
}

}  // namespace
}  // namespace coolbench::report
