// What the CUDA engine tests share to skip without a GPU (ctest label `gpu`): they skip with a
// printed reason, never pass, where no GPU can be used.
#pragma once

#include <gtest/gtest.h>

#include "coolbench/core/error.hpp"
#include "coolbench/device.hpp"

namespace coolbench::engine::testing_gpu {

/// How many GPUs the device layer sees; 0 where there is no driver, NVML or GPU.
inline int gpu_count() {
  try {
    return device::device::count();
  } catch (const error&) {
    return 0;
  }
}

}  // namespace coolbench::engine::testing_gpu

/// Skips the calling test, saying why, where no GPU can be used.
#define COOLBENCH_REQUIRE_GPU(what)                       \
  if (::coolbench::engine::testing_gpu::gpu_count() == 0) \
  GTEST_SKIP() << "no GPU here: " << (what) << " cannot run"
