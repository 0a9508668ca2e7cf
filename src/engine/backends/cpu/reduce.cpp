#include "engine/backends/cpu/reduce.hpp"

#include "engine/backends/cpu/float_io.hpp"
#include "engine/backends/cpu/kernel_args.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace coolbench::engine::cpu {
namespace {

/// Input `index`, which must be present and float32 or float16.
const tensor& float_input(const node& n, std::span<const tensor* const> inputs, std::size_t index,
                          const char* what) {
  const tensor& t = require_input(n, inputs, index, what);
  require_float(n, t, what);
  return t;
}

enum class reduce_kind : std::uint8_t { mean, sum, max };

template <reduce_kind Kind>
void run_reduce(const node& n, std::span<const tensor* const> inputs, std::span<tensor> outputs) {
  const tensor& x = float_input(n, inputs, 0, "data");
  const std::size_t rank = x.rank();

  // Newer opsets pass axes as an optional input, older ones as an attribute.
  std::vector<std::int64_t> axes;
  if (inputs.size() > 1 && inputs[1] != nullptr) {
    const tensor& axes_tensor = *inputs[1];
    if (axes_tensor.type() != dtype::int64 || axes_tensor.rank() > 1) {
      throw invalid_argument(n.describe() + ": expected axes as a 1-D int64 tensor, got " +
                             std::string(to_string(axes_tensor.type())) + " " +
                             to_string(axes_tensor.shape()));
    }
    const auto values = axes_tensor.data<std::int64_t>();
    axes.assign(values.begin(), values.end());
  } else {
    axes = n.get<std::vector<std::int64_t>>("axes", {});
  }
  const bool keepdims = n.get<std::int64_t>("keepdims", 1) != 0;
  const bool noop_with_empty_axes = n.get<std::int64_t>("noop_with_empty_axes", 0) != 0;
  if (axes.empty() && noop_with_empty_axes) {
    outputs[0] = x;
    return;
  }

  std::vector<bool> reduced(rank, axes.empty());
  for (const std::int64_t axis : axes) {
    const std::size_t a = normalize_axis(n, axis, rank);
    if (reduced[a]) {
      throw invalid_argument(n.describe() + ": expected distinct axes, got axis " +
                             std::to_string(axis) + " twice");
    }
    reduced[a] = true;
  }

  shape_t out_shape;
  for (std::size_t i = 0; i < rank; ++i) {
    if (!reduced[i]) {
      out_shape.push_back(x.shape()[i]);
    } else if (keepdims) {
      out_shape.push_back(1);
    }
  }
  // Output element stride of each input dimension; 0 for reduced ones, so
  // that walking the input in order lands on the right accumulator.
  std::vector<std::int64_t> out_stride(rank, 0);
  std::int64_t step = 1;
  for (std::size_t i = rank; i-- > 0;) {
    if (!reduced[i]) {
      out_stride[i] = step;
      step *= x.shape()[i];
    }
  }
  const std::int64_t out_count = element_count(out_shape);
  const std::int64_t group = out_count == 0 ? 0 : x.size() / out_count;

  // Double accumulators keep long sums accurate; max of an empty set is -inf.
  std::vector<double> acc(
      static_cast<std::size_t>(out_count),
      Kind == reduce_kind::max ? -std::numeric_limits<double>::infinity() : 0.0);
  const float_values xv = read_floats(x);
  std::vector<std::int64_t> index(rank, 0);
  std::int64_t offset = 0;
  for (const float value : xv.values) {
    double& slot = acc[offset];
    if constexpr (Kind == reduce_kind::max) {
      if (value > slot || std::isnan(value)) slot = value;
    } else {
      slot += value;
    }
    for (std::size_t i = rank; i-- > 0;) {
      offset += out_stride[i];
      if (++index[i] < x.shape()[i]) break;
      offset -= out_stride[i] * index[i];
      index[i] = 0;
    }
  }

  std::vector<float> result(acc.size());
  for (std::size_t i = 0; i < acc.size(); ++i) {
    // The mean of an empty group is 0/0, NaN, as numpy gives.
    const double value = Kind == reduce_kind::mean ? acc[i] / static_cast<double>(group) : acc[i];
    result[i] = static_cast<float>(value);
  }
  outputs[0] = make_output(x.type(), std::move(out_shape), result);
}

template <bool Log>
void run_softmax(const node& n, std::span<const tensor* const> inputs, std::span<tensor> outputs) {
  const tensor& x = float_input(n, inputs, 0, "input");
  const std::size_t axis = normalize_axis(n, n.get<std::int64_t>("axis", -1), x.rank());
  const std::int64_t outer = product(x.shape(), 0, axis);
  const std::int64_t length = x.shape()[axis];
  const std::int64_t inner = product(x.shape(), axis + 1, x.rank());

  const float_values xv = read_floats(x);
  const std::span<const float> in = xv.values;
  std::vector<float> result(in.size());
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      const std::int64_t base = o * length * inner + i;
      // Subtracting the maximum keeps exp() from overflowing.
      float max = -std::numeric_limits<float>::infinity();
      for (std::int64_t j = 0; j < length; ++j) max = std::max(max, in[base + j * inner]);
      // One float exp per element (the kernel's cost), summed in double.
      double sum = 0.0;
      for (std::int64_t j = 0; j < length; ++j) {
        const float e = std::exp(in[base + j * inner] - max);
        if constexpr (!Log) result[base + j * inner] = e;
        sum += e;
      }
      if constexpr (Log) {
        const double log_sum = std::log(sum);
        for (std::int64_t j = 0; j < length; ++j) {
          const double shifted = static_cast<double>(in[base + j * inner] - max);
          result[base + j * inner] = static_cast<float>(shifted - log_sum);
        }
      } else {
        const auto scale = static_cast<float>(1.0 / sum);
        for (std::int64_t j = 0; j < length; ++j) result[base + j * inner] *= scale;
      }
    }
  }
  outputs[0] = make_output(x.type(), x.shape(), result);
}

/// Where each element of the normalized block [axis, rank) of X reads
/// `param` (Scale or B), which must broadcast unidirectionally to it.
std::vector<std::int64_t> broadcast_index(const node& n, const tensor& param,
                                          const shape_t& x_shape, std::size_t axis,
                                          const char* what) {
  const shape_t target(x_shape.begin() + static_cast<std::ptrdiff_t>(axis), x_shape.end());
  const shape_t& ps = param.shape();
  bool fits = ps.size() <= target.size();
  for (std::size_t i = 0; fits && i < ps.size(); ++i) {
    const std::int64_t t = target[target.size() - ps.size() + i];
    fits = ps[i] == 1 || ps[i] == t;
  }
  if (!fits) {
    throw invalid_argument(n.describe() + ": expected " + what + " broadcastable to " +
                           to_string(target) + ", got " + to_string(ps));
  }
  std::vector<std::int64_t> stride(target.size(), 0);
  std::int64_t step = 1;
  for (std::size_t i = ps.size(); i-- > 0;) {
    if (ps[i] != 1) stride[target.size() - ps.size() + i] = step;
    step *= ps[i];
  }
  const std::int64_t count = element_count(target);
  std::vector<std::int64_t> result(static_cast<std::size_t>(count));
  std::vector<std::int64_t> index(target.size(), 0);
  std::int64_t offset = 0;
  for (std::int64_t e = 0; e < count; ++e) {
    result[e] = offset;
    for (std::size_t i = target.size(); i-- > 0;) {
      offset += stride[i];
      if (++index[i] < target[i]) break;
      offset -= stride[i] * index[i];
      index[i] = 0;
    }
  }
  return result;
}

void run_layer_norm(const node& n, std::span<const tensor* const> inputs,
                    std::span<tensor> outputs) {
  const tensor& x = float_input(n, inputs, 0, "X");
  const tensor& scale = float_input(n, inputs, 1, "Scale");
  const tensor* bias = optional_input(inputs, 2);
  // Scale and B may come in another float dtype than X (exporters write a
  // float16 Scale beside a float32 X at times, and onnxruntime runs it): all
  // are read as float; Y has X's dtype.
  if (bias != nullptr && !is_float(bias->type())) {
    throw invalid_argument(n.describe() + ": expected B of a float dtype, got " +
                           std::string(to_string(bias->type())));
  }
  const std::size_t axis = normalize_axis(n, n.get<std::int64_t>("axis", -1), x.rank());
  const float epsilon = n.get<float>("epsilon", 1e-5F);
  const std::int64_t outer = product(x.shape(), 0, axis);
  const std::int64_t length = product(x.shape(), axis, x.rank());

  const std::vector<std::int64_t> scale_at = broadcast_index(n, scale, x.shape(), axis, "Scale");
  const std::vector<std::int64_t> bias_at = bias == nullptr
                                                ? std::vector<std::int64_t>{}
                                                : broadcast_index(n, *bias, x.shape(), axis, "B");
  const float_values xv = read_floats(x);
  const float_values sv = read_floats(scale);
  const float_values bv = bias == nullptr ? float_values{} : read_floats(*bias);

  std::vector<float> result(xv.values.size());
  std::vector<float> means(static_cast<std::size_t>(outer));
  std::vector<float> inv_std_devs(static_cast<std::size_t>(outer));
  for (std::int64_t o = 0; o < outer; ++o) {
    const float* row = xv.values.data() + o * length;
    double sum = 0.0;
    for (std::int64_t j = 0; j < length; ++j) sum += row[j];
    const double mean = sum / static_cast<double>(length);
    // Two passes: the variance of centred values avoids cancellation.
    double squares = 0.0;
    for (std::int64_t j = 0; j < length; ++j) {
      const double d = row[j] - mean;
      squares += d * d;
    }
    const double inv_std_dev =
        1.0 / std::sqrt(squares / static_cast<double>(length) + static_cast<double>(epsilon));
    for (std::int64_t j = 0; j < length; ++j) {
      double value = (row[j] - mean) * inv_std_dev * sv.values[scale_at[j]];
      if (bias != nullptr) value += bv.values[bias_at[j]];
      result[o * length + j] = static_cast<float>(value);
    }
    means[o] = static_cast<float>(mean);
    inv_std_devs[o] = static_cast<float>(inv_std_dev);
  }
  outputs[0] = make_output(x.type(), x.shape(), result);

  // Mean and InvStdDev are stashed in float32 (stash_type 1) whatever X is,
  // with the normalized dimensions kept as 1.
  shape_t stat_shape(x.shape().begin(), x.shape().begin() + static_cast<std::ptrdiff_t>(axis));
  stat_shape.resize(x.rank(), 1);
  if (outputs.size() > 1) outputs[1] = make_output(dtype::float32, stat_shape, means);
  if (outputs.size() > 2) outputs[2] = make_output(dtype::float32, stat_shape, inv_std_devs);
}

constexpr std::array<kernel_entry, 6> k_kernels{{
    {"ReduceMean", run_reduce<reduce_kind::mean>},
    {"ReduceSum", run_reduce<reduce_kind::sum>},
    {"ReduceMax", run_reduce<reduce_kind::max>},
    {"Softmax", run_softmax<false>},
    {"LogSoftmax", run_softmax<true>},
    {"LayerNormalization", run_layer_norm},
}};

}  // namespace

std::span<const kernel_entry> reduce_kernels() { return k_kernels; }

}  // namespace coolbench::engine::cpu
