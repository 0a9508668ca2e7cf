// What bench/order_effect's victim and disturbances share: the device fill (random data,
// never zeros), the SM count and cuBLAS's workspace size.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/cuda_check.hpp"

namespace order_effect {

constexpr std::size_t workspace_bytes = std::size_t{32} << 20U;  // cuBLAS's advice for Hopper

inline __device__ float hash_uniform(std::uint64_t i, std::uint32_t seed) {  // in [-1, 1)
  std::uint64_t z = i + 0x9E3779B97F4A7C15ULL * (std::uint64_t{seed} + 1);
  z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
  z ^= z >> 31U;
  return static_cast<float>(z >> 40U) * (2.0f / 16777216.0f) - 1.0f;
}

template <class T>
__global__ void fill_kernel(T* p, std::size_t n, std::uint32_t seed, float scale) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    p[i] = static_cast<T>(scale * hash_uniform(i, seed));
}

template <class T>
inline void fill(void* p, std::size_t n, std::uint32_t seed, float scale, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 8192));
  fill_kernel<T><<<blocks, 256, 0, stream>>>(static_cast<T*>(p), n, seed, scale);
  COOLBENCH_CUDA_CALL(cudaGetLastError());
}

inline int sm_count(int ordinal) {
  int sms = 0;
  COOLBENCH_CUDA_CALL(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ordinal));
  return sms;
}

}  // namespace order_effect
