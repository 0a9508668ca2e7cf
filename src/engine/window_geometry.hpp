// The resolved geometry of a sliding window, as plain numbers: what the CPU
// kernels and the CUDA kernels (as a kernel argument) both read. Up to three
// spatial axes; fewer are the trailing ones, the leading ones of size 1.
#pragma once

#include <cstdint>

namespace coolbench::engine {

/// One spatial axis with its padding resolved.
struct window_axis {
  std::int64_t in = 1;
  std::int64_t kernel = 1;
  std::int64_t stride = 1;
  std::int64_t dilation = 1;
  std::int64_t pad_begin = 0;
  std::int64_t pad_end = 0;
  std::int64_t out = 1;
};

struct window_geometry {
  static constexpr int k_axes = 3;
  window_axis axis[k_axes];

  [[nodiscard]] constexpr std::int64_t in_count() const {
    return axis[0].in * axis[1].in * axis[2].in;
  }
  [[nodiscard]] constexpr std::int64_t out_count() const {
    return axis[0].out * axis[1].out * axis[2].out;
  }
  [[nodiscard]] constexpr std::int64_t kernel_count() const {
    return axis[0].kernel * axis[1].kernel * axis[2].kernel;
  }
};

}  // namespace coolbench::engine
