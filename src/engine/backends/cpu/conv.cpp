// Conv as im2col and one sgemm per image and group: the input patches of a
// group laid out as a [C/group * kernel, output positions] matrix, multiplied
// by the group's [M/group, C/group * kernel] weights.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "engine/backends/cpu/blas.hpp"
#include "engine/backends/cpu/float_io.hpp"
#include "engine/backends/cpu/kernel_args.hpp"
#include "engine/backends/cpu/nn.hpp"
#include "engine/window.hpp"

namespace coolbench::engine::cpu {
namespace {

// Rows are (channel, kernel position), columns output positions; taps in the
// padding are 0.
void im2col(const float* image, std::int64_t channels, const window_geometry& g, float* col) {
  const window_axis& z = g.axis[0];
  const window_axis& y = g.axis[1];
  const window_axis& x = g.axis[2];
  const std::int64_t positions = g.out_count();
  float* row = col;
  for (std::int64_t c = 0; c < channels; ++c) {
    const float* plane = image + c * g.in_count();
    for (std::int64_t kz = 0; kz < z.kernel; ++kz) {
      for (std::int64_t ky = 0; ky < y.kernel; ++ky) {
        for (std::int64_t kx = 0; kx < x.kernel; ++kx, row += positions) {
          float* to = row;
          for (std::int64_t oz = 0; oz < z.out; ++oz) {
            const std::int64_t iz = oz * z.stride - z.pad_begin + kz * z.dilation;
            for (std::int64_t oy = 0; oy < y.out; ++oy) {
              const std::int64_t iy = oy * y.stride - y.pad_begin + ky * y.dilation;
              const bool inside = iz >= 0 && iz < z.in && iy >= 0 && iy < y.in;
              const float* line = plane + (iz * y.in + iy) * x.in;
              for (std::int64_t ox = 0; ox < x.out; ++ox) {
                const std::int64_t ix = ox * x.stride - x.pad_begin + kx * x.dilation;
                *to++ = inside && ix >= 0 && ix < x.in ? line[ix] : 0.0F;
              }
            }
          }
        }
      }
    }
  }
}

struct conv_shapes {
  std::int64_t batch = 0, channels = 0, maps = 0, group = 1;
  window_geometry geometry;
  shape_t out;
};

conv_shapes conv_shapes_of(const node& n, const tensor& x, const tensor& w, const tensor* b) {
  if (x.rank() < 3 || w.rank() != x.rank()) {
    fail(n, "expected X of rank >= 3 ([N, C, spatial...]) and W of the same rank, got X " +
                to_string(x.shape()) + " and W " + to_string(w.shape()));
  }
  conv_shapes s;
  s.batch = x.shape()[0];
  s.channels = x.shape()[1];
  s.maps = w.shape()[0];
  s.group = n.get<std::int64_t>("group", 1);
  if (s.group < 1 || s.channels != w.shape()[1] * s.group || s.maps % s.group != 0) {
    fail(n, "expected X's channels (" + std::to_string(s.channels) + ") to equal W's " +
                std::to_string(w.shape()[1]) + " times group " + std::to_string(s.group) +
                ", and W's " + std::to_string(s.maps) + " maps to divide by the group");
  }
  if (b != nullptr && (b->type() != x.type() || b->shape() != shape_t{s.maps})) {
    fail(n, "expected B of " + std::string(to_string(x.type())) + " [" + std::to_string(s.maps) +
                "], got " + std::string(to_string(b->type())) + " " + to_string(b->shape()));
  }
  const std::vector<std::int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  const window_attributes a = read_window_attributes(n, x.rank() - 2, kernel);
  s.geometry = resolve_window(n, a, x.shape());
  s.out = window_output_shape(s.geometry, s.batch, s.maps, x.rank() - 2);
  return s;
}

void conv(const node& n, inputs_t inputs, outputs_t outputs) {
  const tensor& x = require_input(n, inputs, 0, "X");
  const tensor& w = require_input(n, inputs, 1, "W");
  const tensor* b = optional_input(inputs, 2);
  require_float(n, x, "X");
  if (w.type() != x.type()) {
    fail(n, "expected W of X's dtype " + std::string(to_string(x.type())) + ", got " +
                std::string(to_string(w.type())));
  }
  const conv_shapes s = conv_shapes_of(n, x, w, b);
  const window_geometry& g = s.geometry;
  const std::int64_t group_channels = s.channels / s.group;
  const std::int64_t group_maps = s.maps / s.group;
  const std::int64_t rows = group_channels * g.kernel_count();
  const std::int64_t positions = g.out_count();
  std::vector<float> result(static_cast<std::size_t>(element_count(s.out)), 0.0F);
  if (!result.empty() && rows > 0) {
    const float_values xv = read_floats(x);
    const float_values wv = read_floats(w);
    std::vector<float> col(static_cast<std::size_t>(rows * positions));
    for (std::int64_t i = 0; i < s.batch; ++i) {
      for (std::int64_t k = 0; k < s.group; ++k) {
        im2col(xv.values.data() + (i * s.channels + k * group_channels) * g.in_count(),
               group_channels, g, col.data());
        blas_sgemm(false, false, static_cast<int>(group_maps), static_cast<int>(positions),
                   static_cast<int>(rows), 1.0F, wv.values.data() + k * group_maps * rows,
                   static_cast<int>(rows), col.data(), static_cast<int>(positions), 0.0F,
                   result.data() + (i * s.maps + k * group_maps) * positions,
                   static_cast<int>(positions));
      }
    }
  }
  if (b != nullptr && !result.empty()) {
    const float_values bv = read_floats(*b);
    for (std::int64_t i = 0; i < s.batch; ++i) {
      for (std::int64_t m = 0; m < s.maps; ++m) {
        float* plane = result.data() + (i * s.maps + m) * positions;
        std::for_each(plane, plane + positions, [&](float& v) { v += bv.values[m]; });
      }
    }
  }
  outputs[0] = make_output(x.type(), s.out, result);
}

constexpr std::array<kernel_entry, 1> k_kernels = {{{"Conv", conv}}};

}  // namespace

std::span<const kernel_entry> conv_kernels() { return k_kernels; }

}  // namespace coolbench::engine::cpu
