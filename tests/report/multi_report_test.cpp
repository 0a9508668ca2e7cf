// The document, summary and page of a run on several GPUs (report/multi_report.hpp), on a
// simulated host of three GPUs, one of which fails part-way; a single GPU's document is
// untouched by it (its golden files are run_golden_test's).
#include "coolbench/report/multi_report.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>

#include "coolbench/report/run_report.hpp"
#include "measure/sim_devices.hpp"

namespace coolbench::report {
namespace {

using namespace std::chrono_literals;

measure::multi_result three_gpus() {
  measure::sim::gpu_model m;
  std::vector<measure::sim::gpu_model> models(3, m);
  models[1].base_ms = 0.42;
  measure::protocol_options o;
  o.min_time = 200ms;
  o.rel_ci = 0.002;
  o.contexts = 1;
  return measure::sim::simulated_devices(models, 2, o);
}

TEST(MultiReport, TheDocumentHoldsEachGpusRunAsASingleRunsDocument) {
  const measure::multi_result all = three_gpus();
  const nlohmann::json doc = multi_to_json(all);
  EXPECT_EQ(doc["schema"], k_multi_schema);
  EXPECT_FALSE(doc["complete"].get<bool>());
  EXPECT_EQ(doc["failures"], 1);
  ASSERT_EQ(doc["gpus"].size(), 3U);
  for (int i = 0; i < 3; ++i) {
    const auto& g = doc["gpus"][i];
    EXPECT_EQ(g["ordinal"], i);
    EXPECT_EQ(g["run"], to_json(*all.runs[i].result));  // as `--device i --json` writes it
    EXPECT_EQ(g["run"]["schema"], k_run_schema);
  }
  EXPECT_EQ(doc["gpus"][0]["status"], "measured");
  EXPECT_EQ(doc["gpus"][0]["failure"], "");
  EXPECT_EQ(doc["gpus"][2]["status"], "failed");
  EXPECT_NE(doc["gpus"][2]["failure"].get<std::string>().find("fell off the bus"),
            std::string::npos);
  ASSERT_EQ(doc["spread"].size(), 1U);
  const auto& s = doc["spread"][0];
  EXPECT_EQ(s["model"], "Simulated H200");
  EXPECT_NEAR(s["max_over_min"].get<double>(), 0.05, 1e-9);
  EXPECT_EQ(s["fastest"], 0);
  EXPECT_EQ(s["slowest"], 1);
  ASSERT_EQ(s["gpus"].size(), 2U);
  EXPECT_NEAR(s["gpus"][1]["vs_mean"].get<double>(), 0.42 / 0.41 - 1, 1e-9);
}

TEST(MultiReport, TheSummaryGivesEachGpuThenTheSpreadAndTheFailures) {
  const std::string text = format_multi_summary(three_gpus());
  const auto gpu0 = text.find("=== GPU 0 ===");
  const auto gpu2 = text.find("=== GPU 2 ===");
  const auto spread = text.find("spread over 2 Simulated H200 GPUs");
  ASSERT_NE(gpu0, std::string::npos) << text;
  ASSERT_NE(gpu2, std::string::npos) << text;
  ASSERT_NE(spread, std::string::npos) << text;
  EXPECT_LT(gpu0, gpu2);
  EXPECT_LT(gpu2, spread);
  EXPECT_NE(text.find("max/min - 1 = 5.00% (fastest GPU 0, slowest GPU 1)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("| 1 | 0.4200 | +2.44% |"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU 2 FAILED: error: cudaStreamSynchronize failed"), std::string::npos)
      << text;
  EXPECT_NE(text.find("1 of 3 GPUs failed; the others' results stand"), std::string::npos);
}

TEST(MultiReport, ThePageReadsBackWithUniqueIds) {
  const multi_document m = read_multi_document(multi_to_json(three_gpus()), "three.json");
  ASSERT_EQ(m.gpus.size(), 3U);
  ASSERT_TRUE(m.gpus[2].run);  // what the failed GPU measured is kept
  EXPECT_EQ(m.gpus[2].status, "failed");
  const std::string html = multi_html(m);
  std::set<std::string> ids;
  for (auto at = html.find(" id=\""); at != std::string::npos; at = html.find(" id=\"", at + 1)) {
    const auto end = html.find('"', at + 5);
    EXPECT_TRUE(ids.insert(html.substr(at + 5, end - at - 5)).second)
        << "repeated id " << html.substr(at + 5, end - at - 5);
  }
  EXPECT_TRUE(ids.contains("gpu2-timeline"));
  EXPECT_THROW((void)read_multi_document(nlohmann::json{{"schema", "coolbench.run/1"}}, "x.json"),
               invalid_argument);
}

}  // namespace
}  // namespace coolbench::report
