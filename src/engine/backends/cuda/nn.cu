// Kernels of the convolutional-network operators: a direct Conv (one thread
// per output element, float32 accumulation) and the unfolding for Conv as a product
// (conv_gemm.hpp), MaxPool/AveragePool, the global pools (a warp per plane), BatchNormalization;
// and GatherElements, which reports an index out of range through the backend's error flag.
#include "engine/backends/cuda/common.cuh"
#include "engine/backends/cuda/conv_gemm.hpp"

namespace coolbench::engine::cuda {
namespace {

// The output position of flat index `pos` within a plane, per axis.
__device__ __forceinline__ void position(const window_geometry& g, std::int64_t pos,
                                         std::int64_t (&o)[3]) {
  o[2] = pos % g.axis[2].out;
  o[1] = (pos / g.axis[2].out) % g.axis[1].out;
  o[0] = pos / (g.axis[2].out * g.axis[1].out);
}

template <class T>
__global__ void conv_kernel(const T* x, const T* w, const T* bias, T* y, conv_plan p) {
  const std::int64_t count = p.batch * p.maps * p.out_count;
  const std::int64_t group_channels = p.channels / p.group;
  const std::int64_t group_maps = p.maps / p.group;
  const window_geometry& g = p.geometry;
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < count;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t m = (i / p.out_count) % p.maps;
    const std::int64_t n = i / (p.out_count * p.maps);
    std::int64_t o[3];
    position(g, i % p.out_count, o);
    const T* image = x + (n * p.channels + (m / group_maps) * group_channels) * p.in_count;
    const T* filter = w + m * group_channels * p.kernel_count;
    float acc = bias != nullptr ? static_cast<float>(load(bias, m)) : 0.0F;
    for (std::int64_t c = 0; c < group_channels; ++c) {
      const T* plane = image + c * p.in_count;
      const T* taps = filter + c * p.kernel_count;
      for (std::int64_t kz = 0; kz < g.axis[0].kernel; ++kz) {
        const std::int64_t iz =
            o[0] * g.axis[0].stride - g.axis[0].pad_begin + kz * g.axis[0].dilation;
        if (iz < 0 || iz >= g.axis[0].in) continue;
        for (std::int64_t ky = 0; ky < g.axis[1].kernel; ++ky) {
          const std::int64_t iy =
              o[1] * g.axis[1].stride - g.axis[1].pad_begin + ky * g.axis[1].dilation;
          if (iy < 0 || iy >= g.axis[1].in) continue;
          const std::int64_t row = (iz * g.axis[1].in + iy) * g.axis[2].in;
          const std::int64_t tap_row = (kz * g.axis[1].kernel + ky) * g.axis[2].kernel;
          for (std::int64_t kx = 0; kx < g.axis[2].kernel; ++kx) {
            const std::int64_t ix =
                o[2] * g.axis[2].stride - g.axis[2].pad_begin + kx * g.axis[2].dilation;
            if (ix < 0 || ix >= g.axis[2].in) continue;
            acc += static_cast<float>(load(plane, row + ix)) *
                   static_cast<float>(load(taps, tap_row + kx));
          }
        }
      }
    }
    y[i] = narrow<T>(acc);
  }
}

// One thread per column element of `images` images: consecutive threads take consecutive
// output positions, so the writes are coalesced.
template <class T>
__global__ void im2col_kernel(const T* x, T* col, conv_plan p, std::int64_t pitch,
                              std::int64_t images) {
  const std::int64_t taps = p.kernel_count;
  const std::int64_t rows = p.channels * taps;
  const std::int64_t count = images * rows * p.out_count;
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < count;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t pos = i % p.out_count;
    const std::int64_t row = (i / p.out_count) % rows;
    const std::int64_t image = i / (p.out_count * rows);
    const std::int64_t source = im2col_source(p.geometry, row % taps, pos);
    const T* plane = x + (image * p.channels + row / taps) * p.in_count;
    col[(image * rows + row) * pitch + pos] = source < 0 ? narrow<T>(0.0F) : plane[source];
  }
}

// Max ignores the padding; the average divides by the taps inside the input,
// or with count_include_pad by those inside the padded input.
template <class T>
__global__ void pool_kernel(const T* x, T* y, conv_plan p, bool max, bool count_include_pad) {
  const std::int64_t count = p.batch * p.channels * p.out_count;
  const window_geometry& g = p.geometry;
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < count;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t o[3];
    position(g, i % p.out_count, o);
    const T* plane = x + (i / p.out_count) * p.in_count;
    float best = -INFINITY;
    float sum = 0;
    std::int64_t inside = 0;
    std::int64_t padded = 1;
    for (int d = 0; d < 3; ++d) {
      // Taps inside the padded input along d: the window's start is inside it.
      const window_axis& a = g.axis[d];
      std::int64_t taps = 0;
      for (std::int64_t k = 0; k < a.kernel; ++k) {
        const std::int64_t at = o[d] * a.stride - a.pad_begin + k * a.dilation;
        taps += at < a.in + a.pad_end ? 1 : 0;
      }
      padded *= taps;
    }
    for (std::int64_t kz = 0; kz < g.axis[0].kernel; ++kz) {
      const std::int64_t iz =
          o[0] * g.axis[0].stride - g.axis[0].pad_begin + kz * g.axis[0].dilation;
      if (iz < 0 || iz >= g.axis[0].in) continue;
      for (std::int64_t ky = 0; ky < g.axis[1].kernel; ++ky) {
        const std::int64_t iy =
            o[1] * g.axis[1].stride - g.axis[1].pad_begin + ky * g.axis[1].dilation;
        if (iy < 0 || iy >= g.axis[1].in) continue;
        const std::int64_t row = (iz * g.axis[1].in + iy) * g.axis[2].in;
        for (std::int64_t kx = 0; kx < g.axis[2].kernel; ++kx) {
          const std::int64_t ix =
              o[2] * g.axis[2].stride - g.axis[2].pad_begin + kx * g.axis[2].dilation;
          if (ix < 0 || ix >= g.axis[2].in) continue;
          const float v = static_cast<float>(load(plane, row + ix));
          sum += v;
          ++inside;
          if (v > best || isnan(v)) best = v;
        }
      }
    }
    const float mean = sum / static_cast<float>(count_include_pad ? padded : inside);
    y[i] = narrow<T>(max ? best : mean);
  }
}

constexpr int k_warp = 32;

template <class T>
__global__ void global_pool_kernel(const T* x, T* y, std::int64_t planes, std::int64_t length,
                                   bool max) {
  const int lane = static_cast<int>(threadIdx.x) % k_warp;
  const std::int64_t warps = std::int64_t{gridDim.x} * (blockDim.x / k_warp);
  for (std::int64_t p = (blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x) / k_warp; p < planes;
       p += warps) {
    float best = -INFINITY;
    float sum = 0;
    for (std::int64_t i = lane; i < length; i += k_warp) {
      const float v = static_cast<float>(load(x, p * length + i));
      sum += v;
      if (v > best || isnan(v)) best = v;
    }
    for (int offset = k_warp / 2; offset > 0; offset /= 2) {
      sum += __shfl_down_sync(0xFFFFFFFFU, sum, offset);
      const float other = __shfl_down_sync(0xFFFFFFFFU, best, offset);
      if (other > best || isnan(other)) best = other;
    }
    if (lane == 0) y[p] = narrow<T>(max ? best : sum / static_cast<float>(length));
  }
}

template <class T>
__global__ void batch_norm_kernel(const T* x, const float* scale, const float* bias,
                                  const float* mean, const float* var, T* y, std::int64_t count,
                                  std::int64_t channels, std::int64_t inner, float epsilon) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < count;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t c = (i / inner) % channels;
    const float multiplier = scale[c] / sqrtf(var[c] + epsilon);
    const float offset = bias[c] - mean[c] * multiplier;
    y[i] = narrow<T>(static_cast<float>(load(x, i)) * multiplier + offset);
  }
}

template <class T, class I>
__global__ void gather_elements_kernel(const T* data, const I* indices, T* out, index_plan plan,
                                       std::int64_t axis_stride, std::int64_t axis_size,
                                       int* error_flag, int error_code) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < plan.count;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t index = indices[i];
    if (index < 0) index += axis_size;
    if (index >= 0 && index < axis_size) {
      out[i] = data[offset_of(plan, 0, i) + index * axis_stride];
    } else {
      out[i] = T{};
      atomicCAS(error_flag, 0, error_code);
    }
  }
}

}  // namespace

void launch_conv(dtype type, const void* x, const void* w, const void* bias, void* y,
                 const conv_plan& plan, void* stream) {
  const std::int64_t count = plan.batch * plan.maps * plan.out_count;
  if (count == 0) return;
  dispatch(type, float_list{}, [&](auto t) {
    using T = typename decltype(t)::type;
    conv_kernel<<<grid_for(count), k_block, 0, as_stream(stream)>>>(
        static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias),
        static_cast<T*>(y), plan);
  });
  check_launch();
}

void launch_im2col(dtype type, const void* x, void* col, const conv_plan& plan, std::int64_t pitch,
                   std::int64_t images, void* stream) {
  const std::int64_t count = images * plan.channels * plan.kernel_count * plan.out_count;
  if (count == 0) return;
  dispatch(type, float_list{}, [&](auto t) {
    using T = typename decltype(t)::type;
    im2col_kernel<<<grid_for(count), k_block, 0, as_stream(stream)>>>(
        static_cast<const T*>(x), static_cast<T*>(col), plan, pitch, images);
  });
  check_launch();
}

void launch_pool(dtype type, bool max, bool count_include_pad, const void* x, void* y,
                 const conv_plan& plan, void* stream) {
  const std::int64_t count = plan.batch * plan.channels * plan.out_count;
  if (count == 0) return;
  dispatch(type, float_list{}, [&](auto t) {
    using T = typename decltype(t)::type;
    pool_kernel<<<grid_for(count), k_block, 0, as_stream(stream)>>>(
        static_cast<const T*>(x), static_cast<T*>(y), plan, max, count_include_pad);
  });
  check_launch();
}

void launch_global_pool(dtype type, bool max, const void* x, void* y, std::int64_t planes,
                        std::int64_t length, void* stream) {
  if (planes == 0) return;
  dispatch(type, float_list{}, [&](auto t) {
    using T = typename decltype(t)::type;
    global_pool_kernel<<<grid_for(planes * k_warp), k_block, 0, as_stream(stream)>>>(
        static_cast<const T*>(x), static_cast<T*>(y), planes, length, max);
  });
  check_launch();
}

void launch_batch_norm(dtype type, const void* x, const float* scale, const float* bias,
                       const float* mean, const float* var, void* y, std::int64_t count,
                       std::int64_t channels, std::int64_t inner, float epsilon, void* stream) {
  if (count == 0) return;
  dispatch(type, float_list{}, [&](auto t) {
    using T = typename decltype(t)::type;
    batch_norm_kernel<<<grid_for(count), k_block, 0, as_stream(stream)>>>(
        static_cast<const T*>(x), scale, bias, mean, var, static_cast<T*>(y), count, channels,
        inner, epsilon);
  });
  check_launch();
}

void launch_gather_elements(std::size_t element, const void* data, const void* indices,
                            bool indices_int64, void* out, const index_plan& plan,
                            std::int64_t axis_stride, std::int64_t axis_size, int* error_flag,
                            int error_code, void* stream) {
  if (plan.count == 0) return;
  dispatch_bytes(element, [&](auto t) {
    using T = typename decltype(t)::type;
    const auto launch = [&](const auto* index) {
      gather_elements_kernel<<<grid_for(plan.count), k_block, 0, as_stream(stream)>>>(
          static_cast<const T*>(data), index, static_cast<T*>(out), plan, axis_stride, axis_size,
          error_flag, error_code);
    };
    if (indices_int64) {
      launch(static_cast<const std::int64_t*>(indices));
    } else {
      launch(static_cast<const std::int32_t*>(indices));
    }
  });
  check_launch();
}

}  // namespace coolbench::engine::cuda
