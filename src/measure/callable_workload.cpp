// A workload that calls user code (the Python module's callables). On a GPU
// it is timed with two CUDA events recorded on the caller's stream around the
// call; the events are adopted by the device layer, so a device release
// destroys them and prepare() makes new ones in the new context. With the
// hold (the default), a wait kernel holds the stream while the callable
// queues its work, as the GEMM chain does (detail/stream_hold.hpp): the
// events then bracket GPU time, not the host's launch time; on the H200 a
// 1.4 ms PyTorch matmul timed without it read 1-3 % slow and varied by 1.4 %.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "coolbench/core/clock.hpp"
#include "coolbench/core/error.hpp"
#include "coolbench/measure/workload.hpp"

#ifdef COOLBENCH_MEASURE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "coolbench/device.hpp"
#include "core/cuda_check.hpp"
#include "measure/detail/owned_event.hpp"
#include "measure/detail/stream_hold.hpp"
#endif

namespace coolbench::measure {
namespace {

#ifdef COOLBENCH_MEASURE_HAVE_CUDA
// The first hold covers a few of PyTorch's launches (detail::adaptive_hold
// lengthens and shortens it from there).
constexpr std::uint64_t first_hold_ns = 50'000;
constexpr std::uint64_t max_hold_ns = 200'000'000;

/// Two events on the callable's stream, in the lease's context.
class event_timer {
 public:
  event_timer(int ordinal, std::uintptr_t stream, bool hold)
      : m_lease(device::device::get(ordinal).acquire()),
        // NOLINTNEXTLINE(performance-no-int-to-ptr): the caller's stream handle, as an integer
        m_stream(reinterpret_cast<cudaStream_t>(stream)),
        m_hold(hold
                   ? std::optional<detail::adaptive_hold>(std::in_place, first_hold_ns, max_hold_ns)
                   : std::nullopt) {
    m_start = detail::make_owned_event(m_lease);
    m_end = detail::make_owned_event(m_lease);
  }

  double time(const std::function<void()>& work) {
    for (;;) {
      const std::int64_t queue_start = steady_now_ns();
      if (m_hold) detail::hold_stream(m_stream, m_hold->ns());
      COOLBENCH_CUDA_CALL(cudaEventRecord(m_start.event, m_stream));
      work();
      COOLBENCH_CUDA_CALL(cudaEventRecord(m_end.event, m_stream));
      const auto queued = static_cast<std::uint64_t>(steady_now_ns() - queue_start);
      const cudaError_t started = cudaEventQuery(m_start.event);
      if (started != cudaErrorNotReady) COOLBENCH_CUDA_CALL(started);
      COOLBENCH_CUDA_CALL(cudaEventSynchronize(m_end.event));
      if (!m_hold) break;
      if (started == cudaErrorNotReady) {
        m_hold->held(queued);
        break;
      }
      // The hold ran out before the callable had queued everything: the
      // figure could hold launch gaps. Longer, and again.
      if (m_hold->at_max()) {
        throw invalid_argument(
            "the callable did not finish queuing its GPU work within a " +
            std::to_string(max_hold_ns / 1'000'000) +
            " ms hold of its stream: it waits for the GPU itself (a synchronize, .item(), a "
            "copy to the host) or its work goes to another stream. Measure it with hold "
            "off (Python: hold=False; the figure then includes the host's launch time), "
            "or pass the stream its work goes to");
      }
      m_hold->outlasted(queued);
    }
    float ms = 0;
    COOLBENCH_CUDA_CALL(cudaEventElapsedTime(&ms, m_start.event, m_end.event));
    return static_cast<double>(ms);
  }

 private:
  device::lease m_lease;
  cudaStream_t m_stream;
  std::optional<detail::adaptive_hold> m_hold;  ///< none: hold off
  detail::owned_event m_start;
  detail::owned_event m_end;
};
#endif

class callable_workload final : public workload {
 public:
  explicit callable_workload(callable_spec spec) : m_spec(std::move(spec)) {
    if (!m_spec.run) throw invalid_argument("a callable workload needs a function to run");
#ifndef COOLBENCH_MEASURE_HAVE_CUDA
    if (m_spec.device) {
      throw not_available("cannot time '" + m_spec.name + "' on GPU " +
                          std::to_string(*m_spec.device) +
                          ": this coolbench was built without CUDA (no nvcc, or "
                          "COOLBENCH_CUDA=OFF); rebuild with the CUDA toolkit, or time it on the "
                          "host (no device)");
    }
#endif
  }
  ~callable_workload() override = default;
  callable_workload(const callable_workload&) = delete;
  callable_workload& operator=(const callable_workload&) = delete;
  callable_workload(callable_workload&&) = delete;
  callable_workload& operator=(callable_workload&&) = delete;

  [[nodiscard]] std::string describe() const override { return m_spec.name; }
  [[nodiscard]] std::optional<int> device() const override { return m_spec.device; }
  [[nodiscard]] std::optional<double> flops() const override { return m_spec.flops; }

  void prepare() override {
    if (m_prepared) return;
#ifdef COOLBENCH_MEASURE_HAVE_CUDA
    // The lease first: it (re)creates the context the user's setup then uses.
    if (m_spec.device) m_timer.emplace(*m_spec.device, m_spec.stream, m_spec.hold);
#endif
    if (m_spec.setup) m_spec.setup();
    m_prepared = true;
  }

  timing run() override {
    prepare();
    timing t;
    t.start_ns = steady_now_ns();
#ifdef COOLBENCH_MEASURE_HAVE_CUDA
    if (m_timer) {
      t.latency_ms = m_timer->time(m_spec.run);
      t.end_ns = steady_now_ns();
      return t;
    }
#endif
    m_spec.run();
    t.end_ns = steady_now_ns();
    t.latency_ms = static_cast<double>(t.end_ns - t.start_ns) / 1e6;
    return t;
  }

  void release() override {
    if (!m_prepared) return;
    m_prepared = false;
    // The user's objects go before the lease, as they were made after it;
    // the lease goes even when the teardown fails.
    try {
      if (m_spec.teardown) m_spec.teardown();
    } catch (...) {
      drop_timer();
      throw;
    }
    drop_timer();
  }

 private:
  void drop_timer() noexcept {
#ifdef COOLBENCH_MEASURE_HAVE_CUDA
    m_timer.reset();
#endif
  }

  callable_spec m_spec;
  bool m_prepared = false;
#ifdef COOLBENCH_MEASURE_HAVE_CUDA
  std::optional<event_timer> m_timer;
#endif
};

}  // namespace

std::unique_ptr<workload> make_callable_workload(callable_spec spec) {
  return std::make_unique<callable_workload>(std::move(spec));
}

}  // namespace coolbench::measure
