// A process that holds a CUDA context and keeps a GPU busy for a while: the
// load the GPU cross-check tests compare readings under.
//   gpu_load SECONDS MIB [DEVICE]
// Allocates MIB MiB, prints "ready" once the context exists, spins kernels
// until SECONDS have passed, and exits 0 (1 on any CUDA error).
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

__global__ void spin(float* data, int n, int rounds) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = data[i];
  for (int r = 0; r < rounds; ++r) x = x * 0.999f + 0.001f;
  data[i] = x;
}

bool ok(cudaError_t result, const char* what) {
  if (result == cudaSuccess) return true;
  std::fprintf(stderr, "gpu_load: %s failed: %s\n", what, cudaGetErrorString(result));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: gpu_load SECONDS MIB [DEVICE]\n");
    return 2;
  }
  const double seconds = std::atof(argv[1]);
  const size_t bytes = static_cast<size_t>(std::atol(argv[2])) << 20;
  const int device = argc > 3 ? std::atoi(argv[3]) : 0;
  float* data = nullptr;
  if (!ok(cudaSetDevice(device), "cudaSetDevice") || !ok(cudaMalloc(&data, bytes), "cudaMalloc") ||
      !ok(cudaMemset(data, 0x3f, bytes), "cudaMemset") ||
      !ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize")) {
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  const int n = 1 << 24;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    spin<<<n / 256, 256>>>(data, n, 256);
    if (!ok(cudaGetLastError(), "spin launch") || !ok(cudaDeviceSynchronize(), "spin")) return 1;
  }
  return ok(cudaFree(data), "cudaFree") ? 0 : 1;
}
