// The run's renderings (human summary, JSON, CSV) of a run spread over
// several contexts, on a hand-built result.
#include "coolbench/report.hpp"

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

namespace coolbench::report {
namespace {

measure::run_result spread_result() {
  measure::run_result r;
  r.workload = "gemm fp16 (cuBLASLt)";
  r.options.contexts = 3;
  r.stop_reason = measure::stop_reason::converged;
  r.converged = true;
  for (int c = 1; c <= 3; ++c) {
    for (int i = 0; i < 4; ++i) {
      measure::sample_record s;
      s.context = c;
      s.burst = c;
      s.time.latency_ms = c == 2 ? 0.2597 : 0.2533;
      r.samples.push_back(s);
    }
  }
  r.summary.count = 12;
  r.summary.median_ms = 0.2533;
  measure::context_summary cs;
  cs.per_context = {{1, 4, 0.2533}, {2, 4, 0.2597}, {3, 4, 0.2533}};
  cs.mean_ms = (0.2533 * 2 + 0.2597) / 3;
  cs.ci = std::pair{0.2460, 0.2649};
  cs.spread = 0.2597 / 0.2533 - 1;
  cs.cv = 0.0144;
  r.contexts = cs;
  return r;
}

TEST(RunReport, ASpreadRunLeadsWithTheMeanOverContexts) {
  const std::string text = format_run_summary(spread_result());
  EXPECT_NE(text.find("latency 0.2554 ms (CI 95%: 0.2460 to 0.2649 ms, ±3.70%)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("mean of 3 contexts' medians; they range 0.2533 to 0.2597 ms (2.53% apart"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("all samples pooled: median 0.2533 ms"), std::string::npos) << text;
  EXPECT_LT(text.find("latency 0.2554"), text.find("all samples pooled"));
}

TEST(RunReport, OneContextSaysMedianAsBefore) {
  auto r = spread_result();
  r.contexts.reset();
  const std::string text = format_run_summary(r);
  EXPECT_EQ(text.find("contexts' medians"), std::string::npos);
  EXPECT_NE(text.find("\nmedian 0.2533 ms"), std::string::npos) << text;
}

TEST(RunReport, JsonAndCsvCarryTheContexts) {
  const auto r = spread_result();
  const nlohmann::json doc = to_json(r);
  const auto& c = doc.at("summary").at("contexts");
  EXPECT_EQ(c.at("count"), 3);
  EXPECT_DOUBLE_EQ(c.at("mean_ms").get<double>(), r.contexts->mean_ms);
  EXPECT_DOUBLE_EQ(c.at("ci_ms").at(1).get<double>(), 0.2649);
  EXPECT_EQ(c.at("per_context").at(1).at("context"), 2);
  EXPECT_DOUBLE_EQ(c.at("per_context").at(1).at("median_ms").get<double>(), 0.2597);
  EXPECT_EQ(doc.at("samples").at(5).at("context"), 2);
  EXPECT_EQ(doc.at("configuration").at("contexts"), 3);
  auto single = r;
  single.contexts.reset();
  EXPECT_TRUE(to_json(single).at("summary").at("contexts").is_null());

  const std::string csv = samples_csv(r);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "phase,burst,start_ns,end_ns,latency_ms,kept,throttled,throttle_reason,temp_c,"
            "sm_clock_mhz,power_w,clock_reasons,context,throttle_counter_moved,telemetry_samples");
  // The fifth sample is the second context's first: its context column (the 13th) is 2, and
  // the two columns after it (the same fields as the JSON's) are 0.
  std::size_t line = 0;
  for (int i = 0; i < 5; ++i) line = csv.find('\n', line) + 1;
  const std::string fifth = csv.substr(line, csv.find('\n', line) - line);
  EXPECT_EQ(fifth.substr(fifth.size() - 6), ",2,0,0") << fifth;
}

// The H200 profile of a bf16 8192^3 chain: its 1980 MHz bucket held capped
// runs that NVML had not yet reported; the derate is taken against the
// warm-up, and the tables say how far their reference buckets sit from it.
TEST(RunReport, ProfileCarriesItsBucketsAgainstTheWarmUp) {
  measure::run_result r;
  measure::profile_result p;
  p.by_temperature = {{36, 38, 24, 1.3967, 0}, {56, 58, 14431, 1.6136, 0.1553}};
  p.by_clock = {{1500, 1530, 8211, 1.6177, 0.0489}, {1980, 2010, 85, 1.5423, 0}};
  p.derate = 0.1554;
  p.warmup_median_ms = 1.3950;
  p.derate = 1.6136 / 1.3950 - 1;
  p.coolest_temp_vs_warmup = 1.3967 / 1.3950 - 1;
  p.fastest_clock_vs_warmup = 1.5423 / 1.3950 - 1;
  r.profile = p;
  const std::string md = profile_markdown(r);
  EXPECT_NE(md.find("| 1980 to 2010 | 85 | 1.5423 ms | +0.00% |"), std::string::npos) << md;
  EXPECT_NE(md.find("Cold-to-hot derate: +15.67% (hottest bucket against the warm-up's 1.3950 ms)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("Against the warm-up: coolest bucket +0.12%, fastest-clock bucket +10.56% "
                    "(NVML reported a change of state late)"),
            std::string::npos)
      << md;
  auto prompt = r;
  prompt.profile->fastest_clock_vs_warmup = 0.0003;
  EXPECT_EQ(profile_markdown(prompt).find("late"), std::string::npos);
  const auto json = to_json(r).at("profile");
  EXPECT_DOUBLE_EQ(json.at("fastest_clock_vs_warmup").get<double>(), *p.fastest_clock_vs_warmup);
  EXPECT_DOUBLE_EQ(json.at("coolest_temp_vs_warmup").get<double>(), *p.coolest_temp_vs_warmup);
  EXPECT_DOUBLE_EQ(json.at("warmup_median_ms").get<double>(), 1.3950);
  r.profile->warmup_median_ms.reset();
  r.profile->coolest_temp_vs_warmup.reset();
  r.profile->fastest_clock_vs_warmup.reset();
  const std::string without = profile_markdown(r);
  EXPECT_EQ(without.find("Against the warm-up"), std::string::npos) << without;
  EXPECT_NE(without.find("(hottest bucket against the coolest)"), std::string::npos) << without;
  EXPECT_TRUE(to_json(r).at("profile").at("fastest_clock_vs_warmup").is_null());
}

}  // namespace
}  // namespace coolbench::report
