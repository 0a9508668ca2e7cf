#include <cuda_runtime.h>

#include "core/cuda_check.hpp"
#include "measure/detail/sentinel_kernel.hpp"

namespace coolbench::measure::detail {
namespace {

constexpr int sentinel_threads = 256;

__global__ void fill_walk_kernel(std::uint32_t* table, std::uint32_t entries) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= entries) return;
  // An odd multiplier modulo a power of two is a bijection: every entry is
  // somewhere on a walk, and the next index jumps far from this one.
  table[i] = (i * 2654435761U + 12345U) & (entries - 1);
}

// Dependent loads: each thread's next address is the value it just read, so
// the pass takes steps * (L1 or L2 latency) and nothing else.
__global__ void walk_kernel(const std::uint32_t* __restrict__ table, std::uint32_t entries,
                            std::uint32_t* sink, int steps) {
  std::uint32_t i = (blockIdx.x * blockDim.x + threadIdx.x) * 97U & (entries - 1);
  std::uint32_t sum = 0;
  for (int s = 0; s < steps; ++s) {
    i = __ldg(&table[i]);
    sum += i;
  }
  sink[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

std::uint32_t entries_of(std::size_t bytes) {
  return static_cast<std::uint32_t>(bytes / sizeof(std::uint32_t));
}

}  // namespace

void fill_sentinel_table(std::uint32_t* table, std::size_t bytes, CUstream_st* stream) {
  const std::uint32_t entries = entries_of(bytes);
  if (entries == 0 || (entries & (entries - 1)) != 0) {
    ::coolbench::core::throw_cuda_error(static_cast<int>(cudaErrorInvalidValue),
                                        "cudaErrorInvalidValue",
                                        "the sentinel table must hold a power of two of entries",
                                        "fill_sentinel_table", __FILE__, __LINE__);
  }
  fill_walk_kernel<<<(entries + 255) / 256, 256, 0, stream>>>(table, entries);
  COOLBENCH_CUDA_CALL(cudaGetLastError());
}

void queue_sentinel(const std::uint32_t* table, std::size_t bytes, std::uint32_t* sink, int blocks,
                    int steps, CUstream_st* stream) {
  walk_kernel<<<blocks, sentinel_threads, 0, stream>>>(table, entries_of(bytes), sink, steps);
  COOLBENCH_CUDA_CALL(cudaGetLastError());
}

std::vector<double> time_sentinel(const std::uint32_t* table, std::size_t bytes,
                                  std::uint32_t* sink, int blocks, int steps, int warmups, int runs,
                                  CUstream_st* stream, const std::vector<CUevent_st*>& events) {
  for (int i = 0; i < warmups; ++i) queue_sentinel(table, bytes, sink, blocks, steps, stream);
  COOLBENCH_CUDA_CALL(cudaEventRecord(events.at(0), stream));
  for (int i = 1; i <= runs; ++i) {
    queue_sentinel(table, bytes, sink, blocks, steps, stream);
    COOLBENCH_CUDA_CALL(cudaEventRecord(events.at(static_cast<std::size_t>(i)), stream));
  }
  COOLBENCH_CUDA_CALL(cudaStreamSynchronize(stream));
  std::vector<double> ms;
  ms.reserve(static_cast<std::size_t>(runs));
  for (int i = 1; i <= runs; ++i) {
    float elapsed = 0;
    COOLBENCH_CUDA_CALL(cudaEventElapsedTime(&elapsed, events[static_cast<std::size_t>(i - 1)],
                                             events[static_cast<std::size_t>(i)]));
    ms.push_back(elapsed);
  }
  return ms;
}

}  // namespace coolbench::measure::detail
