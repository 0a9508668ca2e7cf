/// @file
/// The time of one run of a workload.
#pragma once

#include <cstdint>

namespace coolbench::measure {

/// One run of a workload.
struct timing {
  std::int64_t start_ns = 0;  ///< steady_now_ns() just before the work was issued
  std::int64_t end_ns = 0;    ///< steady_now_ns() once it was known complete
  /// The figure the protocol keeps: CUDA-event time on the GPU, host time
  /// (end - start) on the CPU.
  double latency_ms = 0;
};

}  // namespace coolbench::measure
