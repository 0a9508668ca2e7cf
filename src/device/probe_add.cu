#include "coolbench/device/probe.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "coolbench/device/device.hpp"
#include "core/cuda_check.hpp"

namespace coolbench::device {
namespace {

constexpr int element_count = 1 * 2 * 3 * 3;  // the shape of the user's report

__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) c[i] = a[i] + b[i];
}

}  // namespace

double run_probe_add(lease& l) {
  std::array<float, element_count> a{};
  std::array<float, element_count> b{};
  std::array<float, element_count> c{};
  // A fixed seed: the check is the same every run.
  std::mt19937 generator(20261202U);
  std::uniform_real_distribution<float> uniform(-1.0F, 1.0F);
  for (int i = 0; i < element_count; ++i) {
    a[i] = uniform(generator);
    b[i] = uniform(generator);
  }
  constexpr std::size_t bytes = sizeof(float) * element_count;
  const buffer device_a = l.allocate(bytes);
  const buffer device_b = l.allocate(bytes);
  const buffer device_c = l.allocate(bytes);
  auto* da = static_cast<float*>(device_a.get());
  auto* db = static_cast<float*>(device_b.get());
  auto* dc = static_cast<float*>(device_c.get());
  cudaStream_t stream = l.stream();
  COOLBENCH_CUDA_CALL(cudaSetDevice(l.ordinal()));
  COOLBENCH_CUDA_CALL(cudaMemcpyAsync(da, a.data(), bytes, cudaMemcpyHostToDevice, stream));
  COOLBENCH_CUDA_CALL(cudaMemcpyAsync(db, b.data(), bytes, cudaMemcpyHostToDevice, stream));
  add_kernel<<<1, 32, 0, stream>>>(da, db, dc, element_count);
  COOLBENCH_CUDA_CALL(cudaGetLastError());
  COOLBENCH_CUDA_CALL(cudaMemcpyAsync(c.data(), dc, bytes, cudaMemcpyDeviceToHost, stream));
  COOLBENCH_CUDA_CALL(cudaStreamSynchronize(stream));
  double error = 0;
  for (int i = 0; i < element_count; ++i) {
    error = std::max(error, std::abs(static_cast<double>(c[i]) - static_cast<double>(a[i] + b[i])));
  }
  return error;
}

}  // namespace coolbench::device
