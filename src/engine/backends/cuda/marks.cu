// Node timing on the device: an event recorded on the backend's stream per
// mark, the intervals read once the last one completed. The events come from
// the device layer, so a device release destroys them; they are made again in
// the next context.
//
// A node's event interval on an idle stream measures the host's launch rate
// when the node's kernels are shorter than their launch (a few microseconds
// each on the H200). So each timed run starts behind a hold: a one-thread
// kernel that spins until the GPU's timer has advanced past twice the longest
// queuing of the earlier runs (the first run has no hold: it loads the
// kernels). Everything is queued before the first mark runs, and the marks
// bracket GPU time alone.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>

#include "core/cuda_check.hpp"
#include "engine/backends/cuda/backend.hpp"

namespace coolbench::engine::cuda {
namespace {

__global__ void hold_kernel(unsigned long long nanoseconds) {
  unsigned long long start = 0;
  unsigned long long now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < nanoseconds);
}

}  // namespace

void cuda_backend::begin_marks() {
  if (lease().generation() != m_mark_generation) {
    m_mark_events.clear();  // destroyed by the release
    m_mark_generation = lease().generation();
    m_mark_queue_ns = 0;
  }
  m_marks = 0;
  if (m_mark_queue_ns > 0) {
    const auto hold = 2 * m_mark_queue_ns + 1000000ULL;  // and 1 ms for a slow launch
    hold_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream())>>>(hold);
    COOLBENCH_CUDA_CALL(cudaGetLastError());
  }
  m_marks_begun = std::chrono::steady_clock::now();
  mark();
}

void cuda_backend::mark() {
  if (m_recording) {
    throw invalid_argument("node timing marks cannot be recorded into a CUDA graph");
  }
  if (m_marks == m_mark_events.size()) m_mark_events.push_back(lease().create_event());
  COOLBENCH_CUDA_CALL(cudaEventRecord(static_cast<cudaEvent_t>(m_mark_events[m_marks]),
                                      static_cast<cudaStream_t>(stream())));
  ++m_marks;
}

std::vector<double> cuda_backend::mark_intervals_ms() {
  std::vector<double> intervals;
  if (m_marks == 0) return intervals;
  const auto queued = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now() - m_marks_begun)
                          .count();
  m_mark_queue_ns =
      std::max<unsigned long long>(m_mark_queue_ns, static_cast<unsigned long long>(queued));
  COOLBENCH_CUDA_CALL(cudaEventSynchronize(static_cast<cudaEvent_t>(m_mark_events[m_marks - 1])));
  for (std::size_t i = 1; i < m_marks; ++i) {
    float ms = 0.0F;
    COOLBENCH_CUDA_CALL(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(m_mark_events[i - 1]),
                                             static_cast<cudaEvent_t>(m_mark_events[i])));
    intervals.push_back(static_cast<double>(ms));
  }
  return intervals;
}

}  // namespace coolbench::engine::cuda
