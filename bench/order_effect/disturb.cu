// bench/order_effect's disturbances: what runs between the victim's clean and disturbed
// figures (docs/perf/hidden-state.md).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "core/cublas_check.hpp"
#include "core/cuda_check.hpp"
#include "device_common.cuh"
#include "victim.hpp"

namespace order_effect {
namespace {

__global__ void shared_memory_kernel(float* out, int words) {
  extern __shared__ float block_memory[];
  for (int i = static_cast<int>(threadIdx.x); i < words; i += static_cast<int>(blockDim.x))
    block_memory[i] = static_cast<float>(i);
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = block_memory[words - 1];
}

__global__ void max_l1_kernel(float* out) { out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f; }

void raw_gemms() {
  constexpr int n = 8192;
  constexpr std::size_t elements = std::size_t{n} * n;
  void* m[3] = {};
  for (void*& p : m) COOLBENCH_CUDA_CALL(cudaMalloc(&p, elements * sizeof(__nv_bfloat16)));
  fill<__nv_bfloat16>(m[0], elements, 9001, 1.0f, nullptr);
  fill<__nv_bfloat16>(m[1], elements, 9002, 1.0f, nullptr);
  cublasHandle_t handle = nullptr;
  COOLBENCH_CUBLAS_CALL(cublasCreate(&handle));
  const float one = 1.0f;
  const float zero = 0.0f;
  for (int i = 0; i < 3; ++i) {
    COOLBENCH_CUBLAS_CALL(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, m[0],
                                       CUDA_R_16BF, n, m[1], CUDA_R_16BF, n, &zero, m[2],
                                       CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
  COOLBENCH_CUDA_CALL(cudaDeviceSynchronize());
  COOLBENCH_CUBLAS_CALL(cublasDestroy(handle));
  for (void* p : m) COOLBENCH_CUDA_CALL(cudaFree(p));
}

}  // namespace

void disturb_with_gemms(dev::lease& lease, disturb_stream where) {
  if (where == disturb_stream::raw) {
    raw_gemms();
    return;
  }
  constexpr int n = 8192;
  constexpr std::size_t elements = std::size_t{n} * n;
  cudaStream_t stream = where == disturb_stream::lease ? lease.stream() : nullptr;
  const auto a = lease.allocate(elements * sizeof(__nv_bfloat16));
  const auto b = lease.allocate(elements * sizeof(__nv_bfloat16));
  const auto c = lease.allocate(elements * sizeof(__nv_bfloat16));
  const auto work = lease.allocate(workspace_bytes);
  fill<__nv_bfloat16>(a.get(), elements, 9001, 1.0f, stream);
  fill<__nv_bfloat16>(b.get(), elements, 9002, 1.0f, stream);
  cublasHandle_t handle = nullptr;
  COOLBENCH_CUBLAS_CALL(cublasCreate(&handle));
  const auto owner =
      lease.adopt(dev::resource_kind::blas_handle, [handle] { cublasDestroy(handle); });
  COOLBENCH_CUBLAS_CALL(cublasSetStream(handle, stream));
  COOLBENCH_CUBLAS_CALL(cublasSetWorkspace(handle, work.get(), workspace_bytes));
  const float one = 1.0f;
  const float zero = 0.0f;
  for (int i = 0; i < 3; ++i) {
    COOLBENCH_CUBLAS_CALL(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a.get(),
                                       CUDA_R_16BF, n, b.get(), CUDA_R_16BF, n, &zero, c.get(),
                                       CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
  COOLBENCH_CUDA_CALL(cudaStreamSynchronize(stream));
}

void disturb_with_shared_memory(dev::lease& lease, int kib, disturb_stream where) {
  cudaStream_t stream = where == disturb_stream::lease ? lease.stream() : nullptr;
  const int bytes = kib * 1024;
  if (where == disturb_stream::raw) {
    COOLBENCH_CUDA_CALL(cudaFuncSetAttribute(reinterpret_cast<const void*>(&shared_memory_kernel),
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    float* out = nullptr;
    COOLBENCH_CUDA_CALL(cudaMalloc(&out, 4096));
    shared_memory_kernel<<<sm_count(lease.ordinal()), 256, static_cast<std::size_t>(bytes)>>>(
        out, bytes / 4);
    COOLBENCH_CUDA_CALL(cudaGetLastError());
    COOLBENCH_CUDA_CALL(cudaDeviceSynchronize());
    COOLBENCH_CUDA_CALL(cudaFree(out));
    return;
  }
  lease.set_kernel_attribute(reinterpret_cast<const void*>(&shared_memory_kernel),
                             dev::kernel_attribute::max_dynamic_shared_memory_bytes, bytes);
  const int sms = sm_count(lease.ordinal());
  const auto out = lease.allocate(static_cast<std::size_t>(sms) * sizeof(float));
  shared_memory_kernel<<<sms, 256, static_cast<std::size_t>(bytes), stream>>>(
      static_cast<float*>(out.get()), bytes / 4);
  COOLBENCH_CUDA_CALL(cudaGetLastError());
  COOLBENCH_CUDA_CALL(cudaStreamSynchronize(stream));
}

void run_max_l1_kernel(dev::lease& lease) {
  COOLBENCH_CUDA_CALL(cudaFuncSetAttribute(reinterpret_cast<const void*>(&max_l1_kernel),
                                           cudaFuncAttributePreferredSharedMemoryCarveout, 0));
  const int sms = sm_count(lease.ordinal());
  const auto out = lease.allocate(static_cast<std::size_t>(sms) * 256 * sizeof(float));
  max_l1_kernel<<<sms, 256, 0, lease.stream()>>>(static_cast<float*>(out.get()));
  COOLBENCH_CUDA_CALL(cudaGetLastError());
  COOLBENCH_CUDA_CALL(cudaStreamSynchronize(lease.stream()));
}

}  // namespace order_effect
