// The HTML report (report/html_report.hpp) of saved runs: the SVG's
// structure against a golden file (elements and classes with their counts),
// the marks a run must show (bursts, gates, releases, discards with why, the
// CI), the profile's fit, reading documents (streamed and in memory, bad
// ones), and the size of a million-sample page. COOLBENCH_UPDATE_GOLDEN=1
// rewrites the golden file.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "coolbench/core/error.hpp"
#include "coolbench/report/html_report.hpp"
#include "coolbench/report/run_document.hpp"
#include "report/run_charts.hpp"
#include "report/svg.hpp"

namespace coolbench::report {
namespace {

const std::filesystem::path k_data = TEST_DATA_DIR;

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// "element class" -> count, over every element that has a class attribute.
std::map<std::string, int> structure(const std::string& svg_text) {
  std::map<std::string, int> counts;
  static const std::regex element(R"re(<([a-z]+)\b[^>]*?\bclass="([^"]*)")re");
  for (auto it = std::sregex_iterator(svg_text.begin(), svg_text.end(), element);
       it != std::sregex_iterator(); ++it) {
    ++counts[(*it)[1].str() + " " + (*it)[2].str()];
  }
  return counts;
}

std::string structure_text(const std::map<std::string, int>& counts) {
  std::string out;
  for (const auto& [key, n] : counts) out += key + " " + std::to_string(n) + "\n";
  return out;
}

int count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

TEST(HtmlReport, TheSmallRunMatchesItsGoldenStructure) {
  const run_document run = load_run_document(k_data / "small_run.json");
  ASSERT_EQ(run.samples.size(), 12U);
  const std::string svg = timeline_svg(run) + distribution_svg(run) + contexts_svg(run);
  const std::string actual = structure_text(structure(svg));
  const auto golden = k_data / "small_run.structure.txt";
  if (std::getenv("COOLBENCH_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden, std::ios::binary) << actual;
  }
  EXPECT_EQ(actual, read_text(golden)) << "rewrite with COOLBENCH_UPDATE_GOLDEN=1 if intended";
}

TEST(HtmlReport, TheTimelineMarksBurstsGatesReleasesAndDiscards) {
  const run_document run = load_run_document(k_data / "small_run.json");
  const std::string svg = timeline_svg(run);
  const auto s = structure(svg);
  EXPECT_EQ(s.at("rect burst") + s.at("rect burst burst-even"), 2);  // bursts 1 and 2
  EXPECT_EQ(s.at("rect gate"), 1);                                   // the 2 s gate
  EXPECT_EQ(s.at("line release"), 1);                                // context 1 -> 2
  EXPECT_NE(svg.find("ctx 2"), std::string::npos);
  EXPECT_NE(svg.find("gate before burst 2"), std::string::npos);
  // The discarded sample, coloured by why, with its count in the legend and tooltip.
  EXPECT_EQ(s.at("path discard discard-0"), 1);
  EXPECT_NE(svg.find("discarded: sw_power_cap (1)"), std::string::npos);
  // Latency, three telemetry bands and one reason lane (the power cap bit).
  EXPECT_EQ(s.at("g axis y-axis"), 4);
  EXPECT_EQ(s.at("rect reason reason-sw_power_cap"), 1);
  EXPECT_EQ(count(svg, ">sw_power_cap</text>"), 1);
  EXPECT_EQ(s.at("path band temp") + s.at("path band clock") + s.at("path band power"), 3);
  // Seven kept samples in one series, drawn as strokes, none lost to decimation here.
  EXPECT_EQ(count(svg, "kept measurement samples"), 1);
  EXPECT_NE(svg.find("time since the first sample [s]"), std::string::npos);
}

TEST(HtmlReport, TheDistributionShowsTheMedianAndTheCiOverContexts) {
  const run_document run = load_run_document(k_data / "small_run.json");
  const std::string svg = distribution_svg(run);
  EXPECT_NE(svg.find("median 0.50400 ms"), std::string::npos) << svg;
  EXPECT_NE(svg.find("CI over contexts: 0.48740 to 0.51910 ms"), std::string::npos);
  const std::string contexts = contexts_svg(run);
  EXPECT_EQ(structure(contexts).at("circle context-median"), 2);
  EXPECT_NE(contexts.find("context 2: 4 samples, median 0.50550 ms"), std::string::npos);
}

TEST(HtmlReport, ThePageIsSelfContained) {
  const run_document run = load_run_document(k_data / "small_run.json");
  const std::string page = run_html(run);
  EXPECT_TRUE(page.starts_with("<!DOCTYPE html>"));
  EXPECT_EQ(count(page, "<svg "), 3);  // timeline, distribution, contexts; no profile
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("src="), std::string::npos);
  EXPECT_EQ(page.find("href="), std::string::npos);
  EXPECT_EQ(page.find("@import"), std::string::npos);
  // Every http in the page is the SVG namespace, never something fetched.
  EXPECT_EQ(count(page, "http"), count(page, "http://www.w3.org/2000/svg"));
  EXPECT_NE(page.find("NVIDIA H200"), std::string::npos);
  EXPECT_NE(page.find("570.124.06"), std::string::npos);
  EXPECT_NE(page.find("0.50325 ms"), std::string::npos);
}

TEST(HtmlReport, StreamedAndInMemoryReadingAgree) {
  const run_document streamed = load_run_document(k_data / "small_run.json");
  const run_document in_memory = read_run_document(
      nlohmann::json::parse(read_text(k_data / "small_run.json")), "small_run.json");
  EXPECT_EQ(streamed.samples.latency_ms, in_memory.samples.latency_ms);
  EXPECT_EQ(streamed.samples.throttle_reason, in_memory.samples.throttle_reason);
  EXPECT_EQ(streamed.samples.context, in_memory.samples.context);
  EXPECT_TRUE(std::isnan(streamed.samples.power_w.back()));  // null reads as NaN
  EXPECT_EQ(streamed.doc["samples"].size(), 0U);
  EXPECT_EQ(streamed.figure_ms(), 0.50325);
  EXPECT_EQ(streamed.figure_contexts(), 2);
}

TEST(HtmlReport, BadDocumentsAreRefusedNamingWhat) {
  auto doc = nlohmann::json::parse(read_text(k_data / "small_run.json"));
  const auto message = [](nlohmann::json d) {
    try {
      (void)read_run_document(std::move(d), "x.json");
    } catch (const invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  auto wrong_schema = doc;
  wrong_schema["schema"] = "coolbench.run/9";
  EXPECT_NE(message(wrong_schema).find("schema 'coolbench.run/9'"), std::string::npos);
  auto no_latency = doc;
  no_latency["samples"][3].erase("latency_ms");
  EXPECT_NE(message(no_latency).find("samples[3] has no 'latency_ms'"), std::string::npos);
  EXPECT_NE(message(nlohmann::json::array()).find("x.json: not a JSON object"), std::string::npos);
  EXPECT_THROW((void)load_run_document(k_data / "no-such-run.json"), invalid_argument);
}

/// A million samples, built in columns: the page stays small, the stats exact.
TEST(HtmlReport, AMillionSamplesMakeAPageOfAFewHundredKiB) {
  run_document run = load_run_document(k_data / "small_run.json");
  run_samples& s = run.samples;
  s = {};
  constexpr std::size_t n = 1'000'000;
  for (std::size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i) * 1e-4;
    const bool discarded = i % 997 == 0;
    s.phase.emplace_back(i < 1000 ? "warmup" : "measure");
    s.burst.push_back(static_cast<int>(i / 100000));
    s.context.push_back(static_cast<int>(i / 200000) + 1);
    s.start_s.push_back(t);
    s.end_s.push_back(t + 0.9e-4);
    s.latency_ms.push_back(0.09 + 0.001 * std::sin(static_cast<double>(i)) +
                           (discarded ? 0.01 : 0));
    s.kept.push_back(!discarded);
    s.throttle_reason.emplace_back(discarded ? "sw_power_cap" : "");
    s.temp_c.push_back(40 + static_cast<double>(i) / 1e5);
    s.sm_clock_mhz.push_back(1980);
    s.power_w.push_back(300 + static_cast<double>(i % 50));
    s.clock_reasons.push_back(discarded ? 4 : 0);
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string page = run_html(run);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(page.size(), 2'000'000U) << "the page of a million samples grew";
  EXPECT_LT(seconds, 20.0);
  // The histogram counts every kept measurement sample, not a decimated few.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < n; ++i) kept += s.kept[i] && s.phase[i] == "measure" ? 1 : 0;
  const std::string hist = distribution_svg(run);
  EXPECT_NE(hist.find("Distribution of " + std::to_string(kept) + " kept samples"),
            std::string::npos)
      << hist.substr(0, 400);
}

TEST(Svg, TicksScalesAndEscaping) {
  EXPECT_EQ(svg::nice_ticks(0, 1, 5), (std::vector<double>{0, 0.2, 0.4, 0.6, 0.8, 1.0}));
  EXPECT_EQ(svg::tick_label(0.25, 0.05), "0.25");
  EXPECT_EQ(svg::num(1.005), "1");
  EXPECT_EQ(svg::escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
  const auto a = svg::make_area(10, 20, 100, 50, {0, 10}, {0, 1});
  EXPECT_DOUBLE_EQ(a.x(5), 60);
  EXPECT_DOUBLE_EQ(a.y(1), 20);
  const std::vector<double> xs = {0, 0.01, 0.02, 9.99};
  const std::vector<double> ys = {1, 3, 2, 5};
  const auto cols = svg::min_max_columns(xs, ys, a);
  ASSERT_EQ(cols.size(), 2U);
  EXPECT_EQ(cols[0].count, 3U);
  EXPECT_EQ(cols[0].lo, 1);
  EXPECT_EQ(cols[0].hi, 3);
}

}  // namespace
}  // namespace coolbench::report
