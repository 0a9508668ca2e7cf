// MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool and the inference
// form of BatchNormalization, each over [N, C, spatial...] in float32.
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/backends/cpu/float_io.hpp"
#include "engine/backends/cpu/kernel_args.hpp"
#include "engine/backends/cpu/nn.hpp"
#include "engine/window.hpp"

namespace coolbench::engine::cpu {
namespace {

const tensor& float_input(const node& n, inputs_t inputs, std::size_t index, const char* what) {
  const tensor& t = require_input(n, inputs, index, what);
  require_float(n, t, what);
  return t;
}

// The optional outputs beyond the first that the model names; the kernels
// here compute the first only.
void refuse_extra_outputs(const node& n, const char* what) {
  for (std::size_t i = 1; i < n.outputs.size(); ++i) {
    if (!n.outputs[i].empty()) fail(n, std::string("unsupported output ") + what);
  }
}

// One output element: the taps of the window at (oz, oy, ox) of `plane`.
// Max ignores the padding; the average divides by the taps inside the input,
// or with count_include_pad by those inside the padded input.
template <bool Max>
float pool_at(const float* plane, const window_geometry& g, const std::array<std::int64_t, 3>& o,
              bool count_include_pad) {
  double sum = 0;
  float best = -std::numeric_limits<float>::infinity();
  std::int64_t inside = 0;
  std::int64_t padded = 0;
  std::array<std::int64_t, 3> i{};
  for (std::int64_t kz = 0; kz < g.axis[0].kernel; ++kz) {
    for (std::int64_t ky = 0; ky < g.axis[1].kernel; ++ky) {
      for (std::int64_t kx = 0; kx < g.axis[2].kernel; ++kx) {
        const std::array<std::int64_t, 3> k = {kz, ky, kx};
        bool in_input = true;
        bool in_padded = true;
        for (std::size_t d = 0; d < 3; ++d) {
          const window_axis& a = g.axis[d];
          i[d] = o[d] * a.stride - a.pad_begin + k[d] * a.dilation;
          in_input = in_input && i[d] >= 0 && i[d] < a.in;
          in_padded = in_padded && i[d] >= -a.pad_begin && i[d] < a.in + a.pad_end;
        }
        padded += in_padded ? 1 : 0;
        if (!in_input) continue;
        const float v = plane[(i[0] * g.axis[1].in + i[1]) * g.axis[2].in + i[2]];
        ++inside;
        sum += v;
        if (v > best || std::isnan(v)) best = v;
      }
    }
  }
  if constexpr (Max) {
    return best;
  } else {
    return static_cast<float>(sum / static_cast<double>(count_include_pad ? padded : inside));
  }
}

template <bool Max>
void pool(const node& n, inputs_t inputs, outputs_t outputs) {
  const tensor& x = float_input(n, inputs, 0, "X");
  if constexpr (Max) {
    // storage_order only changes Indices, which is refused.
    refuse_extra_outputs(n, "Indices (the argmax of each window): MaxPool computes Y only");
  }
  if (x.rank() < 3)
    fail(n, "expected X of rank >= 3 ([N, C, spatial...]), got " + to_string(x.shape()));
  const window_attributes a = read_window_attributes(n, x.rank() - 2, {});
  const window_geometry g = resolve_window(n, a, x.shape());
  const shape_t out_shape = window_output_shape(g, x.shape()[0], x.shape()[1], x.rank() - 2);
  const bool count_include_pad = n.get<std::int64_t>("count_include_pad", 0) != 0;
  const std::int64_t planes = x.shape()[0] * x.shape()[1];
  std::vector<float> result(static_cast<std::size_t>(element_count(out_shape)));
  const float_values xv = read_floats(x);
  float* to = result.data();
  for (std::int64_t p = 0; p < planes && !result.empty(); ++p) {
    const float* plane = xv.values.data() + p * g.in_count();
    for (std::int64_t oz = 0; oz < g.axis[0].out; ++oz) {
      for (std::int64_t oy = 0; oy < g.axis[1].out; ++oy) {
        for (std::int64_t ox = 0; ox < g.axis[2].out; ++ox) {
          *to++ = pool_at<Max>(plane, g, {oz, oy, ox}, count_include_pad);
        }
      }
    }
  }
  outputs[0] = make_output(x.type(), out_shape, result);
}

template <bool Max>
void global_pool(const node& n, inputs_t inputs, outputs_t outputs) {
  const tensor& x = float_input(n, inputs, 0, "X");
  if (x.rank() < 3)
    fail(n, "expected X of rank >= 3 ([N, C, spatial...]), got " + to_string(x.shape()));
  shape_t out_shape(x.rank(), 1);
  out_shape[0] = x.shape()[0];
  out_shape[1] = x.shape()[1];
  const std::int64_t planes = out_shape[0] * out_shape[1];
  const std::int64_t length = product(x.shape(), 2, x.rank());
  const float_values xv = read_floats(x);
  std::vector<float> result(static_cast<std::size_t>(planes));
  for (std::int64_t p = 0; p < planes; ++p) {
    double sum = 0;
    float best = -std::numeric_limits<float>::infinity();
    for (std::int64_t i = 0; i < length; ++i) {
      const float v = xv.values[p * length + i];
      sum += v;
      if (v > best || std::isnan(v)) best = v;
    }
    // The mean of an empty plane is 0/0, NaN, as numpy gives.
    result[p] = Max ? best : static_cast<float>(sum / static_cast<double>(length));
  }
  outputs[0] = make_output(x.type(), out_shape, result);
}

void batch_norm(const node& n, inputs_t inputs, outputs_t outputs) {
  const tensor& x = float_input(n, inputs, 0, "X");
  if (n.get<std::int64_t>("training_mode", 0) != 0) {
    fail(n,
         "unsupported training_mode 1 (batch statistics and running-mean outputs); the "
         "engine runs inference only: export the model in eval mode");
  }
  if (n.get<std::int64_t>("spatial", 1) == 0) {
    fail(n, "unsupported spatial 0 (per-element statistics, opset < 9)");
  }
  refuse_extra_outputs(n,
                       "of BatchNormalization's training form (mean, var, saved statistics); "
                       "the engine runs inference only");
  if (x.rank() < 2) fail(n, "expected X of rank >= 2 ([N, C, ...]), got " + to_string(x.shape()));
  const std::int64_t channels = x.shape()[1];
  const char* names[] = {"scale", "B", "input_mean", "input_var"};
  std::vector<float_values> params;
  for (std::size_t i = 0; i < 4; ++i) {
    const tensor& p = float_input(n, inputs, i + 1, names[i]);
    if (p.shape() != shape_t{channels}) {
      fail(n, std::string("expected ") + names[i] + " of shape [" + std::to_string(channels) +
                  "] (X's channels), got " + to_string(p.shape()));
    }
    params.push_back(read_floats(p));
  }
  const auto epsilon = n.get<float>("epsilon", 1e-5F);
  std::vector<float> multiplier(static_cast<std::size_t>(channels));
  std::vector<float> offset(static_cast<std::size_t>(channels));
  for (std::int64_t c = 0; c < channels; ++c) {
    multiplier[c] = params[0].values[c] / std::sqrt(params[3].values[c] + epsilon);
    offset[c] = params[1].values[c] - params[2].values[c] * multiplier[c];
  }
  const std::int64_t inner = product(x.shape(), 2, x.rank());
  const float_values xv = read_floats(x);
  std::vector<float> result(xv.values.size());
  for (std::size_t i = 0; i < result.size(); ++i) {
    const auto c = static_cast<std::size_t>((static_cast<std::int64_t>(i) / inner) % channels);
    result[i] = xv.values[i] * multiplier[c] + offset[c];
  }
  outputs[0] = make_output(x.type(), x.shape(), result);
}

constexpr std::array<kernel_entry, 5> k_kernels = {{
    {"AveragePool", pool<false>},
    {"BatchNormalization", batch_norm},
    {"GlobalAveragePool", global_pool<false>},
    {"GlobalMaxPool", global_pool<true>},
    {"MaxPool", pool<true>},
}};

}  // namespace

std::span<const kernel_entry> pool_kernels() { return k_kernels; }

}  // namespace coolbench::engine::cpu
