// Conv as products (engine/backends/cuda/conv_gemm.hpp) on the CPU: the plan, and the whole
// data flow of conv_gemm.cpp (bias into Y, the columns of each chunk of images by the kernel's own
// index function, one batched product per group at the plan's offsets) emulated on host buffers
// against a direct convolution written from ONNX's definition, over 1 to 3 spatial axes,
// padding, strides, dilations, groups and chunks. The cuBLASLt call and the launch are the GPU
// parity test's (cuda_parity_nn.cpp).
#include "engine/backends/cuda/conv_gemm.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace coolbench::engine::cuda {
namespace {

struct axis_spec {
  std::int64_t in, kernel, stride = 1, dilation = 1, pad_begin = 0, pad_end = 0;
};

// Spatial axes are the trailing ones; the leading unused ones are of size 1.
window_geometry geometry(const std::vector<axis_spec>& axes) {
  window_geometry g;
  const std::size_t lead = window_geometry::k_axes - axes.size();
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const axis_spec& s = axes[i];
    window_axis& a = g.axis[lead + i];
    a.in = s.in;
    a.kernel = s.kernel;
    a.stride = s.stride;
    a.dilation = s.dilation;
    a.pad_begin = s.pad_begin;
    a.pad_end = s.pad_end;
    a.out = (s.in + s.pad_begin + s.pad_end - s.dilation * (s.kernel - 1) - 1) / s.stride + 1;
  }
  return g;
}

struct conv_case {
  std::int64_t batch, channels, maps, group;
  window_geometry g;
  bool bias = true;
};

// Y[n, m, o] = bias[m] + sum over the group's channels c and taps of X[n, c, i] W[m, c', k],
// with i = o * stride - pad_begin + k * dilation on every axis, straight from ONNX's Conv.
std::vector<double> direct(const conv_case& c, const std::vector<double>& x,
                           const std::vector<double>& w, const std::vector<double>& bias) {
  const window_geometry& g = c.g;
  const std::int64_t in = g.in_count(), out = g.out_count(), taps = g.kernel_count();
  const std::int64_t gc = c.channels / c.group, gm = c.maps / c.group;
  std::vector<double> y(static_cast<std::size_t>(c.batch * c.maps * out));
  for (std::int64_t n = 0; n < c.batch; ++n) {
    for (std::int64_t m = 0; m < c.maps; ++m) {
      for (std::int64_t o = 0; o < out; ++o) {
        const std::int64_t oz = o / (g.axis[1].out * g.axis[2].out);
        const std::int64_t oy = (o / g.axis[2].out) % g.axis[1].out, ox = o % g.axis[2].out;
        double acc = c.bias ? bias[static_cast<std::size_t>(m)] : 0.0;
        for (std::int64_t ci = 0; ci < gc; ++ci) {
          const std::int64_t channel = m / gm * gc + ci;
          for (std::int64_t kz = 0; kz < g.axis[0].kernel; ++kz) {
            for (std::int64_t ky = 0; ky < g.axis[1].kernel; ++ky) {
              for (std::int64_t kx = 0; kx < g.axis[2].kernel; ++kx) {
                const std::int64_t iz =
                    oz * g.axis[0].stride - g.axis[0].pad_begin + kz * g.axis[0].dilation;
                const std::int64_t iy =
                    oy * g.axis[1].stride - g.axis[1].pad_begin + ky * g.axis[1].dilation;
                const std::int64_t ix =
                    ox * g.axis[2].stride - g.axis[2].pad_begin + kx * g.axis[2].dilation;
                if (iz < 0 || iz >= g.axis[0].in || iy < 0 || iy >= g.axis[1].in || ix < 0 ||
                    ix >= g.axis[2].in) {
                  continue;
                }
                const std::int64_t tap = (kz * g.axis[1].kernel + ky) * g.axis[2].kernel + kx;
                acc += x[static_cast<std::size_t>((n * c.channels + channel) * in +
                                                  (iz * g.axis[1].in + iy) * g.axis[2].in + ix)] *
                       w[static_cast<std::size_t>((m * gc + ci) * taps + tap)];
              }
            }
          }
        }
        y[static_cast<std::size_t>((n * c.maps + m) * out + o)] = acc;
      }
    }
  }
  return y;
}

// conv_gemm.cpp's steps on host buffers: Y = bias, then per chunk the columns (im2col_kernel's
// loop, by the same index function) and per group Y += W x col at conv_gemm_product's offsets.
std::vector<double> as_products(const conv_case& c, const conv_gemm_plan& p,
                                const std::vector<double>& x, const std::vector<double>& w,
                                const std::vector<double>& bias) {
  const window_geometry& g = c.g;
  const std::int64_t in = g.in_count(), out = g.out_count(), taps = g.kernel_count();
  std::vector<double> y(static_cast<std::size_t>(c.batch * c.maps * out), 0.0);
  if (c.bias) {
    for (std::size_t i = 0; i < y.size(); ++i) {
      y[i] = bias[(i / static_cast<std::size_t>(out)) % static_cast<std::size_t>(c.maps)];
    }
  }
  // Poisoned, so a pitch column or a row the products should not read shows.
  std::vector<double> columns(static_cast<std::size_t>(p.chunk * p.rows * p.pitch), std::nan(""));
  for (std::int64_t first = 0; first < c.batch; first += p.chunk) {
    const std::int64_t images = std::min(p.chunk, c.batch - first);
    const double* images_x = x.data() + first * c.channels * in;
    const double* col = images_x;
    if (!p.direct_input) {
      for (std::int64_t i = 0; i < images * p.rows * out; ++i) {
        const std::int64_t pos = i % out, row = (i / out) % p.rows, image = i / (out * p.rows);
        const std::int64_t source = im2col_source(g, row % taps, pos);
        const double* plane = images_x + (image * c.channels + row / taps) * in;
        columns[static_cast<std::size_t>((image * p.rows + row) * p.pitch + pos)] =
            source < 0 ? 0.0 : plane[source];
      }
      col = columns.data();
    }
    for (std::int64_t group = 0; group < c.group; ++group) {
      const conv_gemm_step s = conv_gemm_product(p, c.maps, first, images, group);
      for (std::int64_t b = 0; b < s.batch; ++b) {
        for (std::int64_t m = 0; m < s.m; ++m) {
          for (std::int64_t n = 0; n < s.n; ++n) {
            double acc = 0;
            for (std::int64_t k = 0; k < s.k; ++k) {
              acc += w[static_cast<std::size_t>(s.a_offset + m * s.k + k)] *
                     col[s.b_offset + b * s.stride_b + k * s.ldb + n];
            }
            y[static_cast<std::size_t>(s.y_offset + b * s.stride_y + m * s.n + n)] += acc;
          }
        }
      }
    }
  }
  return y;
}

void expect_products_match(const conv_case& c,
                           std::int64_t scratch_limit = std::int64_t{1} << 30U) {
  const conv_gemm_plan p =
      plan_conv_gemm(c.g, c.batch, c.channels, c.maps, c.group, 2, scratch_limit);
  ASSERT_GT(p.chunk, 0) << "the case should run as products";
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const auto random = [&](std::int64_t n) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (double& e : v) e = u(rng);
    return v;
  };
  const std::vector<double> x = random(c.batch * c.channels * c.g.in_count());
  const std::vector<double> w = random(c.maps * c.channels / c.group * c.g.kernel_count());
  const std::vector<double> bias = random(c.maps);
  const std::vector<double> want = direct(c, x, w, bias);
  const std::vector<double> got = as_products(c, p, x, w, bias);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-9) << "element " << i;
  }
}

TEST(conv_gemm, vit_patch_embedding_is_one_product_of_768_rows) {
  // ViT-B/16: 3 x 16 x 16 taps, stride 16 over 224 x 224: 196 positions, padded to 200 in fp16.
  const window_geometry g = geometry({{224, 16, 16}, {224, 16, 16}});
  const conv_gemm_plan p = plan_conv_gemm(g, 32, 3, 768, 1, 2, std::int64_t{256} << 20U);
  EXPECT_EQ(p.group_maps, 768);
  EXPECT_EQ(p.group_rows, 768);
  EXPECT_EQ(p.columns, 196);
  EXPECT_EQ(p.pitch, 200);
  EXPECT_EQ(p.chunk, 32);  // 32 images' columns: 9.8 MB
  EXPECT_FALSE(p.direct_input);
  // float32: 4 elements in 16 bytes, 196 already a multiple.
  EXPECT_EQ(plan_conv_gemm(g, 1, 3, 768, 1, 4, 1 << 30).pitch, 196);
}

TEST(conv_gemm, a_pointwise_kernel_reads_x_as_its_columns) {
  const window_geometry g = geometry({{14, 1}, {14, 1}});
  const conv_gemm_plan p = plan_conv_gemm(g, 4, 64, 256, 1, 2, 1 << 30);
  EXPECT_TRUE(p.direct_input);
  EXPECT_EQ(p.pitch, 196);  // X's own rows, unpadded
  EXPECT_EQ(p.chunk, 4);
  // Strided or padded 1x1 kernels still unfold.
  EXPECT_FALSE(
      plan_conv_gemm(geometry({{14, 1, 2}, {14, 1, 2}}), 4, 64, 256, 1, 2, 1 << 30).direct_input);
  EXPECT_FALSE(plan_conv_gemm(geometry({{14, 1, 1, 1, 1, 1}, {14, 1}}), 4, 64, 256, 1, 2, 1 << 30)
                   .direct_input);
}

TEST(conv_gemm, small_groups_stay_with_the_direct_kernel) {
  const window_geometry g = geometry({{56, 3, 1, 1, 1, 1}, {56, 3, 1, 1, 1, 1}});
  EXPECT_EQ(plan_conv_gemm(g, 8, 64, 64, 64, 2, 1 << 30).chunk, 0);                  // depthwise
  EXPECT_EQ(plan_conv_gemm(g, 8, 64, 4, 1, 2, 1 << 30).chunk, 0);                    // 4 maps
  EXPECT_EQ(plan_conv_gemm(geometry({{56, 1}}), 8, 4, 64, 1, 2, 1 << 30).chunk, 0);  // 4 rows
  EXPECT_EQ(plan_conv_gemm(g, 8, 64, 64, 3, 2, 1 << 30).chunk, 0);  // no 3 equal groups
  EXPECT_GT(plan_conv_gemm(g, 8, 64, 64, 4, 2, 1 << 30).chunk, 0);  // 16 maps, 144 rows a group
}

TEST(conv_gemm, the_scratch_limit_cuts_the_batch_into_chunks) {
  // ResNet-50's first 3x3 layer at batch 32 in fp16: 576 rows x 3136 positions a image, 3.6 MB.
  const window_geometry g = geometry({{56, 3, 1, 1, 1, 1}, {56, 3, 1, 1, 1, 1}});
  const std::int64_t image = 576 * 3136 * 2;
  EXPECT_EQ(plan_conv_gemm(g, 32, 64, 64, 1, 2, 10 * image).chunk, 10);
  EXPECT_EQ(plan_conv_gemm(g, 32, 64, 64, 1, 2, image / 2).chunk, 1);  // one at least
  EXPECT_EQ(plan_conv_gemm(g, 32, 64, 64, 1, 2, std::int64_t{1} << 40U).chunk, 32);
}

TEST(conv_gemm, products_give_the_direct_convolution) {
  // 2-D with padding, stride and an odd size; a ViT-like patchify; dilation; 1-D; 3-D.
  expect_products_match({2, 3, 8, 1, geometry({{9, 3, 2, 1, 1, 1}, {7, 3, 1, 1, 1, 0}})});
  expect_products_match({3, 3, 16, 1, geometry({{32, 8, 8}, {32, 8, 8}})});
  expect_products_match({2, 4, 8, 1, geometry({{11, 3, 1, 2, 2, 2}, {10, 2, 3, 3, 0, 1}})});
  expect_products_match({2, 5, 9, 1, geometry({{17, 5, 2, 1, 2, 2}}), false});
  expect_products_match(
      {2, 2, 8, 1, geometry({{5, 2, 1, 1, 1, 0}, {6, 3, 2}, {4, 2, 1, 1, 0, 1}})});
}

TEST(conv_gemm, groups_pointwise_kernels_and_chunks_give_the_direct_convolution) {
  // Two groups of 8 maps over 4 channels each, 3x3 taps: 36 rows a group.
  expect_products_match({3, 8, 16, 2, geometry({{6, 3, 1, 1, 1, 1}, {7, 3, 1, 1, 1, 1}})});
  // Pointwise: X is its own columns, with and without groups.
  expect_products_match({3, 16, 8, 1, geometry({{5, 1}, {3, 1}})});
  expect_products_match({2, 32, 16, 2, geometry({{4, 1}, {6, 1}}), false});
  // A scratch of one and two images' columns: chunks of 1, and of 2 with a last chunk of 1.
  const conv_case c{5, 3, 8, 1, geometry({{7, 3, 2, 1, 1, 1}, {6, 3, 1, 1, 0, 0}})};
  const conv_gemm_plan one = plan_conv_gemm(c.g, c.batch, c.channels, c.maps, 1, 2, 1);
  ASSERT_EQ(one.chunk, 1);
  expect_products_match(c, 1);
  expect_products_match(c, 2 * one.rows * one.pitch * 2);
}

}  // namespace
}  // namespace coolbench::engine::cuda
