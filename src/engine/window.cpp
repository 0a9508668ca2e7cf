#include "engine/window.hpp"

#include <algorithm>

#include "coolbench/core/error.hpp"

namespace coolbench::engine {
namespace {

[[noreturn]] void fail(const node& n, const std::string& message) {
  throw invalid_argument(n.describe() + ": " + message);
}

std::string list(const std::vector<std::int64_t>& values) {
  std::string text = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    text += (i == 0 ? "" : ", ") + std::to_string(values[i]);
  }
  return text + "]";
}

std::vector<std::int64_t> read_list(const node& n, const char* name, std::size_t length,
                                    std::int64_t fallback, std::int64_t minimum) {
  if (!n.has(name)) return std::vector<std::int64_t>(length, fallback);
  auto values = n.get<std::vector<std::int64_t>>(name);
  if (values.size() != length) {
    fail(n, std::string("expected ") + name + " of " + std::to_string(length) +
                " values for the input's spatial axes, got " + list(values));
  }
  for (const std::int64_t v : values) {
    if (v < minimum) {
      fail(n, std::string("expected ") + name + " of values >= " + std::to_string(minimum) +
                  ", got " + list(values));
    }
  }
  return values;
}

}  // namespace

window_attributes read_window_attributes(const node& n, std::size_t spatial,
                                         const std::vector<std::int64_t>& kernel) {
  if (spatial == 0) fail(n, "expected an input with at least one spatial axis (rank >= 3)");
  window_attributes a;
  if (n.has("kernel_shape")) {
    a.kernel = read_list(n, "kernel_shape", spatial, 1, 1);
    if (!kernel.empty() && a.kernel != kernel) {
      fail(n, "expected kernel_shape " + list(a.kernel) + " to match the weights' " + list(kernel));
    }
  } else if (!kernel.empty() && kernel.size() == spatial) {
    a.kernel = kernel;
  } else {
    fail(n, "expected a kernel_shape attribute of " + std::to_string(spatial) + " values");
  }
  a.strides = read_list(n, "strides", spatial, 1, 1);
  a.dilations = read_list(n, "dilations", spatial, 1, 1);
  a.pads = read_list(n, "pads", 2 * spatial, 0, 0);
  a.auto_pad = n.get<std::string>("auto_pad", "NOTSET");
  if (a.auto_pad != "NOTSET" && a.auto_pad != "VALID" && a.auto_pad != "SAME_UPPER" &&
      a.auto_pad != "SAME_LOWER") {
    fail(n, "unsupported auto_pad '" + a.auto_pad +
                "': expected NOTSET, VALID, SAME_UPPER or SAME_LOWER");
  }
  if (a.auto_pad != "NOTSET") std::fill(a.pads.begin(), a.pads.end(), 0);
  a.ceil_mode = n.get<std::int64_t>("ceil_mode", 0) != 0;
  return a;
}

window_axis resolve_window_axis(const node& n, const window_attributes& a, std::size_t d,
                                std::int64_t in) {
  const std::size_t spatial = a.kernel.size();
  window_axis w;
  w.in = in;
  w.kernel = a.kernel[d];
  w.stride = a.strides[d];
  w.dilation = a.dilations[d];
  w.pad_begin = a.pads[d];
  w.pad_end = a.pads[d + spatial];
  const std::int64_t extent = (w.kernel - 1) * w.dilation + 1;
  if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
    w.out = (in + w.stride - 1) / w.stride;
    const std::int64_t total = std::max<std::int64_t>(0, (w.out - 1) * w.stride + extent - in);
    w.pad_begin = a.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    w.pad_end = total - w.pad_begin;
    return w;
  }
  const std::int64_t span = in + w.pad_begin + w.pad_end - extent;
  if (span < 0) {
    fail(n, "the kernel (" + std::to_string(w.kernel) + ", dilation " + std::to_string(w.dilation) +
                ") is larger than spatial axis " + std::to_string(d) + " of the input (" +
                std::to_string(in) + " with pads " + std::to_string(w.pad_begin) + " and " +
                std::to_string(w.pad_end) + ")");
  }
  w.out = span / w.stride + 1;
  if (a.ceil_mode && span % w.stride != 0) {
    ++w.out;
    // A window may not start in the end padding (ONNX's and PyTorch's rule).
    if ((w.out - 1) * w.stride >= in + w.pad_begin) --w.out;
  }
  return w;
}

window_geometry resolve_window(const node& n, const window_attributes& a, const shape_t& input) {
  const std::size_t spatial = a.kernel.size();
  if (spatial > static_cast<std::size_t>(window_geometry::k_axes) || input.size() != spatial + 2) {
    fail(n, "unsupported input rank " + std::to_string(input.size()) +
                ": expected [N, C] and 1 to 3 spatial axes matching the kernel's " +
                std::to_string(spatial));
  }
  window_geometry g;
  const std::size_t lead = window_geometry::k_axes - spatial;
  for (std::size_t d = 0; d < spatial; ++d) {
    g.axis[lead + d] = resolve_window_axis(n, a, d, input[d + 2]);
  }
  return g;
}

shape_t window_output_shape(const window_geometry& g, std::int64_t batch, std::int64_t channels,
                            std::size_t spatial) {
  shape_t shape = {batch, channels};
  const auto axes = static_cast<std::size_t>(window_geometry::k_axes);
  for (std::size_t d = axes - std::min(spatial, axes); d < axes; ++d)
    shape.push_back(g.axis[d].out);
  return shape;
}

}  // namespace coolbench::engine
