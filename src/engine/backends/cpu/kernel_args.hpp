// Reading a kernel's arguments, shared by the CPU kernel families: the inputs
// by index, axes mapped into range, and the error every check throws
// (invalid_argument naming the node, so the message says which node of the
// model was wrong).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "coolbench/engine/graph.hpp"
#include "coolbench/engine/tensor.hpp"

namespace coolbench::engine::cpu {

using inputs_t = std::span<const tensor* const>;
using outputs_t = std::span<tensor>;

/// Throws invalid_argument with "<node>: <message>".
[[noreturn]] void fail(const node& n, const std::string& message);

/// Input `index`; throws invalid_argument naming the node when it is absent.
[[nodiscard]] const tensor& input(const node& n, inputs_t inputs, std::size_t index);

/// The same, with the input's role (`what`: "A", "data") in the message.
[[nodiscard]] const tensor& require_input(const node& n, inputs_t inputs, std::size_t index,
                                          const char* what);

/// Input `index`, or nullptr when it is omitted or beyond the inputs given.
[[nodiscard]] const tensor* optional_input(inputs_t inputs, std::size_t index);

/// `axis` mapped into [0, rank); ONNX accepts [-rank, rank - 1]. Throws
/// invalid_argument naming the node for an axis outside that.
[[nodiscard]] std::size_t normalize_axis(const node& n, std::int64_t axis, std::size_t rank);

/// The product of shape[begin, end) (1 for an empty range).
[[nodiscard]] std::int64_t product(const shape_t& shape, std::size_t begin, std::size_t end);

}  // namespace coolbench::engine::cpu
