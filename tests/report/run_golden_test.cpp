// Golden files of what `coolbench run` prints and writes: the progress lines and the summary, the
// JSON document and the CSV of samples, for runs of each mode and policy on the simulated GPU
// (tests/measure/sim_gpu.hpp, a virtual clock: every figure is deterministic). They pin the
// output while the code behind it moves; a deliberate change of the output regenerates them:
//
//   COOLBENCH_UPDATE_GOLDEN=1 ./build/tests/report/run_golden_test
//
// and the diff of tests/report/golden/ is reviewed with the change.
//
// Normalised, not dropped: the coolbench version (it names the commit), and floating-point
// numbers in the JSON to 9 significant digits (the order of a sum may change the last bits).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "coolbench/report.hpp"
#include "measure/sim_gpu.hpp"

namespace coolbench::measure {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

fs::path golden_dir() { return fs::path(PROJECT_SOURCE_DIR) / "tests" / "report" / "golden"; }

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void normalise(nlohmann::json& j) {
  if (j.is_object() || j.is_array()) {
    for (auto& child : j) normalise(child);
  } else if (j.is_number_float()) {
    const double v = j.get<double>();
    if (std::isfinite(v)) j = std::stod(fmt::format("{:.9g}", v));
  }
}

std::string normalised_json(const run_result& r) {
  nlohmann::json doc = report::to_json(r);
  doc["environment"]["coolbench_version"] = "<version>";
  normalise(doc);
  return doc.dump(1) + "\n";
}

/// Compares `text` with the golden file `name`, or writes it with COOLBENCH_UPDATE_GOLDEN set.
void expect_golden(const std::string& name, const std::string& text) {
  const fs::path path = golden_dir() / name;
  const char* update = std::getenv("COOLBENCH_UPDATE_GOLDEN");
  if (update != nullptr && *update != '\0' && std::string(update) != "0") {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
    return;
  }
  const std::string expected = read_text(path);
  ASSERT_FALSE(expected.empty()) << path << " is missing: run with COOLBENCH_UPDATE_GOLDEN=1";
  // Line by line, so a failure names the first line that differs.
  std::istringstream want(expected);
  std::istringstream got(text);
  std::string a;
  std::string b;
  for (int line = 1;; ++line) {
    const bool more_a = static_cast<bool>(std::getline(want, a));
    const bool more_b = static_cast<bool>(std::getline(got, b));
    if (!more_a && !more_b) break;
    ASSERT_TRUE(more_a && more_b && a == b)
        << name << ":" << line << "\n  golden: " << (more_a ? a : "<end>")
        << "\n  now:    " << (more_b ? b : "<end>");
  }
  EXPECT_EQ(text, expected) << name;  // line endings and the final newline too
}

struct scenario {
  sim::gpu_model gpu;
  protocol_options options;
  int interrupt_after = -1;
  bool keep_context = false;
  bool host_only = false;
};

/// Runs `s` and checks the three outputs against `<name>.txt`, `.json` and `.csv`: the text is
/// what `coolbench run` prints (its progress lines, indented, then the summary).
void check(const std::string& name, const scenario& s) {
  sim::gpu g(s.gpu);
  sim::workload w(g);
  sim::environment env(g);
  env.interrupt_after = s.interrupt_after;
  env.keep_context = s.keep_context;
  env.host_only = s.host_only;
  std::string printed = "measuring " + w.describe() + "\n";
  const run_result r =
      measure(w, env, s.options, [&](const std::string& line) { printed += "  " + line + "\n"; });
  printed += report::format_run_summary(r);
  expect_golden(name + ".txt", printed);
  expect_golden(name + ".json", normalised_json(r));
  expect_golden(name + ".csv", report::samples_csv(r));
}

protocol_options short_run() {
  protocol_options o;
  o.min_time = 20ms;
  o.max_time = 30s;
  o.rel_ci = 0.002;
  return o;
}

sim::gpu_model jittery() {
  sim::gpu_model m;
  m.jitter_ms = 0.004;
  return m;
}

sim::gpu_model power_bound_chain() {
  sim::gpu_model m;
  m.power_bound = true;
  m.base_ms = 5;
  m.heat_c_per_s = 5;
  m.jitter_ms = 0.01;
  return m;
}

TEST(RunGolden, ColdLatencyBound) { check("cold_latency_bound", {jittery(), short_run()}); }

TEST(RunGolden, ColdHotStartGates) {
  scenario s{jittery(), short_run()};
  s.gpu.start_c = 60;
  check("cold_hot_start", s);
}

TEST(RunGolden, ColdPowerBoundInBursts) {
  scenario s{power_bound_chain(), short_run()};
  s.options.min_samples = 40;
  s.options.contexts = 3;
  s.options.context_min_samples = 10;
  check("cold_power_bound", s);
}

TEST(RunGolden, ColdSpreadOverContexts) {
  scenario s{jittery(), short_run()};
  s.gpu.context_levels = {1.0, 1.012, 0.994, 1.004};
  s.options.rel_ci = 0.005;
  s.options.contexts = 3;
  s.options.context_min_samples = 20;
  check("cold_contexts", s);
}

TEST(RunGolden, ColdTooFewContextsBeforeTheLimit) {
  scenario s{jittery(), short_run()};
  s.gpu.context_levels = {1.0, 1.03};
  s.options.rel_ci = 0.001;
  s.options.contexts = 4;
  s.options.context_min_samples = 40;
  s.options.max_time = 150ms;
  check("cold_contexts_cut", s);
}

TEST(RunGolden, ColdCoarseTimer) {
  scenario s{jittery(), short_run()};
  s.gpu.tick_ms = 0.001;
  check("cold_coarse_timer", s);
}

TEST(RunGolden, ColdLabelKeepsThrottledSamples) {
  scenario s{power_bound_chain(), short_run()};
  s.options.on_throttle = throttle_action::label;
  s.options.min_samples = 40;
  check("cold_label", s);
}

TEST(RunGolden, ColdInterrupted) {
  scenario s{jittery(), short_run()};
  s.interrupt_after = 60;
  check("cold_interrupted", s);
}

TEST(RunGolden, ColdContextKept) {
  scenario s{jittery(), short_run()};
  s.gpu.start_c = 50;
  s.keep_context = true;
  check("cold_context_kept", s);
}

TEST(RunGolden, HostWorkload) {
  scenario s{jittery(), short_run()};
  s.host_only = true;
  check("host", s);
}

TEST(RunGolden, Sustained) {
  scenario s{{}, short_run()};
  s.gpu.base_ms = 2;
  s.gpu.jitter_ms = 0.01;
  s.gpu.heat_c_per_s = 60;
  s.gpu.steady_c = 68;
  s.options.mode = run_mode::sustained;
  s.options.soak_window = 300ms;
  s.options.soak_max_time = 3s;
  s.options.min_time = 50ms;
  check("sustained", s);
}

TEST(RunGolden, Profile) {
  scenario s{power_bound_chain(), short_run()};
  s.gpu.heat_c_per_s = 20;
  s.gpu.report_lag_ns = 30'000'000;
  s.options.mode = run_mode::profile;
  s.options.profile_time = 2s;
  check("profile", s);
}

TEST(RunGolden, Naive) {
  scenario s{jittery(), short_run()};
  s.gpu.start_c = 70;
  s.options.policy = sampling_policy::naive;
  check("naive", s);
}

TEST(RunGolden, FixedSleep) {
  scenario s{jittery(), short_run()};
  s.options.policy = sampling_policy::fixed_sleep;
  s.options.cooldown_interval = 10ms;
  check("fixed_sleep", s);
}

TEST(RunGolden, ClockDiscard) {
  scenario s{power_bound_chain(), short_run()};
  s.gpu.cap_clock_fraction = 0.7;
  s.options.policy = sampling_policy::clock_discard;
  s.options.min_samples = 40;
  s.options.max_time = 2s;
  check("clock_discard", s);
}

}  // namespace
}  // namespace coolbench::measure
