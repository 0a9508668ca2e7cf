#include <cuda_runtime.h>

#include "core/cuda_check.hpp"
#include "gpu/cycle_workload.hpp"

namespace coolbench::testing {
namespace {

__global__ void fill(float* x, int n, unsigned seed) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned h = static_cast<unsigned>(i) * 2654435761U ^ seed;
  h ^= h >> 15;
  h *= 2246822519U;
  h ^= h >> 13;
  x[i] = static_cast<float>(h & 0xFFFFFF) / 16777216.0f - 0.5f;
}

// Each block stages its slice plus a halo in shared memory (sized past the
// default 48 KB limit) and writes a smoothed, nonlinear value.
__global__ void smooth(const float* x, float* y, int n) {
  extern __shared__ float tile[];
  const int per_block = cycle_workload_shared_bytes / static_cast<int>(sizeof(float));
  const int base = blockIdx.x * blockDim.x;
  for (int j = threadIdx.x; j < per_block; j += blockDim.x) {
    const int k = (base + j) % n;
    tile[j] = x[k];
  }
  __syncthreads();
  const int i = base + threadIdx.x;
  if (i >= n) return;
  const float v =
      tile[threadIdx.x] + 0.5f * tile[threadIdx.x + 1] + 0.25f * tile[per_block - 1 - threadIdx.x];
  y[i] = sinf(v) * 3.0f + v * v;
}

}  // namespace

void register_cycle_workload(device::lease& lease) {
  lease.set_kernel_attribute(reinterpret_cast<const void*>(&smooth),
                             device::kernel_attribute::max_dynamic_shared_memory_bytes,
                             cycle_workload_shared_bytes);
}

std::vector<float> run_cycle_workload(device::lease& lease, int n, unsigned seed) {
  const auto bytes = static_cast<std::size_t>(n) * sizeof(float);
  auto x = lease.allocate(bytes);
  auto y = lease.allocate(bytes);
  cudaStream_t stream = lease.stream();
  constexpr int block = 256;
  const int grid = (n + block - 1) / block;
  fill<<<grid, block, 0, stream>>>(static_cast<float*>(x.get()), n, seed);
  COOLBENCH_CUDA_CALL(cudaGetLastError());
  smooth<<<grid, block, cycle_workload_shared_bytes, stream>>>(static_cast<const float*>(x.get()),
                                                               static_cast<float*>(y.get()), n);
  COOLBENCH_CUDA_CALL(cudaGetLastError());
  std::vector<float> out(static_cast<std::size_t>(n));
  COOLBENCH_CUDA_CALL(cudaMemcpyAsync(out.data(), y.get(), bytes, cudaMemcpyDeviceToHost, stream));
  COOLBENCH_CUDA_CALL(cudaStreamSynchronize(stream));
  return out;
}

}  // namespace coolbench::testing
