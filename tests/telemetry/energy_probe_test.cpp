// The energy-period probe on a scripted counter and clock: counters that move every 100 ms and
// every 20 ms, one that never moves, reads that fail; what it costs is bounded by its options.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>

#include "coolbench/core/error.hpp"
#include "coolbench/telemetry/energy_probe.hpp"

namespace coolbench::telemetry {
namespace {

constexpr std::int64_t ms = 1'000'000;  // ns

/// A counter that moves by 7000 mJ every `period_ms`, from `phase_ms` on.
struct counter {
  std::int64_t period_ms = 100;
  std::int64_t phase_ms = 7;
  [[nodiscard]] std::uint64_t at(std::int64_t t_ns) const {
    if (period_ms == 0 || t_ns < phase_ms * ms) return 1'000'000;
    return 1'000'000 +
           7000 * static_cast<std::uint64_t>((t_ns - phase_ms * ms) / (period_ms * ms) + 1);
  }
};

/// Feeds the probe a read every `every_ms` from t = 0 until it is done (or 100,000 reads, a bug).
/// `fails(k)`: read k fails.
energy_probe_result run(energy_period_probe& probe, const counter& c, std::int64_t every_ms,
                        const std::function<bool(int)>& fails = {}) {
  for (int k = 0; k < 100'000; ++k) {
    const std::int64_t t = k * every_ms * ms;
    const auto r =
        fails && fails(k) ? reading<std::uint64_t>::failed() : reading<std::uint64_t>::of(c.at(t));
    if (probe.add(t, r)) break;
  }
  EXPECT_TRUE(probe.done());
  return probe.result();
}

TEST(energy_probe, learns_a_100_ms_counter_read_every_20_ms) {
  energy_period_probe probe;
  const auto r = run(probe, {.period_ms = 100}, 20);
  ASSERT_TRUE(r.period_ms) << r.note;
  EXPECT_NEAR(*r.period_ms, 100, 20.0 / 4);  // one read interval over the 4 steps
  EXPECT_TRUE(r.resolved);
  EXPECT_EQ(r.steps, 4);
  EXPECT_EQ(r.failed_reads, 0);
  // Five changes: the first seen at 20 ms, the last at 420 ms.
  EXPECT_EQ(r.reads, 22);
  EXPECT_NEAR(r.seconds, 0.42, 1e-9);
  EXPECT_NE(r.note.find("moved every 100.0 ms"), std::string::npos) << r.note;
}

TEST(energy_probe, learns_a_20_ms_counter_read_every_5_ms) {
  energy_period_probe probe;
  const auto r = run(probe, {.period_ms = 20, .phase_ms = 3}, 5);
  ASSERT_TRUE(r.period_ms) << r.note;
  EXPECT_NEAR(*r.period_ms, 20, 5.0 / 4);
  EXPECT_TRUE(r.resolved);
}

TEST(energy_probe, a_counter_as_fast_as_the_reads_is_bounded_by_their_interval) {
  energy_period_probe probe;
  const auto r = run(probe, {.period_ms = 20}, 20);
  ASSERT_TRUE(r.period_ms) << r.note;
  EXPECT_FALSE(r.resolved);  // every read saw a new value: at most 20 ms
  EXPECT_NEAR(*r.period_ms, 20, 1e-9);
  EXPECT_NE(r.note.find("every <= 20.0 ms"), std::string::npos) << r.note;
}

TEST(energy_probe, a_counter_that_never_moves_teaches_nothing_within_the_time_bound) {
  energy_period_probe probe;  // 1000 ms, 100 reads
  const auto r = run(probe, {.period_ms = 0}, 20);
  EXPECT_FALSE(r.period_ms);
  EXPECT_EQ(r.reads, 51);  // 0, 20, ..., 1000 ms
  EXPECT_LE(r.seconds, 1.0);
  EXPECT_NE(r.note.find("did not move"), std::string::npos) << r.note;
  EXPECT_NE(r.note.find("not learned"), std::string::npos) << r.note;
}

TEST(energy_probe, its_reads_are_bounded_too) {
  energy_period_probe probe(
      {.steps = 4, .max_time = std::chrono::milliseconds(1000), .max_reads = 30});
  const auto r = run(probe, {.period_ms = 0}, 1);
  EXPECT_FALSE(r.period_ms);
  EXPECT_EQ(r.reads, 30);
  EXPECT_NEAR(r.seconds, 0.029, 1e-9);
}

TEST(energy_probe, a_counter_slower_than_its_time_says_how_far_it_got) {
  energy_period_probe probe;
  const auto r = run(probe, {.period_ms = 400}, 20);
  EXPECT_FALSE(r.period_ms);
  EXPECT_NE(r.note.find("moved 3 times, 5 changes timed were needed"), std::string::npos) << r.note;
}

TEST(energy_probe, reads_that_all_fail_teach_nothing) {
  energy_period_probe probe;
  const auto r = run(probe, {.period_ms = 100}, 20, [](int) { return true; });
  EXPECT_FALSE(r.period_ms);
  EXPECT_EQ(r.failed_reads, r.reads);
  EXPECT_NE(r.note.find("every read of the energy counter failed"), std::string::npos) << r.note;
}

TEST(energy_probe, some_failed_reads_only_make_the_period_longer) {
  // Every third read fails, the first change's read among them: the period is never short.
  energy_period_probe probe;
  const auto r = run(probe, {.period_ms = 100}, 20, [](int k) { return k % 3 == 1; });
  ASSERT_TRUE(r.period_ms) << r.note;
  EXPECT_GE(*r.period_ms, 100 - 1e-9);
  EXPECT_LE(*r.period_ms, 100 + 2 * 20.0 / 4);
  EXPECT_GT(r.failed_reads, 0);
  EXPECT_NE(r.note.find("failed"), std::string::npos) << r.note;
}

TEST(energy_probe, a_counter_that_goes_back_restarts_the_timing) {
  energy_period_probe probe;
  const counter c{.period_ms = 100};
  // Two changes, then the counter drops (a driver reload) and moves on from there.
  for (int k = 0; k <= 12; ++k) {
    (void)probe.add(k * 20 * ms, reading<std::uint64_t>::of(c.at(k * 20 * ms)));
  }
  std::int64_t t = 13 * 20 * ms;
  for (; !probe.done(); t += 20 * ms) {
    (void)probe.add(t, reading<std::uint64_t>::of(c.at(t) - 500'000));
  }
  ASSERT_TRUE(probe.result().period_ms) << probe.result().note;
  EXPECT_NEAR(*probe.result().period_ms, 100, 5);
  EXPECT_GT(t, 13 * 20 * ms + 400 * ms);  // five changes after the drop
}

TEST(energy_probe, a_gpu_without_the_counter_ends_it_at_once) {
  energy_period_probe probe;
  EXPECT_TRUE(probe.add(0, reading<std::uint64_t>::unsupported()));
  EXPECT_FALSE(probe.result().period_ms);
  EXPECT_EQ(probe.result().reads, 1);
  EXPECT_NE(probe.result().note.find("does not report"), std::string::npos);
}

TEST(energy_probe, options_are_checked) {
  EXPECT_THROW(energy_period_probe({.steps = 0}), invalid_argument);
  EXPECT_THROW(energy_period_probe({.max_time = std::chrono::milliseconds(0)}), invalid_argument);
  EXPECT_THROW(energy_period_probe({.max_reads = 1}), invalid_argument);
  EXPECT_NO_THROW(energy_period_probe({.steps = 1, .max_reads = 2}));
}

}  // namespace
}  // namespace coolbench::telemetry
