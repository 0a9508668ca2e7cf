// The idle rules of `coolbench release-check` (src/cli/release_check_idle.hpp) on synthetic
// traces shaped like the H200's (docs/facts-h200.md §1): 345 MHz / 80 W idle, 1980 MHz / 123 W with
// a context held.
#include "cli/release_check_idle.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace coolbench::cli {
namespace {

using telemetry::gpu_sample;
using telemetry::reading;

constexpr std::uint64_t mib = std::uint64_t{1} << 20U;
constexpr std::uint64_t idle_bit = 0x1;

gpu_sample sample(unsigned clock_mhz, double power_w, std::uint64_t memory_bytes,
                  std::uint64_t reasons) {
  gpu_sample s;
  s.clock_sm_mhz = reading<unsigned>::of(clock_mhz);
  s.power_w = reading<double>::of(power_w);
  s.memory_used_bytes = reading<std::uint64_t>::of(memory_bytes);
  s.clock_reasons = reading<std::uint64_t>::of(reasons);
  return s;
}

gpu_sample idle_sample() { return sample(345, 80, 0, idle_bit); }
gpu_sample busy_sample() { return sample(1980, 123, 527 * mib, 0); }

idle_criteria h200_criteria() {
  const std::vector<gpu_sample> pre = {idle_sample(), sample(345, 81, 0, idle_bit)};
  return make_idle_criteria(pre, 345, true);
}

// Samples every 50 ms from `from_ms` to `to_ms`, each made by `at(ms)`, the process listed
// before `gone_ms`. Integer milliseconds keep the comparisons exact.
template <class F>
std::vector<trace_point> trace(int from_ms, int to_ms, int gone_ms, F at) {
  std::vector<trace_point> points;
  for (int ms = from_ms; ms <= to_ms; ms += 50) {
    points.push_back({ms / 1000.0, at(ms), ms < gone_ms});
  }
  return points;
}

void expect_time(const milestone_times& times, milestone m, double expected) {
  ASSERT_TRUE(times.at(m).has_value()) << label_of(m);
  EXPECT_NEAR(*times.at(m), expected, 1e-9) << label_of(m);
}

TEST(release_check_idle, criteria_from_an_idle_baseline) {
  const auto c = h200_criteria();
  EXPECT_TRUE(c.judge_process);
  EXPECT_TRUE(c.judge_idle_bit);
  ASSERT_TRUE(c.memory_baseline_bytes.has_value());
  EXPECT_EQ(*c.memory_baseline_bytes, 0U);
  EXPECT_EQ(c.memory_tolerance_bytes, 4 * mib);
  ASSERT_TRUE(c.sm_clock_floor_mhz.has_value());
  EXPECT_EQ(*c.sm_clock_floor_mhz, 380U);  // 345 + 10%
  EXPECT_TRUE(c.sm_floor_from_baseline);
  ASSERT_TRUE(c.power_floor_w.has_value());
  EXPECT_DOUBLE_EQ(*c.power_floor_w, 96.0);  // the highest pre-run power + 15 W
  EXPECT_EQ(c.consecutive, 3U);
}

TEST(release_check_idle, memory_tolerance_is_one_percent_of_a_large_baseline) {
  const std::vector<gpu_sample> pre = {sample(345, 80, 10240 * mib, idle_bit)};
  const auto c = make_idle_criteria(pre, std::nullopt, true);
  EXPECT_EQ(c.memory_tolerance_bytes, static_cast<std::uint64_t>(10240.0 * mib * 0.01));
}

TEST(release_check_idle, a_busy_baseline_skips_power_and_takes_the_lowest_clock) {
  const std::vector<gpu_sample> pre = {busy_sample(), sample(1980, 125, 527 * mib, idle_bit)};
  EXPECT_FALSE(pre_run_idle(pre));
  const auto c = make_idle_criteria(pre, 1200, true);
  EXPECT_FALSE(c.power_floor_w.has_value());
  EXPECT_FALSE(c.sm_floor_from_baseline);
  ASSERT_TRUE(c.sm_clock_floor_mhz.has_value());
  EXPECT_EQ(*c.sm_clock_floor_mhz, 1320U);
  EXPECT_EQ(*c.memory_baseline_bytes, 527 * mib);
  EXPECT_FALSE(pre_run_idle(std::vector<gpu_sample>{}));
}

TEST(release_check_idle, the_h200_release_trace_is_idle_when_power_falls) {
  // Memory back at 0.1 s, clock and idle bit at 1.9 s, power at 2.9 s; the process is gone at
  // once (the release returned).
  const auto points = trace(-100, 4000, 0, [](int ms) {
    return sample(ms >= 1900 ? 345 : 1980, ms >= 2900 ? 80 : 123, ms >= 100 ? 4 * mib : 527 * mib,
                  ms >= 1900 ? idle_bit : 0);
  });
  const auto times = find_milestones(h200_criteria(), points);
  expect_time(times, milestone::process_gone, 0.0);
  expect_time(times, milestone::memory_back, 0.1);
  expect_time(times, milestone::sm_clock_floor, 1.9);
  expect_time(times, milestone::idle_bit, 1.9);
  expect_time(times, milestone::power_floor, 2.9);
  expect_time(times, milestone::idle, 2.9);
  for (const milestone m : all_milestones) EXPECT_TRUE(times.is_judged(m)) << label_of(m);
}

TEST(release_check_idle, samples_before_the_event_do_not_count) {
  // Idle-looking samples during the release call (t < 0) are not a milestone.
  const auto points = trace(-500, 1000, -1000, [](int ms) {
    return ms < 0 || ms >= 500 ? idle_sample() : busy_sample();
  });
  const auto times = find_milestones(h200_criteria(), points);
  expect_time(times, milestone::idle, 0.5);
  expect_time(times, milestone::process_gone, 0.0);
}

TEST(release_check_idle, a_blip_is_not_idle) {
  // One idle sample at 1.0 s, then busy again; stable idle from 2.0 s.
  const auto points = trace(
      0, 3000, 0, [](int ms) { return ms == 1000 || ms >= 2000 ? idle_sample() : busy_sample(); });
  const auto times = find_milestones(h200_criteria(), points);
  expect_time(times, milestone::idle, 2.0);

  // Two idle samples in a row are still a blip; three are idle.
  auto two = trace(0, 1000, 0, [](int ms) { return ms >= 950 ? idle_sample() : busy_sample(); });
  EXPECT_FALSE(find_milestones(h200_criteria(), two).at(milestone::idle).has_value());
  auto three = trace(0, 1000, 0, [](int ms) { return ms >= 900 ? idle_sample() : busy_sample(); });
  expect_time(find_milestones(h200_criteria(), three), milestone::idle, 0.9);
}

TEST(release_check_idle, missing_readings_are_not_idle) {
  auto points = trace(0, 2000, 0, [](int) { return idle_sample(); });
  for (auto& p : points) p.sample.power_w = reading<double>::unsupported();
  auto times = find_milestones(h200_criteria(), points);
  EXPECT_FALSE(times.at(milestone::power_floor).has_value());
  EXPECT_FALSE(times.at(milestone::idle).has_value());
  EXPECT_TRUE(times.is_judged(milestone::power_floor));
  expect_time(times, milestone::sm_clock_floor, 0.0);

  points = trace(0, 2000, 0, [](int) { return idle_sample(); });
  for (auto& p : points) p.sample.clock_reasons = reading<std::uint64_t>::failed();
  times = find_milestones(h200_criteria(), points);
  EXPECT_FALSE(times.at(milestone::idle_bit).has_value());
  EXPECT_FALSE(times.at(milestone::idle).has_value());

  // A failed read in the middle of an idle run breaks the run.
  points = trace(0, 500, 0, [](int) { return idle_sample(); });
  points[2].sample.memory_used_bytes = reading<std::uint64_t>::failed();
  times = find_milestones(h200_criteria(), points);
  expect_time(times, milestone::memory_back, 0.15);
  expect_time(times, milestone::idle, 0.15);

  // An unknown process listing is not "gone".
  points = trace(0, 1000, 0, [](int) { return idle_sample(); });
  for (auto& p : points) p.process_listed.reset();
  times = find_milestones(h200_criteria(), points);
  EXPECT_FALSE(times.at(milestone::process_gone).has_value());
  EXPECT_FALSE(times.at(milestone::idle).has_value());
}

TEST(release_check_idle, the_process_listed_keeps_the_gpu_from_idle) {
  const auto points = trace(0, 3000, 1700, [](int) { return idle_sample(); });
  const auto times = find_milestones(h200_criteria(), points);
  expect_time(times, milestone::process_gone, 1.7);
  expect_time(times, milestone::idle, 1.7);
}

TEST(release_check_idle, conditions_not_judged_count_as_met) {
  auto c = h200_criteria();
  c.power_floor_w.reset();
  c.judge_process = false;
  c.judge_idle_bit = false;
  auto points = trace(0, 1000, 10000, [](int) { return sample(345, 200, 0, 0); });
  for (auto& p : points) p.process_listed.reset();
  const auto times = find_milestones(c, points);
  expect_time(times, milestone::idle, 0.0);
  EXPECT_FALSE(times.is_judged(milestone::power_floor));
  EXPECT_FALSE(times.is_judged(milestone::process_gone));
  EXPECT_FALSE(times.is_judged(milestone::idle_bit));
  EXPECT_FALSE(times.at(milestone::power_floor).has_value());
}

TEST(release_check_idle, no_clock_floor_never_reaches_idle) {
  const std::vector<gpu_sample> pre = {sample(345, 80, 0, idle_bit)};
  std::vector<gpu_sample> no_clock = pre;
  no_clock[0].clock_sm_mhz = reading<unsigned>::unsupported();
  const auto c = make_idle_criteria(no_clock, std::nullopt, true);
  EXPECT_FALSE(c.sm_clock_floor_mhz.has_value());
  const auto points = trace(0, 1000, 0, [](int) { return idle_sample(); });
  EXPECT_FALSE(find_milestones(c, points).at(milestone::idle).has_value());
}

TEST(release_check_idle, the_idle_bit_among_others) {
  EXPECT_TRUE(has_idle_bit(sample(345, 80, 0, 0x1 | 0x2)));
  EXPECT_FALSE(has_idle_bit(sample(345, 80, 0, 0x4)));
  gpu_sample missing = idle_sample();
  missing.clock_reasons = reading<std::uint64_t>::unsupported();
  EXPECT_FALSE(has_idle_bit(missing));
}

TEST(release_check_idle, resample_takes_the_nearest_sample_within_half_a_step) {
  std::vector<trace_point> points = {{0.02, sample(1, 1, 0, 0), false},
                                     {0.24, sample(2, 2, 0, 0), false},
                                     {0.30, sample(3, 3, 0, 0), false}};
  const auto r = resample(points, 0.25, 1.0);
  ASSERT_EQ(r.size(), 5U);
  ASSERT_TRUE(r[0].has_value());
  EXPECT_EQ(r[0]->clock_sm_mhz.value, 1U);
  ASSERT_TRUE(r[1].has_value());
  EXPECT_EQ(r[1]->clock_sm_mhz.value, 2U);
  EXPECT_FALSE(r[2].has_value());
  EXPECT_FALSE(r[4].has_value());
}

mode_summary summary(const std::string& name, double idle_s, double hold_to_event_s) {
  mode_summary s;
  s.name = name;
  s.times.judged.fill(true);
  s.times.time_s[static_cast<std::size_t>(milestone::idle)] = idle_s;
  s.times.time_s[static_cast<std::size_t>(milestone::process_gone)] = 0.0;
  s.hold_end_to_event_s = hold_to_event_s;
  s.timeout_s = 30;
  s.trace = trace(0, 4000, 0, [](int ms) { return ms < 2000 ? busy_sample() : idle_sample(); });
  return s;
}

TEST(release_check_idle, the_side_by_side_rendering) {
  const auto a = summary("release", 2.9, 0.05);
  auto b = summary("process exit", 1.7, 0.1);
  b.times.judged[static_cast<std::size_t>(milestone::power_floor)] = false;

  const std::string table = format_milestone_table(a, b);
  EXPECT_NE(table.find("release [s]"), std::string::npos) << table;
  EXPECT_NE(table.find("process exit [s]"), std::string::npos) << table;
  EXPECT_EQ(table.find("[s]process"), std::string::npos) << "columns run together: " << table;
  EXPECT_NE(table.find("idle (all)"), std::string::npos) << table;
  EXPECT_NE(table.find("2.90"), std::string::npos) << table;
  EXPECT_NE(table.find("2.95"), std::string::npos) << table;  // from the end of the hold
  EXPECT_NE(table.find("1.80"), std::string::npos) << table;
  EXPECT_NE(table.find("not reached"), std::string::npos) << table;
  EXPECT_NE(table.find("n/a"), std::string::npos) << table;

  const std::string traces = format_power_traces(a, b, 0.25, 4.0);
  std::vector<std::string> lines;
  for (std::size_t start = 0, end; (end = traces.find('\n', start)) != std::string::npos;
       start = end + 1) {
    lines.push_back(traces.substr(start, end - start));
  }
  ASSERT_EQ(lines.size(), 5U) << traces;
  EXPECT_TRUE(lines[0].starts_with("t[s]")) << traces;
  EXPECT_TRUE(lines[1].starts_with("release W")) << traces;
  EXPECT_TRUE(lines[4].starts_with("process exit MHz")) << traces;
  for (const auto& line : lines) EXPECT_EQ(line.size(), lines[0].size()) << traces;
  EXPECT_NE(lines[1].find("123"), std::string::npos) << traces;
  EXPECT_NE(lines[2].find("345"), std::string::npos) << traces;

  EXPECT_EQ(format_verdict(a, b),
            "release reached idle in 2.90 s, process exit in 1.70 s (ratio 1.71)\n");
  b.times.time_s[static_cast<std::size_t>(milestone::idle)].reset();
  EXPECT_EQ(format_verdict(a, b),
            "release reached idle in 2.90 s, process exit did not reach idle within 30 s\n");
}

}  // namespace
}  // namespace coolbench::cli
