/// @file
/// A GEMM heater: a power-bound GEMM chain run over and over in a background
/// thread, with its own lease, until stopped or for a duration. It exists to
/// pre-heat a GPU for a benchmark that runs in ANOTHER process (`coolbench
/// heat`): large GEMMs leave the SMs with a small L1 for the rest of the
/// context's life and slow later kernels by about 10% (docs/facts-h200.md §4), so
/// heating in the measuring process would distort what it measures.
///
///   coolbench::measure::heater heat(0);
///   heat.start();                   // returns once the first chain is ready
///   ... wait, read telemetry ...
///   const auto gemms = heat.stop(); // joins within one chain (a few ms)
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>

#include "coolbench/measure/workload.hpp"

namespace coolbench::measure {

/// bf16 8192x8192x8192, four per run: power-bound on an H200 (about 1.4 ms per
/// GEMM cold, the power cap within 60 ms; docs/facts-h200.md §2).
[[nodiscard]] inline gemm_chain_spec default_heater_chain() {
  return single_gemm_chain(gemm_dtype::bf16, 8192, 8192, 8192, 4);
}

/// Runs a GEMM chain on one GPU in a background thread. Not copyable or
/// movable; the destructor stops it.
class heater {
 public:
  /// Checks the spec (invalid_argument); touches no GPU yet.
  explicit heater(int device, gemm_chain_spec chain = default_heater_chain());
  ~heater();
  heater(const heater&) = delete;
  heater& operator=(const heater&) = delete;
  heater(heater&&) = delete;
  heater& operator=(heater&&) = delete;

  /// Starts the thread and waits until it has prepared the chain (lease,
  /// memory, handles) and issued its first run. Rethrows what preparing
  /// threw (not_available without a GPU, cuda_error when out of memory).
  /// Throws invalid_argument when started and not stopped since.
  void start();
  /// Asks the thread to stop, joins it (it finishes the chain it is in: a
  /// few milliseconds), and returns the GEMMs run since start(). The thread
  /// releases the chain and its lease before it ends, so the device can be
  /// released afterwards. Rethrows an error the thread met while running.
  /// Does nothing (returns the last count) when not running.
  std::uint64_t stop();
  /// start(), then stop() after `duration`, or earlier once `keep_going`
  /// (checked every 50 ms) returns false. Returns the GEMMs run.
  template <class Predicate>
  std::uint64_t run_for(std::chrono::steady_clock::duration duration, Predicate keep_going);
  std::uint64_t run_for(std::chrono::steady_clock::duration duration) {
    return run_for(duration, [] { return true; });
  }

  /// True from start() until stop(), or until the thread ended on an error
  /// (which stop() then rethrows).
  [[nodiscard]] bool running() const noexcept { return m_thread.joinable() && !m_finished.load(); }
  /// GEMMs completed since start() (updated after each chain).
  [[nodiscard]] std::uint64_t gemms() const noexcept { return m_gemms.load(); }
  /// Floating-point operations of one GEMM (the mean, when the chain has
  /// several shapes).
  [[nodiscard]] double flops_per_gemm() const noexcept;
  [[nodiscard]] const gemm_chain_spec& chain() const noexcept { return m_chain; }
  [[nodiscard]] int device() const noexcept { return m_device; }

 private:
  void loop();

  int m_device;
  gemm_chain_spec m_chain;
  std::thread m_thread;
  std::atomic<bool> m_stop{false};
  std::atomic<bool> m_finished{false};  // the thread has left its loop
  std::atomic<std::uint64_t> m_gemms{0};
  std::mutex m_mutex;
  std::condition_variable m_ready_cv;
  bool m_ready = false;          // guarded by m_mutex: first run issued, or failed
  std::exception_ptr m_failure;  // guarded by m_mutex
};

template <class Predicate>
std::uint64_t heater::run_for(std::chrono::steady_clock::duration duration, Predicate keep_going) {
  start();
  const auto end = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < end && keep_going() && !m_stop.load()) {
    const auto left = end - std::chrono::steady_clock::now();
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(left, std::chrono::milliseconds(50)));
  }
  return stop();
}

}  // namespace coolbench::measure
