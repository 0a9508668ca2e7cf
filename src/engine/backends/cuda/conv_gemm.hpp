// Conv as a product (conv_gemm.cpp): the input unfolded into columns (im2col) and one cuBLASLt
// product per group, Y[n] = W[maps, C*K] x col[n][C*K, out]. The direct kernel (nn.cu) does a
// thread per output element and reads each input element K times from memory; a ViT's patch
// embedding or a ResNet's 3x3 layers are GEMMs of hundreds of GFLOP/s on tensor cores instead.
// The index math is here, for the kernel and for the CPU test that checks it (conv_gemm_test).
#pragma once

#include <algorithm>
#include <cstdint>

#include "engine/window_geometry.hpp"

#if defined(__CUDACC__)
#define COOLBENCH_CONV_HOST_DEVICE __host__ __device__
#else
#define COOLBENCH_CONV_HOST_DEVICE
#endif

namespace coolbench::engine::cuda {

/// The offset within one input plane that kernel tap `tap` (of geometry.kernel_count()) reads
/// for output position `pos` (of geometry.out_count()), or -1 where it falls on the padding.
COOLBENCH_CONV_HOST_DEVICE inline std::int64_t im2col_source(const window_geometry& g,
                                                             std::int64_t tap, std::int64_t pos) {
  const std::int64_t k[3] = {tap / (g.axis[1].kernel * g.axis[2].kernel),
                             (tap / g.axis[2].kernel) % g.axis[1].kernel, tap % g.axis[2].kernel};
  const std::int64_t o[3] = {pos / (g.axis[1].out * g.axis[2].out),
                             (pos / g.axis[2].out) % g.axis[1].out, pos % g.axis[2].out};
  std::int64_t offset = 0;
  for (int a = 0; a < window_geometry::k_axes; ++a) {
    const window_axis& axis = g.axis[a];
    const std::int64_t i = o[a] * axis.stride - axis.pad_begin + k[a] * axis.dilation;
    if (i < 0 || i >= axis.in) return -1;
    offset = offset * axis.in + i;
  }
  return offset;
}

/// How a Conv runs as products: the columns' shape and pitch, and how many images at a time.
struct conv_gemm_plan {
  std::int64_t group_maps = 0;  ///< M of each product: maps / group
  std::int64_t group_rows = 0;  ///< K of each product: channels / group * kernel taps
  std::int64_t rows = 0;        ///< rows of one image's columns: channels * kernel taps
  std::int64_t columns = 0;     ///< N of each product: output positions
  std::int64_t pitch = 0;       ///< elements between column rows (16-byte multiples)
  std::int64_t chunk = 0;       ///< images unfolded at a time (the scratch holds that many)
  bool direct_input = false;    ///< a 1x1 kernel, stride 1, no padding: X is its own columns
};

/// The plan for a Conv of `batch` images, or a plan with chunk == 0 where the direct kernel is
/// the better choice: groups too small for tensor cores (depthwise, a few maps or rows each).
/// `element` is the dtype's size; the columns take at most `scratch_limit` bytes (at least one
/// image's, whatever the limit).
[[nodiscard]] inline conv_gemm_plan plan_conv_gemm(const window_geometry& g, std::int64_t batch,
                                                   std::int64_t channels, std::int64_t maps,
                                                   std::int64_t group, std::int64_t element,
                                                   std::int64_t scratch_limit) {
  conv_gemm_plan p;
  if (group < 1 || batch < 1 || channels % group != 0 || maps % group != 0) return p;
  const std::int64_t taps = g.kernel_count();
  p.group_maps = maps / group;
  p.group_rows = channels / group * taps;
  p.rows = channels * taps;
  p.columns = g.out_count();
  // Below 8 rows or maps a product is a dot product per element: the direct kernel wins.
  if (p.group_maps < 8 || p.group_rows < 8 || p.columns < 1) return p;
  bool unit = taps == 1;
  for (const window_axis& a : g.axis) {
    unit = unit && a.stride == 1 && a.pad_begin == 0 && a.pad_end == 0 && a.in == a.out;
  }
  p.direct_input = unit;
  const std::int64_t vector = 16 / element;
  p.pitch = unit ? p.columns : (p.columns + vector - 1) / vector * vector;
  const std::int64_t image_bytes = p.rows * p.pitch * element;
  p.chunk = unit ? batch : std::max<std::int64_t>(1, std::min(batch, scratch_limit / image_bytes));
  return p;
}

/// One batched product of a Conv as products, offsets in elements: Y[y_offset + i * stride_y]
/// (+)= W[a_offset] x col[b_offset + i * stride_b] for the chunk's `batch` images, M x K by
/// K x N with col's rows `ldb` apart (Y's dense, `columns` apart).
struct conv_gemm_step {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t a_offset = 0, b_offset = 0, y_offset = 0;
  std::int64_t batch = 0, stride_b = 0, stride_y = 0, ldb = 0;
};

/// The product of group `group` for the images [first, first + images): col is the chunk's
/// columns (or, with direct_input, X from image `first` on).
[[nodiscard]] inline conv_gemm_step conv_gemm_product(const conv_gemm_plan& g, std::int64_t maps,
                                                      std::int64_t first, std::int64_t images,
                                                      std::int64_t group) {
  conv_gemm_step s;
  s.m = g.group_maps;
  s.n = g.columns;
  s.k = g.group_rows;
  s.a_offset = group * g.group_maps * g.group_rows;
  s.b_offset = group * g.group_rows * g.pitch;
  s.y_offset = (first * maps + group * g.group_maps) * g.columns;
  s.batch = images;
  s.stride_b = g.rows * g.pitch;
  s.stride_y = maps * g.columns;
  s.ldb = g.pitch;
  return s;
}

}  // namespace coolbench::engine::cuda
