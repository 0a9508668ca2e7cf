// A process that holds a CUDA context and keeps a GPU busy for a while: the
// load the GPU cross-check tests compare readings under.
//   gpu_load SECONDS MIB [DEVICE] [spin|gemm]
// Allocates MIB MiB, prints "ready" once the context exists, then until
// SECONDS have passed either spins a light FMA kernel (spin, the default) or
// runs bf16 8192^3 cuBLAS GEMMs on random data (gemm: on an H200 this reaches
// the power cap within about 60 ms). Exits 0, or 1 on any CUDA error.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

__global__ void spin(float* data, int n, int rounds) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = data[i];
  for (int r = 0; r < rounds; ++r) x = x * 0.999f + 0.001f;
  data[i] = x;
}

// Values in [-1, 1) from a hash of the index: random enough, never zeros.
__global__ void fill_random(__nv_bfloat16* data, size_t n, unsigned seed) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  unsigned h = static_cast<unsigned>(i) * 2654435761U ^ seed;
  h ^= h >> 16;
  h *= 2246822519U;
  h ^= h >> 13;
  data[i] = __float2bfloat16(static_cast<float>(h & 0xFFFF) / 32768.0f - 1.0f);
}

bool ok(cudaError_t result, const char* what) {
  if (result == cudaSuccess) return true;
  std::fprintf(stderr, "gpu_load: %s failed: %s\n", what, cudaGetErrorString(result));
  return false;
}

bool ok(cublasStatus_t result, const char* what) {
  if (result == CUBLAS_STATUS_SUCCESS) return true;
  std::fprintf(stderr, "gpu_load: %s failed: cuBLAS status %d\n", what, static_cast<int>(result));
  return false;
}

int run_gemm(std::chrono::steady_clock::time_point until) {
  constexpr int n = 8192;
  const size_t elements = static_cast<size_t>(n) * n;
  __nv_bfloat16* a = nullptr;
  __nv_bfloat16* b = nullptr;
  __nv_bfloat16* c = nullptr;
  cublasHandle_t handle = nullptr;
  if (!ok(cudaMalloc(&a, elements * 2), "cudaMalloc") ||
      !ok(cudaMalloc(&b, elements * 2), "cudaMalloc") ||
      !ok(cudaMalloc(&c, elements * 2), "cudaMalloc") ||
      !ok(cublasCreate(&handle), "cublasCreate")) {
    return 1;
  }
  fill_random<<<static_cast<unsigned>((elements + 255) / 256), 256>>>(a, elements, 1U);
  fill_random<<<static_cast<unsigned>((elements + 255) / 256), 256>>>(b, elements, 2U);
  const float alpha = 1.0f;
  const float beta = 0.0f;
  while (std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < 10; ++i) {
      if (!ok(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, CUDA_R_16BF, n, b,
                           CUDA_R_16BF, n, &beta, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                           CUBLAS_GEMM_DEFAULT),
              "cublasGemmEx")) {
        return 1;
      }
    }
    if (!ok(cudaDeviceSynchronize(), "gemm")) return 1;
  }
  cublasDestroy(handle);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: gpu_load SECONDS MIB [DEVICE] [spin|gemm]\n");
    return 2;
  }
  const double seconds = std::atof(argv[1]);
  const size_t bytes = static_cast<size_t>(std::atol(argv[2])) << 20;
  const int device = argc > 3 ? std::atoi(argv[3]) : 0;
  const bool gemm = argc > 4 && std::strcmp(argv[4], "gemm") == 0;
  float* data = nullptr;
  if (!ok(cudaSetDevice(device), "cudaSetDevice") || !ok(cudaMalloc(&data, bytes), "cudaMalloc") ||
      !ok(cudaMemset(data, 0x3f, bytes), "cudaMemset") ||
      !ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize")) {
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(seconds));
  if (gemm) {
    const int status = run_gemm(until);
    cudaFree(data);
    return status;
  }
  const int n = 1 << 24;
  while (std::chrono::steady_clock::now() < until) {
    spin<<<n / 256, 256>>>(data, n, 256);
    if (!ok(cudaGetLastError(), "spin launch") || !ok(cudaDeviceSynchronize(), "spin")) return 1;
  }
  return ok(cudaFree(data), "cudaFree") ? 0 : 1;
}
