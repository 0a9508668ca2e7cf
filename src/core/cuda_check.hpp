// COOLBENCH_CUDA_CALL(cudaMalloc(&p, n)) throws cuda_error naming the call,
// the error and where; the _NOEXCEPT form logs instead (cleanup paths).
#pragma once

#include <cuda_runtime_api.h>

#include "core/check.hpp"

#define COOLBENCH_CUDA_CALL(call)                                                      \
  do {                                                                                 \
    const cudaError_t coolbench_result_ = (call);                                      \
    if (coolbench_result_ != cudaSuccess) {                                            \
      cudaGetLastError(); /* clear a non-sticky error so the next call starts clean */ \
      ::coolbench::core::throw_cuda_error(                                             \
          static_cast<int>(coolbench_result_), cudaGetErrorName(coolbench_result_),    \
          cudaGetErrorString(coolbench_result_), #call, __FILE__, __LINE__);           \
    }                                                                                  \
  } while (false)

#define COOLBENCH_CUDA_CALL_NOEXCEPT(call)                                          \
  do {                                                                              \
    const cudaError_t coolbench_result_ = (call);                                   \
    if (coolbench_result_ != cudaSuccess) {                                         \
      cudaGetLastError();                                                           \
      ::coolbench::core::log_cuda_error(                                            \
          static_cast<int>(coolbench_result_), cudaGetErrorName(coolbench_result_), \
          cudaGetErrorString(coolbench_result_), #call, __FILE__, __LINE__);        \
    }                                                                               \
  } while (false)
