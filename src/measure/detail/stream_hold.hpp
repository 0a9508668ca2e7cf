// Holding a stream while the host queues a sample's work. A chain of short
// kernels, timed with events on an idle stream, measures the host's launch
// rate rather than the GPU: on the H200, 4 fp16 GEMMs of GPT-2's QKV shape
// take ~5 us each on the GPU and as long again to launch, and the figure
// varied by 30% from one process to the next. With the stream held by a wait
// kernel until everything is queued, the events bracket GPU time alone.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

struct CUstream_st;

namespace coolbench::measure::detail {

/// The wait kernel's name as a profiler or kernel trace shows it: what marks
/// the start of each held sample in a trace (coolbench nodes --kernels).
inline constexpr const char* k_hold_kernel_name = "hold_kernel";

/// How long to hold a stream. A hold the host's queuing outlasts doubles (up
/// to `max_ns`) and the sample is redone; one more than shrink_factor times
/// the slowest queuing of the last queue_window samples halves (not below
/// the first hold): a context's first runs load their kernels (tens of ms)
/// and would otherwise leave every later sample holding the stream, and the
/// host waiting, that long.
class adaptive_hold {
 public:
  static constexpr std::size_t queue_window = 32;
  static constexpr std::uint64_t shrink_factor = 4;

  adaptive_hold(std::uint64_t first_ns, std::uint64_t max_ns)
      : m_first_ns(std::min(first_ns, max_ns)), m_max_ns(max_ns), m_ns(m_first_ns) {}

  [[nodiscard]] std::uint64_t ns() const { return m_ns; }
  [[nodiscard]] bool at_max() const { return m_ns >= m_max_ns; }
  /// Samples redone because the hold ended before everything was queued.
  [[nodiscard]] std::uint64_t short_holds() const { return m_short_holds; }

  /// The hold ended before `queued_ns` of queuing did: twice as long.
  void outlasted(std::uint64_t queued_ns) {
    record(queued_ns);
    m_ns = std::min(m_ns * 2, m_max_ns);
    ++m_short_holds;
  }

  /// A sample queued within its hold in `queued_ns`.
  void held(std::uint64_t queued_ns) {
    record(queued_ns);
    if (m_recorded < queue_window) return;
    const std::uint64_t slowest = *std::max_element(m_queued_ns.begin(), m_queued_ns.end());
    if (m_ns > shrink_factor * slowest && m_ns > m_first_ns) {
      m_ns = std::max(m_first_ns, m_ns / 2);
    }
  }

 private:
  void record(std::uint64_t queued_ns) { m_queued_ns[m_recorded++ % queue_window] = queued_ns; }

  std::uint64_t m_first_ns;
  std::uint64_t m_max_ns;
  std::uint64_t m_ns;
  std::uint64_t m_short_holds = 0;
  std::array<std::uint64_t, queue_window> m_queued_ns{};
  std::size_t m_recorded = 0;
};

/// Queues on `stream` a one-thread kernel that returns once the GPU's global
/// timer has advanced `nanoseconds` past its start. Throws cuda_error when
/// the launch fails.
void hold_stream(CUstream_st* stream, std::uint64_t nanoseconds);

}  // namespace coolbench::measure::detail
