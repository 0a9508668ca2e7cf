// COOLBENCH_CUBLAS_CALL(cublasLtCreate(&h)) throws cuda_error naming the call,
// cuBLAS's status and where: the cuBLAS member of the family of
// COOLBENCH_CUDA_CALL (core/cuda_check.hpp), on the same checker; one for every layer.
#pragma once

#include <cublasLt.h>

#include "core/check.hpp"

#define COOLBENCH_CUBLAS_CALL(call)                                                      \
  do {                                                                                   \
    const cublasStatus_t coolbench_status_ = (call);                                     \
    if (coolbench_status_ != CUBLAS_STATUS_SUCCESS) {                                    \
      ::coolbench::core::throw_cuda_error(                                               \
          static_cast<int>(coolbench_status_), cublasLtGetStatusName(coolbench_status_), \
          cublasLtGetStatusString(coolbench_status_), #call, __FILE__, __LINE__);        \
    }                                                                                    \
  } while (false)
