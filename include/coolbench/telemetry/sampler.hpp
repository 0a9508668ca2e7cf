/// @file
/// A thread that reads a GPU at a fixed period into a bounded ring buffer.
/// The measurement layer joins its samples with latency samples by time.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coolbench/telemetry/energy_probe.hpp"
#include "coolbench/telemetry/gpu.hpp"

namespace coolbench::telemetry {

/// Where the sampler's readings come from: a GPU through NVML, or a scripted
/// source in tests.
class sample_source {
 public:
  virtual ~sample_source() = default;
  /// One reading of `scope`. May throw; the sampler then records a sample
  /// whose readings are all `failed` and goes on.
  [[nodiscard]] virtual gpu_sample read(read_scope scope) = 0;
};

/// A sample_source over a gpu_telemetry.
[[nodiscard]] std::unique_ptr<sample_source> make_gpu_source(int cuda_ordinal);

struct sampler_options {
  std::chrono::milliseconds period{50};  ///< 1 to 1000 ms
  /// The HW thermal and power-brake time counters (read_scope::counters) are
  /// read on the first tick and then on the first tick at least this long
  /// after their last read by time stamps; other samples hold them as
  /// `skipped`. 0 reads them every tick. At most 60 s.
  std::chrono::milliseconds slow_period{1000};
  /// The same for the energy counter (read_scope::all), the dearest reading.
  /// It is read only on a tick that also reads the counters, so it may come up
  /// to one slow_period after it is due. slow_period to 60000 ms.
  std::chrono::milliseconds energy_period{1000};
  /// When set, the sampler first learns how often the energy counter moves:
  /// every tick reads read_scope::all and feeds an energy_period_probe until
  /// it is done (at most its max_time or max_reads), and then the periods
  /// above apply. energy_probe() gives what it learned. The probe resolves a
  /// period down to about `period`; a faster counter is bounded by it.
  std::optional<energy_probe_options> energy_probe{};
  std::size_t capacity = 65536;  ///< samples kept (about 55 min at 50 ms)
};

/// Counters of the sampler's own behaviour.
struct sampler_stats {
  std::uint64_t samples = 0;       ///< taken since start
  std::uint64_t failed_reads = 0;  ///< reads that threw: recorded as missing
  std::uint64_t late_ticks = 0;    ///< ticks skipped because a read outran the period
  std::uint64_t dropped = 0;       ///< overwritten in the ring buffer
  std::string last_error;          ///< message of the last failed read
  /// CPU time the sampling thread has used, over every start (its own clock, so other threads
  /// of the process are not counted: the NVML reads and the sampler's bookkeeping). 0 where
  /// the system has no per-thread CPU clock.
  std::uint64_t thread_cpu_ns = 0;
  /// Of that, the reads' own CPU time and how many there were, by scope (indexed by
  /// read_scope: all, fast, counters); the rest of thread_cpu_ns is the thread's bookkeeping
  /// and wake-ups. Where a read costs lies in the driver (docs/perf/ci.md, "The protocol's own
  /// cost"): this says which tier a setting pays for.
  std::array<std::uint64_t, 3> read_cpu_ns{};
  std::array<std::uint64_t, 3> reads{};
};

class sampler {
 public:
  /// Throws invalid_argument when the period is outside 1–1000 ms, the slow
  /// or energy period or the probe's options outside their ranges (see
  /// sampler_options, energy_probe_options) or the capacity is 0.
  sampler(std::unique_ptr<sample_source> source, sampler_options options = {});
  ~sampler();  ///< stops the thread
  sampler(const sampler&) = delete;
  sampler& operator=(const sampler&) = delete;
  sampler(sampler&&) = delete;
  sampler& operator=(sampler&&) = delete;

  /// Starts the thread; the first sample is taken at once. No-op if running.
  void start();
  /// Stops and joins the thread, promptly (it does not wait out a period).
  void stop();
  [[nodiscard]] bool running() const noexcept;

  /// The newest sample, or nullptr before the first. Cheap: it shares the
  /// sample, and a reader holds the sampler up for a pointer copy at most.
  [[nodiscard]] std::shared_ptr<const gpu_sample> latest() const;

  /// Samples with from_ns <= time_ns <= to_ns, oldest first.
  [[nodiscard]] std::vector<gpu_sample> between(std::int64_t from_ns, std::int64_t to_ns) const;

  /// Samples with time_ns > after_ns, oldest first.
  [[nodiscard]] std::vector<gpu_sample> since(std::int64_t after_ns) const;

  /// What the start-up energy probe learned (sampler_options::energy_probe),
  /// waiting up to `wait` for it to finish; empty when no probe was asked for
  /// or it has not finished (the sampler was stopped first, or `wait` ran out).
  [[nodiscard]] std::optional<energy_probe_result> energy_probe(
      std::chrono::milliseconds wait = std::chrono::milliseconds(0)) const;

  [[nodiscard]] sampler_stats stats() const;
  [[nodiscard]] const sampler_options& options() const noexcept;

 private:
  struct state;
  std::unique_ptr<state> m_state;
};

}  // namespace coolbench::telemetry
