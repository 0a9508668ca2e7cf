// `coolbench report` and `coolbench compare` as child processes, on runs of the
// protocol on the simulated GPU (make_sample_run) and the hand-written run of
// tests/report/data: files written, verdicts, the documented exit codes, help.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/run_coolbench.hpp"

namespace {

namespace fs = std::filesystem;
using coolbench::testing::describe;
using coolbench::testing::read_file;
using coolbench::testing::run_result;

const fs::path k_small_run = fs::path(REPORT_DATA_DIR) / "small_run.json";

class report_compare_test : public coolbench::testing::coolbench_test {
 protected:
  report_compare_test() : coolbench_test("coolbench_report_compare_test") {}

  run_result run(const std::vector<std::string>& args) {
    return coolbench_test::run(args, coolbench::testing::without_driver(FAKE_CUDA_PATH));
  }

  /// A run document of KIND (cold, cold-slower, profile) on the simulated GPU.
  std::string sample_run(const std::string& kind) {
    const std::string path = (dir() / (kind + ".json")).string();
    const std::string command = std::string(MAKE_SAMPLE_RUN) + " " + kind + " " + path;
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return path;
  }
};

TEST_F(report_compare_test, report_writes_a_page_beside_the_run_or_where_asked) {
  const fs::path copy = dir() / "run.json";
  fs::copy_file(k_small_run, copy);
  const run_result beside = run({"report", copy.string()});
  ASSERT_EQ(beside.code, 0) << describe(beside);
  EXPECT_NE(beside.out.find("run.html (12 samples"), std::string::npos) << beside.out;
  EXPECT_NE(read_file(dir() / "run.html").find("<svg "), std::string::npos);
  const std::string profile = sample_run("profile");
  const fs::path page = dir() / "profile-page.html";
  const run_result asked = run({"report", profile, "-o", page.string()});
  ASSERT_EQ(asked.code, 0) << describe(asked);
  const std::string html = read_file(page);
  EXPECT_NE(html.find("id=\"profile\""), std::string::npos);
  EXPECT_NE(html.find("least squares:"), std::string::npos);
}

TEST_F(report_compare_test, report_errors_have_their_exit_codes) {
  const run_result missing = run({"report", (dir() / "none.json").string()});
  EXPECT_EQ(missing.code, 4) << describe(missing);
  coolbench::testing::expect_one_line(missing.err, "report", "none.json: cannot be read");
  const fs::path other = dir() / "other.json";
  std::ofstream(other) << R"({"schema": "coolbench.release-check/1"})";
  const run_result wrong = run({"report", other.string()});
  EXPECT_EQ(wrong.code, 4) << describe(wrong);
  coolbench::testing::expect_one_line(wrong.err, "report", "schema 'coolbench.release-check/1'");
  const run_result unwritable =
      run({"report", k_small_run.string(), "-o", (dir() / "no" / "page.html").string()});
  EXPECT_EQ(unwritable.code, 4) << describe(unwritable);
  EXPECT_EQ(run({"report"}).code, 2);
  const run_result help = run({"report", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_EQ(help.out, read_file(fs::path(PROJECT_SOURCE_DIR) / "docs/cli/report.md"));
}

TEST_F(report_compare_test, compare_calls_two_percent_slower_slower_and_a_rerun_same) {
  const std::string a = sample_run("cold");
  const std::string b = sample_run("cold-slower");
  const run_result text = run({"compare", a, b, a});
  ASSERT_EQ(text.code, 0) << describe(text);
  EXPECT_NE(text.out.find("SLOWER"), std::string::npos) << text.out;
  const run_result json =
      run({"compare", a, b, a, "--json", "--html", (dir() / "compare.html").string()});
  ASSERT_EQ(json.code, 0) << describe(json);
  const auto doc = nlohmann::json::parse(json.out);
  ASSERT_EQ(doc["comparisons"].size(), 2U);
  EXPECT_EQ(doc["comparisons"][0]["verdict"], "SLOWER") << json.out;
  EXPECT_NEAR(doc["comparisons"][0]["time"]["ratio"].get<double>(), 1.02, 0.005);
  EXPECT_EQ(doc["comparisons"][1]["verdict"], "SAME") << json.out;
  EXPECT_FALSE(doc["comparisons"][0]["one_context_draw"].get<bool>());
  EXPECT_NE(read_file(dir() / "compare.html").find("<svg "), std::string::npos);
}

TEST_F(report_compare_test, compare_refuses_another_mode_unless_forced) {
  const std::string cold = sample_run("cold");
  const std::string profile = sample_run("profile");
  const run_result refused = run({"compare", cold, profile});
  EXPECT_EQ(refused.code, 6) << describe(refused);
  EXPECT_NE(refused.err.find("NOT COMPARABLE"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("mode differs: cold against profile"), std::string::npos);
  EXPECT_NE(refused.err.find("--force"), std::string::npos);
  const run_result forced = run({"compare", cold, profile, "--force"});
  EXPECT_EQ(forced.code, 0) << describe(forced);
  EXPECT_NE(forced.out.find("NOT COMPARABLE: mode differs"), std::string::npos) << forced.out;
}

// A matched A/B document: compare gives its verdict over its pairs, report draws its page.
TEST_F(report_compare_test, a_matched_ab_document_is_compared_and_reported) {
  const std::string ab = sample_run("ab");
  const run_result text = run({"compare", ab});
  ASSERT_EQ(text.code, 0) << describe(text);
  EXPECT_NE(text.out.find("SLOWER"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("couples of matched pairs"), std::string::npos) << text.out;
  const run_result json = run({"compare", ab, "--json"});
  ASSERT_EQ(json.code, 0) << describe(json);
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["comparisons"][0]["verdict"], "SLOWER");
  EXPECT_GE(doc["comparisons"][0]["matched_couples"].get<int>(), 3);
  const fs::path page = dir() / "ab.html";
  const run_result report = run({"report", ab, "-o", page.string()});
  ASSERT_EQ(report.code, 0) << describe(report);
  EXPECT_NE(report.out.find("matched A/B"), std::string::npos) << report.out;
  const std::string html = read_file(page);
  EXPECT_NE(html.find("id=\"pairs\""), std::string::npos);
  EXPECT_NE(html.find("id=\"run-B\""), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

// A run on three simulated GPUs (GPU 1 5% slower, GPU 2 failed part-way): one page with the
// spread and each GPU's report, its element ids unique.
TEST_F(report_compare_test, a_document_of_several_gpus_is_reported_on_one_page) {
  const std::string multi = sample_run("multi");
  const fs::path page = dir() / "multi.html";
  const run_result report = run({"report", multi, "-o", page.string()});
  ASSERT_EQ(report.code, 0) << describe(report);
  EXPECT_NE(report.out.find("3 GPUs"), std::string::npos) << report.out;
  const std::string html = read_file(page);
  EXPECT_NE(html.find("id=\"spread\""), std::string::npos);
  EXPECT_NE(html.find("max/min &minus; 1 = <b>"), std::string::npos);
  for (const char* id : {"id=\"gpu0\"", "id=\"gpu1\"", "id=\"gpu2\"", "id=\"gpu1-timeline\""}) {
    EXPECT_NE(html.find(id), std::string::npos) << id;
  }
  EXPECT_NE(html.find("FAILED: error: cudaStreamSynchronize failed"), std::string::npos);
  EXPECT_EQ(html.find("id=\"timeline\""), std::string::npos);  // each GPU's ids prefixed
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

TEST_F(report_compare_test, compare_usage_and_input_errors) {
  EXPECT_EQ(run({"compare", k_small_run.string()}).code, 2);
  EXPECT_EQ(run({"compare", k_small_run.string(), k_small_run.string(), "--same-within", "2"}).code,
            2);
  const run_result missing = run({"compare", k_small_run.string(), (dir() / "b.json").string()});
  EXPECT_EQ(missing.code, 4) << describe(missing);
  const run_result help = run({"compare", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_EQ(help.out, read_file(fs::path(PROJECT_SOURCE_DIR) / "docs/cli/compare.md"));
}

}  // namespace
