#include "coolbench/telemetry/sampler.hpp"

#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "coolbench/core/clock.hpp"
#include "coolbench/core/error.hpp"

namespace coolbench::telemetry {
namespace {

using namespace std::chrono_literals;

/// Counts its reads; throws on every `fail_every`-th; can take `delay` per read.
class scripted_source final : public sample_source {
 public:
  explicit scripted_source(std::atomic<int>& reads, int fail_every = 0,
                           std::chrono::milliseconds delay = 0ms)
      : m_reads(reads), m_fail_every(fail_every), m_delay(delay) {}

  gpu_sample read(read_scope scope) override {
    const int n = ++m_reads;
    gpu_sample s;
    s.time_ns = steady_now_ns();
    s.energy_mj = scope == read_scope::all
                      ? reading<std::uint64_t>::of(1000U * static_cast<unsigned>(n))
                      : reading<std::uint64_t>::skipped();
    s.reason_counters.hw_thermal_ns = scope != read_scope::fast
                                          ? reading<std::uint64_t>::of(static_cast<unsigned>(n))
                                          : reading<std::uint64_t>::skipped();
    if (m_delay > 0ms) std::this_thread::sleep_for(m_delay);
    if (m_fail_every > 0 && n % m_fail_every == 0)
      throw std::runtime_error("sensor hiccup " + std::to_string(n));
    s.temp_gpu_c = reading<int>::of(n);
    s.clock_sm_mhz = reading<unsigned>::of(1980);
    return s;
  }

 private:
  std::atomic<int>& m_reads;
  int m_fail_every;
  std::chrono::milliseconds m_delay;
};

std::unique_ptr<sample_source> source(std::atomic<int>& reads, int fail_every = 0,
                                      std::chrono::milliseconds delay = 0ms) {
  return std::make_unique<scripted_source>(reads, fail_every, delay);
}

TEST(sampler, period_must_be_1_to_1000_ms) {
  std::atomic<int> reads{0};
  EXPECT_THROW(sampler(source(reads), {.period = 0ms}), invalid_argument);
  EXPECT_THROW(sampler(source(reads), {.period = 1001ms}), invalid_argument);
  EXPECT_THROW(sampler(source(reads), {.period = 50ms, .capacity = 0}), invalid_argument);
  EXPECT_THROW(sampler(nullptr), invalid_argument);
  EXPECT_NO_THROW(sampler(source(reads), {.period = 1ms}));
  EXPECT_NO_THROW(sampler(source(reads), {.period = 1000ms}));
  EXPECT_EQ(sampler(source(reads)).options().period, 50ms);  // the documented default
}

/// Checks one costly tier in `samples`: read on the first sample, then never
/// sooner than `period` after its last read by time stamps, and not left out
/// when due (at most `late` after). Returns how many samples read it.
template <class Read>
std::size_t check_tier(const std::vector<gpu_sample>& samples, Read was_read,
                       std::chrono::nanoseconds period, std::chrono::nanoseconds late,
                       const char* tier) {
  EXPECT_TRUE(was_read(samples.front())) << tier << ": the first tick reads everything";
  std::int64_t last_ns = samples.front().time_ns;
  std::size_t count = 1;
  for (std::size_t i = 1; i < samples.size(); ++i) {
    const std::int64_t since_last = samples[i].time_ns - last_ns;
    if (was_read(samples[i])) {
      EXPECT_GE(since_last, period.count()) << tier << " " << i;  // anchored on time stamps
      last_ns = samples[i].time_ns;
      ++count;
    } else {
      EXPECT_LT(since_last, (period + late).count()) << tier << " " << i;
    }
  }
  return count;
}

bool counters_read(const gpu_sample& s) { return s.reason_counters.hw_thermal_ns.ok(); }
bool energy_read(const gpu_sample& s) { return s.energy_mj.ok(); }

TEST(sampler, slow_and_energy_periods_are_validated) {
  std::atomic<int> reads{0};
  EXPECT_THROW(sampler(source(reads), {.slow_period = 60001ms}), invalid_argument);
  EXPECT_THROW(sampler(source(reads), {.slow_period = -1ms}), invalid_argument);
  EXPECT_THROW(sampler(source(reads), {.slow_period = 200ms, .energy_period = 199ms}),
               invalid_argument);
  EXPECT_THROW(sampler(source(reads), {.slow_period = 0ms, .energy_period = -1ms}),
               invalid_argument);
  EXPECT_THROW(sampler(source(reads), {.energy_period = 60001ms}), invalid_argument);
  EXPECT_NO_THROW(sampler(source(reads), {.slow_period = 200ms, .energy_period = 200ms}));
  EXPECT_NO_THROW(sampler(source(reads), {.slow_period = 0ms, .energy_period = 0ms}));
  EXPECT_NO_THROW(sampler(source(reads), {.slow_period = 60000ms, .energy_period = 60000ms}));
  EXPECT_EQ(sampler(source(reads)).options().energy_period, 1000ms);  // the documented default
}

TEST(sampler, each_costly_tier_is_read_at_its_own_period) {
  std::atomic<int> reads{0};
  sampler s(source(reads), {.period = 5ms, .slow_period = 30ms, .energy_period = 150ms});
  s.start();
  std::this_thread::sleep_for(620ms);
  s.stop();
  const auto samples = s.since(0);
  ASSERT_GE(samples.size(), 60U);
  // Not left out when due: a reading comes at most a tick after the due time,
  // plus scheduling delay (loaded CI cores, ThreadSanitizer); energy waits for
  // a counters tick, up to a slow period more.
  const std::size_t counters = check_tier(samples, counters_read, 30ms, 5ms + 15ms, "counters");
  const std::size_t energy = check_tier(samples, energy_read, 150ms, 30ms + 5ms + 15ms, "energy");
  EXPECT_GE(counters, 12U);
  EXPECT_LE(counters, 21U);
  EXPECT_GE(energy, 3U);
  EXPECT_LE(energy, 5U);
  for (const auto& sample : samples) {
    // Energy comes only with the counters; a fast tick skips both.
    if (energy_read(sample)) {
      EXPECT_TRUE(counters_read(sample));
    }
    if (!counters_read(sample)) {
      EXPECT_EQ(sample.reason_counters.hw_thermal_ns.status, reading_status::skipped);
      EXPECT_EQ(sample.energy_mj.status, reading_status::skipped);
    }
  }
}

TEST(sampler, late_time_stamps_keep_each_tier_apart) {
  // Every read takes 7 ms and stamps its start: the grid slips, and a tier due
  // by the tick's start may not be due by the last reading's stamp.
  std::atomic<int> reads{0};
  sampler s(source(reads, 0, 7ms), {.period = 4ms, .slow_period = 20ms, .energy_period = 45ms});
  s.start();
  std::this_thread::sleep_for(400ms);
  s.stop();
  const auto samples = s.since(0);
  ASSERT_GE(samples.size(), 20U);
  EXPECT_GE(check_tier(samples, counters_read, 20ms, 8ms + 7ms + 15ms, "counters"), 6U);
  EXPECT_GE(check_tier(samples, energy_read, 45ms, 28ms + 7ms + 15ms, "energy"), 3U);
}

TEST(sampler, zero_periods_read_everything_every_tick) {
  std::atomic<int> every_reads{0};
  sampler every(source(every_reads), {.period = 2ms, .slow_period = 0ms, .energy_period = 0ms});
  every.start();
  while (every_reads.load() < 5) std::this_thread::sleep_for(1ms);
  every.stop();
  for (const auto& sample : every.since(0)) EXPECT_TRUE(energy_read(sample));

  std::atomic<int> reads{0};
  sampler counters(source(reads), {.period = 2ms, .slow_period = 0ms});
  counters.start();
  while (reads.load() < 5) std::this_thread::sleep_for(1ms);
  counters.stop();
  const auto samples = counters.since(0);
  for (const auto& sample : samples) EXPECT_TRUE(counters_read(sample));
  EXPECT_EQ(std::count_if(samples.begin(), samples.end(), energy_read), 1);  // the first tick
}

/// An energy counter that moves every `period` of the steady clock (0: never), read by scope.
class counter_source final : public sample_source {
 public:
  explicit counter_source(std::chrono::milliseconds period) : m_period(period) {}
  gpu_sample read(read_scope scope) override {
    gpu_sample s;
    s.time_ns = steady_now_ns();
    const std::int64_t period_ns = std::chrono::nanoseconds(m_period).count();
    s.energy_mj = scope == read_scope::all
                      ? reading<std::uint64_t>::of(
                            period_ns > 0 ? static_cast<std::uint64_t>(s.time_ns / period_ns) : 7)
                      : reading<std::uint64_t>::skipped();
    s.reason_counters.hw_thermal_ns = scope != read_scope::fast ? reading<std::uint64_t>::of(1)
                                                                : reading<std::uint64_t>::skipped();
    return s;
  }

 private:
  std::chrono::milliseconds m_period;
};

TEST(sampler, the_energy_probe_reads_every_tick_until_it_learns_then_energy_keeps_its_period) {
  sampler s(std::make_unique<counter_source>(20ms),
            {.period = 5ms,
             .slow_period = 30ms,
             .energy_period = 150ms,
             .energy_probe = energy_probe_options{.steps = 4}});
  EXPECT_FALSE(s.energy_probe());
  s.start();
  const auto probe = s.energy_probe(3000ms);
  ASSERT_TRUE(probe);
  ASSERT_TRUE(probe->period_ms) << probe->note;
  // Each change is placed up to a tick late (more on a loaded CI machine): the mean of 4 steps.
  EXPECT_NEAR(*probe->period_ms, 20, 6) << probe->note;
  EXPECT_GE(probe->reads, 5);
  EXPECT_LE(probe->seconds, 0.5);
  std::this_thread::sleep_for(500ms);
  s.stop();
  const auto samples = s.since(0);
  // The probe's reads: the first ticks, every one with energy; then energy at its own period.
  const auto probing = static_cast<std::size_t>(probe->reads);
  ASSERT_GT(samples.size(), probing + 40);
  for (std::size_t i = 0; i < probing; ++i) EXPECT_TRUE(energy_read(samples[i])) << i;
  const std::vector<gpu_sample> after(samples.begin() + static_cast<std::ptrdiff_t>(probing) - 1,
                                      samples.end());
  EXPECT_LE(check_tier(after, energy_read, 150ms, 30ms + 5ms + 15ms, "energy"), 5U);
  EXPECT_EQ(s.energy_probe()->period_ms, probe->period_ms);  // kept
}

TEST(sampler, a_probe_that_learns_nothing_ends_at_its_bound) {
  sampler s(
      std::make_unique<counter_source>(0ms),
      {.period = 5ms, .energy_probe = energy_probe_options{.max_time = 1000ms, .max_reads = 20}});
  s.start();
  const auto probe = s.energy_probe(3000ms);
  s.stop();
  ASSERT_TRUE(probe);
  EXPECT_FALSE(probe->period_ms);
  EXPECT_EQ(probe->reads, 20);
  EXPECT_NE(probe->note.find("did not move"), std::string::npos) << probe->note;
}

TEST(sampler, a_probe_cut_short_by_stop_starts_over) {
  sampler s(std::make_unique<counter_source>(0ms),
            {.period = 5ms, .energy_probe = energy_probe_options{.max_time = 150ms}});
  s.start();
  s.stop();  // at once: the probe has not finished
  EXPECT_FALSE(s.energy_probe());
  s.start();
  const auto probe = s.energy_probe(3000ms);
  s.stop();
  ASSERT_TRUE(probe);
  EXPECT_FALSE(probe->period_ms);
  EXPECT_THROW(sampler(std::make_unique<counter_source>(0ms),
                       {.energy_probe = energy_probe_options{.steps = 0}}),
               invalid_argument);
}

TEST(sampler, first_sample_is_taken_at_start) {
  std::atomic<int> reads{0};
  sampler s(source(reads), {.period = 1000ms});
  EXPECT_EQ(s.latest(), nullptr);
  s.start();
  const auto deadline = steady_clock::now() + 500ms;
  while (s.latest() == nullptr && steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  ASSERT_NE(s.latest(), nullptr);
  EXPECT_EQ(s.latest()->temp_gpu_c.value, 1);
}

TEST(sampler, keeps_its_period_without_drift) {
  std::atomic<int> reads{0};
  sampler s(source(reads), {.period = 10ms});
  const std::int64_t start = steady_now_ns();
  s.start();
  std::this_thread::sleep_for(400ms);
  s.stop();
  const auto samples = s.since(start - 1);
  // 41 ticks fit in 400 ms; a loaded 2-core CI machine may lose some (the sampler then skips
  // to the next tick of its grid rather than bunching reads).
  ASSERT_GE(samples.size(), 20U);
  EXPECT_LE(samples.size(), 42U);
  std::vector<std::int64_t> gaps;
  for (std::size_t i = 1; i < samples.size(); ++i)
    gaps.push_back(samples[i].time_ns - samples[i - 1].time_ns);
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2),
                   gaps.end());
  const double median_ms = static_cast<double>(gaps[gaps.size() / 2]) / 1e6;
  EXPECT_NEAR(median_ms, 10.0, 1.5);
  // Ticks sit on a grid from the first one: each sample's lateness behind its grid point stays
  // the same through the run. A sampler that slept a period after each read would fall behind by
  // its wake-up latency every tick (0.05-0.2 ms; 2-8 ms over 40 ticks). Medians, because a
  // loaded machine wakes a few ticks late.
  const std::int64_t period_ns = 10'000'000;
  const std::int64_t t0 = samples.front().time_ns;
  std::vector<double> lateness_ms;
  for (const auto& sample : samples) {
    const std::int64_t offset = sample.time_ns - t0;
    const std::int64_t tick = (offset + period_ns / 2) / period_ns;
    lateness_ms.push_back(static_cast<double>(offset - tick * period_ns) / 1e6);
  }
  const auto median_of = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  const std::size_t quarter = lateness_ms.size() / 4;
  const double early = median_of({lateness_ms.begin(), lateness_ms.begin() + quarter});
  const double late = median_of({lateness_ms.end() - quarter, lateness_ms.end()});
  EXPECT_LT(std::abs(late - early), 1.5) << "first quarter " << early << " ms behind the grid, "
                                         << "last quarter " << late << " ms";
}

TEST(sampler, stop_does_not_wait_out_the_period) {
  std::atomic<int> reads{0};
  sampler s(source(reads), {.period = 1000ms});
  s.start();
  std::this_thread::sleep_for(20ms);
  const auto before = steady_clock::now();
  s.stop();
  EXPECT_LT(steady_clock::now() - before, 200ms);
  EXPECT_FALSE(s.running());
  EXPECT_EQ(reads.load(), 1);
}

TEST(sampler, a_failed_read_is_recorded_as_missing_and_sampling_goes_on) {
  std::atomic<int> reads{0};
  sampler s(source(reads, /*fail_every=*/3), {.period = 2ms});
  s.start();
  while (reads.load() < 10) std::this_thread::sleep_for(1ms);
  s.stop();
  const auto samples = s.since(0);
  const auto stats = s.stats();
  ASSERT_EQ(samples.size(), stats.samples);
  std::size_t missing = 0;
  for (const auto& sample : samples) {
    if (sample.temp_gpu_c.status == reading_status::failed) {
      ++missing;
      EXPECT_EQ(sample.clock_sm_mhz.status, reading_status::failed);
      EXPECT_EQ(sample.power_w.status, reading_status::failed);
      EXPECT_EQ(sample.reason_counters.hw_thermal_ns.status, reading_status::failed);
      EXPECT_GT(sample.time_ns, 0);
    } else {
      EXPECT_TRUE(sample.temp_gpu_c.ok());
      EXPECT_NE(sample.temp_gpu_c.value % 3, 0);
    }
  }
  EXPECT_EQ(missing, stats.failed_reads);
  EXPECT_GE(missing, 3U);
  EXPECT_NE(stats.last_error.find("sensor hiccup"), std::string::npos);
}

TEST(sampler, between_returns_the_samples_inside_the_window) {
  std::atomic<int> reads{0};
  sampler s(source(reads), {.period = 5ms});
  s.start();
  std::this_thread::sleep_for(100ms);
  s.stop();
  const auto all = s.since(0);
  ASSERT_GE(all.size(), 6U);
  const std::int64_t from = all[2].time_ns;
  const std::int64_t to = all[4].time_ns;
  const auto window = s.between(from, to);
  ASSERT_EQ(window.size(), 3U);
  EXPECT_EQ(window.front().time_ns, from);
  EXPECT_EQ(window.back().time_ns, to);
  EXPECT_EQ(s.since(all[4].time_ns).size(), all.size() - 5);
  EXPECT_TRUE(s.between(to, from).empty());
  EXPECT_TRUE(s.since(all.back().time_ns).empty());
}

TEST(sampler, a_full_buffer_drops_the_oldest) {
  std::atomic<int> reads{0};
  sampler s(source(reads), {.period = 1ms, .capacity = 5});
  s.start();
  while (reads.load() < 20) std::this_thread::sleep_for(1ms);
  s.stop();
  const auto kept = s.since(0);
  const auto stats = s.stats();
  EXPECT_EQ(kept.size(), 5U);
  EXPECT_EQ(stats.dropped, stats.samples - 5);
  EXPECT_EQ(kept.back().temp_gpu_c.value, static_cast<int>(stats.samples));
}

TEST(sampler, a_slow_read_skips_ticks_and_counts_them) {
  std::atomic<int> reads{0};
  sampler s(source(reads, 0, /*delay=*/25ms), {.period = 10ms});
  s.start();
  std::this_thread::sleep_for(200ms);
  s.stop();
  const auto stats = s.stats();
  EXPECT_GT(stats.late_ticks, 0U);
  EXPECT_LE(stats.samples, 10U);  // 25 ms reads on a 10 ms grid: one read per 30 ms
}

/// A read that uses `cpu` of its thread's CPU time (spinning on that clock, so a busy machine
/// only makes it take longer), or sleeps `sleep` without using any.
class cpu_source final : public sample_source {
 public:
  /// `only`: spends the CPU on reads of that scope alone.
  cpu_source(std::chrono::nanoseconds cpu, std::chrono::milliseconds sleep,
             std::optional<read_scope> only = std::nullopt)
      : m_cpu(cpu), m_sleep(sleep), m_only(only) {}
  gpu_sample read(read_scope scope) override {
    if (m_cpu.count() > 0 && (!m_only || *m_only == scope)) {
      const auto start = thread_cpu();
      while (thread_cpu() - start < m_cpu) {
      }
    }
    if (m_sleep > 0ms) std::this_thread::sleep_for(m_sleep);
    gpu_sample s;
    s.time_ns = steady_now_ns();
    return s;
  }

 private:
  static std::chrono::nanoseconds thread_cpu() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
  }
  std::chrono::nanoseconds m_cpu;
  std::chrono::milliseconds m_sleep;
  std::optional<read_scope> m_only;
};

TEST(sampler, counts_its_threads_cpu_time_and_not_its_waits) {
  sampler busy(std::make_unique<cpu_source>(2ms, 0ms), {.period = 10ms});
  busy.start();
  std::this_thread::sleep_for(150ms);
  busy.stop();
  const auto b = busy.stats();
  ASSERT_GT(b.samples, 2U);
  // Every read used 2 ms of the thread's CPU; the waits between ticks add a little.
  EXPECT_GE(b.thread_cpu_ns, b.samples * 2'000'000U);
  EXPECT_LT(b.thread_cpu_ns, b.samples * 2'000'000U + 100'000'000U);

  sampler idle(std::make_unique<cpu_source>(0ns, 5ms), {.period = 10ms});
  idle.start();
  std::this_thread::sleep_for(150ms);
  idle.stop();
  const auto i = idle.stats();
  ASSERT_GT(i.samples, 2U);
  // Each read slept 5 ms: far less CPU than the reads' wall time.
  EXPECT_LT(i.thread_cpu_ns, i.samples * 1'000'000U);

  // A restart adds to the count.
  busy.start();
  std::this_thread::sleep_for(50ms);
  busy.stop();
  EXPECT_GE(busy.stats().thread_cpu_ns, b.thread_cpu_ns + 2'000'000U);
}

TEST(sampler, splits_its_cpu_time_by_read_scope) {
  // 3 ms of CPU on a full read, none on the others.
  sampler s(std::make_unique<cpu_source>(3ms, 0ms, read_scope::all),
            {.period = 10ms, .slow_period = 40ms, .energy_period = 40ms});
  s.start();
  std::this_thread::sleep_for(200ms);
  s.stop();
  const auto st = s.stats();
  const auto all = static_cast<std::size_t>(read_scope::all);
  const auto fast = static_cast<std::size_t>(read_scope::fast);
  const auto counters = static_cast<std::size_t>(read_scope::counters);
  ASSERT_GE(st.reads[all], 2U);
  ASSERT_GE(st.reads[fast], 2U);
  EXPECT_EQ(st.reads[counters], 0U);  // the energy period is the counters' own
  EXPECT_EQ(st.reads[all] + st.reads[fast], st.samples);
  EXPECT_GE(st.read_cpu_ns[all], st.reads[all] * 3'000'000U);
  EXPECT_LT(st.read_cpu_ns[fast], st.reads[fast] * 500'000U);
  EXPECT_LE(st.read_cpu_ns[all] + st.read_cpu_ns[fast], st.thread_cpu_ns);
}

TEST(sampler, readers_in_other_threads_and_restart) {
  std::atomic<int> reads{0};
  sampler s(source(reads), {.period = 1ms});
  s.start();
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done) {
      if (auto latest = s.latest()) {
        EXPECT_TRUE(latest->temp_gpu_c.ok());
      }
      (void)s.since(steady_now_ns() - 5'000'000);
    }
  });
  std::this_thread::sleep_for(50ms);
  s.stop();
  const auto first_run = s.stats().samples;
  s.start();
  std::this_thread::sleep_for(20ms);
  s.stop();
  done = true;
  reader.join();
  EXPECT_GT(s.stats().samples, first_run);
}

}  // namespace
}  // namespace coolbench::telemetry
