// Node timing on the device: an event recorded on the backend's stream per
// mark, the intervals read once the last one completed. The events come from
// the device layer, so a device release destroys them; they are made again in
// the next context.
#include <cuda_runtime_api.h>

#include "core/cuda_check.hpp"
#include "engine/backends/cuda/backend.hpp"

namespace coolbench::engine::cuda {

void cuda_backend::begin_marks() {
  if (lease().generation() != m_mark_generation) {
    m_mark_events.clear();  // destroyed by the release
    m_mark_generation = lease().generation();
  }
  m_marks = 0;
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
