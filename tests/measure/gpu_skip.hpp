// What the measurement layer's GPU tests (label gpu) share: they skip with a printed reason,
// never pass, where no GPU can be used.
#pragma once

#include <gtest/gtest.h>

#include "coolbench/core/error.hpp"
#include "coolbench/device.hpp"

/// Skips the calling test, saying why, where the device layer sees no GPU.
#define SKIP_WITHOUT_GPU()                                          \
  do {                                                              \
    int count_ = 0;                                                 \
    try {                                                           \
      count_ = ::coolbench::device::device::count();                \
    } catch (const ::coolbench::error& e) {                         \
      GTEST_SKIP() << "no GPU here: " << e.what();                  \
    }                                                               \
    if (count_ == 0) GTEST_SKIP() << "no GPU here: CUDA sees none"; \
  } while (false)
