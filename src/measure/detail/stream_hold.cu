#include <cuda_runtime.h>

#include "core/cuda_check.hpp"
#include "measure/detail/stream_hold.hpp"

namespace coolbench::measure::detail {
namespace {

__device__ inline std::uint64_t global_timer_ns() {
  std::uint64_t t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// A timed wait, not a flag the host sets: nothing can leave it spinning.
__global__ void hold_kernel(std::uint64_t nanoseconds) {
  const std::uint64_t until = global_timer_ns() + nanoseconds;
  while (global_timer_ns() < until) __nanosleep(1000);
}

}  // namespace

void hold_stream(CUstream_st* stream, std::uint64_t nanoseconds) {
  hold_kernel<<<1, 1, 0, stream>>>(nanoseconds);
  COOLBENCH_CUDA_CALL(cudaGetLastError());
}

}  // namespace coolbench::measure::detail
