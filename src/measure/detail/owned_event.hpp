// A CUDA event adopted by the device layer through a lease, so a device
// release destroys it (the timing workloads' start and end events).
#pragma once

#include <cuda_runtime_api.h>

#include "coolbench/device.hpp"
#include "core/cuda_check.hpp"

namespace coolbench::measure::detail {

struct owned_event {
  cudaEvent_t event = nullptr;
  device::owned_resource owner;
};

/// A new event in `lease`'s context, destroyed by a device release or with `owner`.
[[nodiscard]] inline owned_event make_owned_event(device::lease& lease) {
  cudaEvent_t e = nullptr;
  COOLBENCH_CUDA_CALL(cudaEventCreate(&e));
  return {e, lease.adopt(device::resource_kind::event, [e] { cudaEventDestroy(e); })};
}

}  // namespace coolbench::measure::detail
