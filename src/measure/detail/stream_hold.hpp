// Holding a stream while the host queues a sample's work. A chain of short
// kernels, timed with events on an idle stream, measures the host's launch
// rate rather than the GPU: on the H200, 4 fp16 GEMMs of GPT-2's QKV shape
// take ~5 us each on the GPU and as long again to launch, and the figure
// varied by 30% from one process to the next. With the stream held by a wait
// kernel until everything is queued, the events bracket GPU time alone.
#pragma once

#include <cstdint>

struct CUstream_st;

namespace coolbench::measure::detail {

/// Queues on `stream` a one-thread kernel that returns once the GPU's global
/// timer has advanced `nanoseconds` past its start. Throws cuda_error when
/// the launch fails.
void hold_stream(CUstream_st* stream, std::uint64_t nanoseconds);

}  // namespace coolbench::measure::detail
