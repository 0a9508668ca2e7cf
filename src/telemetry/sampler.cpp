#include "coolbench/telemetry/sampler.hpp"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <thread>

#include "coolbench/core/clock.hpp"
#include "coolbench/core/error.hpp"
#include "coolbench/telemetry/ring_buffer.hpp"

namespace coolbench::telemetry {
namespace {

/// CPU time of the calling thread in ns, 0 where there is no such clock.
std::uint64_t thread_cpu_now_ns() noexcept {
  timespec t{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return 0;
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000ULL +
         static_cast<std::uint64_t>(t.tv_nsec);
}

class gpu_source final : public sample_source {
 public:
  explicit gpu_source(int cuda_ordinal) : m_gpu(cuda_ordinal) {}
  gpu_sample read(read_scope scope) override { return m_gpu.read(scope); }

 private:
  gpu_telemetry m_gpu;
};

/// The sample recorded when a read throws: its time, every reading failed.
gpu_sample missing_sample(std::int64_t time_ns) {
  gpu_sample s;
  s.time_ns = time_ns;
  for (auto* r : {&s.temp_gpu_c, &s.temp_mem_c, &s.pstate}) *r = reading<int>::failed();
  for (auto* r : {&s.clock_sm_mhz, &s.clock_mem_mhz, &s.clock_graphics_mhz, &s.util_gpu_pct,
                  &s.util_mem_pct}) {
    *r = reading<unsigned>::failed();
  }
  for (auto* r : {&s.power_w, &s.power_avg_w}) *r = reading<double>::failed();
  for (auto* r :
       {&s.energy_mj, &s.clock_reasons, &s.memory_used_bytes, &s.reason_counters.sw_power_cap_ns,
        &s.reason_counters.sync_boost_ns, &s.reason_counters.sw_thermal_ns,
        &s.reason_counters.hw_thermal_ns, &s.reason_counters.hw_power_brake_ns}) {
    *r = reading<std::uint64_t>::failed();
  }
  return s;
}

}  // namespace

std::unique_ptr<sample_source> make_gpu_source(int cuda_ordinal) {
  return std::make_unique<gpu_source>(cuda_ordinal);
}

struct sampler::state {
  std::unique_ptr<sample_source> source;
  sampler_options options;

  mutable std::mutex buffer_mutex;  // guards buffer and stats
  ring_buffer<gpu_sample> buffer;
  sampler_stats stats;
  // The newest sample, apart from the buffer so that readers of it contend
  // only for a pointer copy. (Not std::atomic<std::shared_ptr>: libstdc++ 12
  // builds it on a lock bit ThreadSanitizer cannot see, and it is no faster.)
  mutable std::mutex latest_mutex;
  std::shared_ptr<const gpu_sample> latest;

  std::mutex wake_mutex;  // guards stop_requested, for the timed wait
  std::condition_variable wake;
  bool stop_requested = false;
  std::thread thread;
  std::atomic<bool> running{false};

  state(std::unique_ptr<sample_source> s, sampler_options o)
      : source(std::move(s)), options(o), buffer(o.capacity) {}

  /// Index of the first buffered sample with time_ns >= t (size() if none).
  /// Call with buffer_mutex held.
  std::size_t first_at_or_after(std::int64_t t) const {
    std::size_t low = 0;
    std::size_t high = buffer.size();
    while (low < high) {
      const std::size_t mid = low + (high - low) / 2;
      if (buffer[mid].time_ns < t) {
        low = mid + 1;
      } else {
        high = mid;
      }
    }
    return low;
  }

  // When each costly tier was last read, by the later of the tick's start and
  // the reading's own time stamp.
  std::int64_t last_counters_ns = 0;
  std::int64_t last_energy_ns = 0;
  bool costly_read_done = false;

  // The start-up energy probe: driven by this thread while it runs; its
  // result is published under probe_mutex once done.
  std::optional<energy_period_probe> probe;
  mutable std::mutex probe_mutex;
  mutable std::condition_variable probe_done;
  std::optional<energy_probe_result> probe_result;

  bool probing() const { return probe && !probe->done(); }

  void feed_probe(const gpu_sample& sample) {
    if (!probe->add(sample.time_ns, sample.energy_mj)) return;
    {
      std::lock_guard lock(probe_mutex);
      probe_result = probe->result();
    }
    probe_done.notify_all();
  }

  static bool due(std::int64_t now_ns, std::int64_t last_ns, std::chrono::milliseconds period) {
    return now_ns - last_ns >= std::chrono::duration_cast<std::chrono::nanoseconds>(period).count();
  }

  /// The scope of the tick that starts at `now_ns`. Energy waits for a tick
  /// that reads the counters too, so neither tier is read early.
  read_scope scope_at(std::int64_t now_ns) const {
    if (!costly_read_done || probing()) return read_scope::all;
    if (!due(now_ns, last_counters_ns, options.slow_period)) return read_scope::fast;
    return due(now_ns, last_energy_ns, options.energy_period) ? read_scope::all
                                                              : read_scope::counters;
  }

  void take_one() {
    const std::int64_t started_ns = steady_now_ns();
    const read_scope scope = scope_at(started_ns);
    gpu_sample sample;
    std::string error;
    const std::uint64_t read_cpu_start = thread_cpu_now_ns();
    try {
      sample = source->read(scope);
    } catch (const std::exception& e) {
      sample = missing_sample(started_ns);
      error = e.what();
    }
    const std::uint64_t read_cpu_end = thread_cpu_now_ns();
    if (probing()) feed_probe(sample);
    if (scope != read_scope::fast) {
      // Anchored on the reading's own time stamp, so the costly readings a
      // consumer sees are at least their period apart by their time stamps,
      // however late the source stamped this one.
      const std::int64_t read_ns = std::max(started_ns, sample.time_ns);
      costly_read_done = true;
      last_counters_ns = read_ns;
      if (scope == read_scope::all) last_energy_ns = read_ns;
    }
    auto published = std::make_shared<const gpu_sample>(sample);
    {
      std::lock_guard lock(latest_mutex);
      latest.swap(published);
    }
    std::lock_guard lock(buffer_mutex);
    buffer.push(sample);
    ++stats.samples;
    const auto tier = static_cast<std::size_t>(scope);
    stats.read_cpu_ns[tier] += read_cpu_end >= read_cpu_start ? read_cpu_end - read_cpu_start : 0;
    ++stats.reads[tier];
    stats.dropped = buffer.dropped();
    if (!error.empty()) {
      ++stats.failed_reads;
      stats.last_error = std::move(error);
    }
  }

  void run() {
    // Ticks sit on a fixed grid from the start, so the period does not drift
    // with the time each read takes; a read that outruns its tick skips ahead.
    const auto period = options.period;
    auto next = steady_clock::now();
    std::uint64_t cpu_before = 0;  // of earlier starts
    {
      std::lock_guard stats_lock(buffer_mutex);
      cpu_before = stats.thread_cpu_ns;
    }
    const std::uint64_t cpu_start = thread_cpu_now_ns();
    std::unique_lock lock(wake_mutex);
    while (!stop_requested) {
      lock.unlock();
      take_one();
      {
        const std::uint64_t cpu = thread_cpu_now_ns();
        std::lock_guard stats_lock(buffer_mutex);
        stats.thread_cpu_ns = cpu_before + (cpu >= cpu_start ? cpu - cpu_start : 0);
      }
      lock.lock();
      next += period;
      const auto now = steady_clock::now();
      if (next < now) {
        const auto behind = (now - next) / period + 1;
        next += behind * period;
        std::lock_guard stats_lock(buffer_mutex);
        stats.late_ticks += static_cast<std::uint64_t>(behind);
      }
      wake.wait_until(lock, next, [this] { return stop_requested; });
    }
  }
};

sampler::sampler(std::unique_ptr<sample_source> source, sampler_options options) {
  if (source == nullptr) throw invalid_argument("sampler needs a sample source");
  if (options.period < std::chrono::milliseconds(1) ||
      options.period > std::chrono::milliseconds(1000)) {
    throw invalid_argument("sampler period must be 1 to 1000 ms, got " +
                           std::to_string(options.period.count()) + " ms");
  }
  if (options.slow_period < std::chrono::milliseconds(0) ||
      options.slow_period > std::chrono::milliseconds(60000)) {
    throw invalid_argument("sampler slow period must be 0 to 60000 ms, got " +
                           std::to_string(options.slow_period.count()) + " ms");
  }
  if (options.energy_period < options.slow_period ||
      options.energy_period > std::chrono::milliseconds(60000)) {
    throw invalid_argument("sampler energy period must be from the slow period (" +
                           std::to_string(options.slow_period.count()) + " ms) to 60000 ms, got " +
                           std::to_string(options.energy_period.count()) + " ms");
  }
  if (options.capacity == 0) throw invalid_argument("sampler capacity must be at least 1 sample");
  if (options.energy_probe) (void)energy_period_probe(*options.energy_probe);  // validates
  m_state = std::make_unique<state>(std::move(source), options);
}

sampler::~sampler() { stop(); }

void sampler::start() {
  auto& s = *m_state;
  if (s.thread.joinable()) return;
  {
    std::lock_guard lock(s.wake_mutex);
    s.stop_requested = false;
  }
  s.costly_read_done = false;
  // A probe cut short by stop() starts over; a finished one is not repeated.
  if (s.options.energy_probe && !s.probe_result) s.probe.emplace(*s.options.energy_probe);
  s.thread = std::thread([&s] { s.run(); });
  s.running = true;
}

void sampler::stop() {
  auto& s = *m_state;
  if (!s.thread.joinable()) return;
  {
    std::lock_guard lock(s.wake_mutex);
    s.stop_requested = true;
  }
  s.wake.notify_all();
  s.thread.join();
  s.running = false;
}

bool sampler::running() const noexcept { return m_state->running.load(); }

std::shared_ptr<const gpu_sample> sampler::latest() const {
  std::lock_guard lock(m_state->latest_mutex);
  return m_state->latest;
}

std::vector<gpu_sample> sampler::between(std::int64_t from_ns, std::int64_t to_ns) const {
  std::vector<gpu_sample> out;
  std::lock_guard lock(m_state->buffer_mutex);
  const auto& buffer = m_state->buffer;
  // Samples are in time order: find the first by bisection, not a scan.
  for (std::size_t i = m_state->first_at_or_after(from_ns); i < buffer.size(); ++i) {
    if (buffer[i].time_ns > to_ns) break;
    out.push_back(buffer[i]);
  }
  return out;
}

std::vector<gpu_sample> sampler::since(std::int64_t after_ns) const {
  return between(after_ns + 1, std::numeric_limits<std::int64_t>::max());
}

std::optional<energy_probe_result> sampler::energy_probe(std::chrono::milliseconds wait) const {
  const auto& s = *m_state;
  std::unique_lock lock(s.probe_mutex);
  if (!s.options.energy_probe) return std::nullopt;
  s.probe_done.wait_for(lock, wait, [&s] { return s.probe_result.has_value(); });
  return s.probe_result;
}

sampler_stats sampler::stats() const {
  std::lock_guard lock(m_state->buffer_mutex);
  return m_state->stats;
}

const sampler_options& sampler::options() const noexcept { return m_state->options; }

}  // namespace coolbench::telemetry
