// The geometry of the sliding-window operators (Conv, MaxPool, AveragePool):
// kernel, strides, dilations and pads read from a node's attributes (auto_pad
// resolved for an input size), and the output size of each spatial axis as
// ONNX gives it. Shared by shape inference and both backends, so that they
// agree on every output shape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "coolbench/engine/graph.hpp"
#include "engine/window_geometry.hpp"

namespace coolbench::engine {

/// The window attributes of a node with `spatial` spatial axes.
struct window_attributes {
  std::vector<std::int64_t> kernel;     ///< kernel_shape (Conv: from W when absent)
  std::vector<std::int64_t> strides;    ///< default 1
  std::vector<std::int64_t> dilations;  ///< default 1
  std::vector<std::int64_t> pads;       ///< begins then ends; default 0 (auto_pad NOTSET)
  std::string auto_pad = "NOTSET";      ///< NOTSET, VALID, SAME_UPPER, SAME_LOWER
  bool ceil_mode = false;               ///< pooling: round the output size up
};

/// Reads and checks the attributes; `kernel` is the kernel shape when the node
/// has no kernel_shape attribute (Conv's W), empty when it must have one.
/// Throws invalid_argument naming the node for values that do not fit
/// (lengths, non-positive strides or dilations, negative pads, an unknown auto_pad).
[[nodiscard]] window_attributes read_window_attributes(const node& n, std::size_t spatial,
                                                       const std::vector<std::int64_t>& kernel);

/// Axis `d` over an input of `in` elements: SAME pads computed (the odd one at
/// the end for SAME_UPPER, at the start for SAME_LOWER), and the output size.
/// Throws invalid_argument naming the node when the dilated kernel does not
/// fit into the padded input.
[[nodiscard]] window_axis resolve_window_axis(const node& n, const window_attributes& a,
                                              std::size_t d, std::int64_t in);

/// The geometry over an input of shape [N, C, spatial...] (1 to 3 spatial
/// axes); throws invalid_argument naming the node for more spatial axes.
[[nodiscard]] window_geometry resolve_window(const node& n, const window_attributes& a,
                                             const shape_t& input);

/// [batch, channels, the output sizes of the last `spatial` axes of `g`].
[[nodiscard]] shape_t window_output_shape(const window_geometry& g, std::int64_t batch,
                                          std::int64_t channels, std::size_t spatial);

}  // namespace coolbench::engine
