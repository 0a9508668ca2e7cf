#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "core/cuda_check.hpp"
#include "measure/detail/fill_random.hpp"

namespace coolbench::measure::detail {
namespace {

// splitmix64's finalizer over index and seed: independent values per element
// without any state, the same on host and device.
__host__ __device__ inline float hash_uniform(std::uint64_t index, std::uint64_t seed) {
  std::uint64_t x = index + (seed + 1) * 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  x ^= x >> 31;
  // 24 random bits: a multiple of 2^-23 in [-1, 1), exact in fp32, fp16 and bf16 range.
  const float v = static_cast<float>(x >> 40) * (1.0F / 8388608.0F) - 1.0F;
  return v == 0.0F ? 1.0F / 8388608.0F : v;
}

template <class T>
__device__ T convert(float v);
template <>
__device__ float convert<float>(float v) {
  return v;
}
template <>
__device__ __half convert<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __nv_bfloat16 convert<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

template <class T>
__global__ void fill_kernel(T* out, std::size_t count, std::uint64_t seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    out[i] = convert<T>(hash_uniform(i, seed));
  }
}

template <class T>
void launch(void* data, std::size_t count, std::uint64_t seed, cudaStream_t stream) {
  constexpr int block = 256;
  const auto blocks =
      std::min<std::size_t>((count + block - 1) / block, static_cast<std::size_t>(8192));
  fill_kernel<T><<<static_cast<unsigned>(std::max<std::size_t>(blocks, 1)), block, 0, stream>>>(
      static_cast<T*>(data), count, seed);
  COOLBENCH_CUDA_CALL(cudaGetLastError());
}

}  // namespace

void fill_uniform(void* data, std::size_t count, gemm_dtype dtype, std::uint64_t seed,
                  CUstream_st* stream) {
  switch (dtype) {
    case gemm_dtype::fp16: launch<__half>(data, count, seed, stream); return;
    case gemm_dtype::bf16: launch<__nv_bfloat16>(data, count, seed, stream); return;
    case gemm_dtype::fp32: launch<float>(data, count, seed, stream); return;
  }
}

float uniform_value(std::uint64_t index, std::uint64_t seed) noexcept {
  return hash_uniform(index, seed);
}

}  // namespace coolbench::measure::detail
