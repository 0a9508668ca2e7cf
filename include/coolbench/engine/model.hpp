/// @file
/// Loading ONNX models into the graph IR, and the models coolbench builds
/// itself so it runs out of the box.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>

#include "coolbench/core/error.hpp"
#include "coolbench/engine/graph.hpp"

namespace coolbench::engine {

/// The model file is not a valid ONNX model (corrupt or truncated protobuf,
/// a cycle, a missing initializer or external-data file, an unsupported
/// construct). The message names the file and what is wrong.
class model_error : public error {
 public:
  using error::error;
};

/// Loads an ONNX model. External-data tensors are read from files beside it.
/// The nodes come back in a topological order. Throws model_error.
[[nodiscard]] graph load_onnx(const std::filesystem::path& path);

/// The same from bytes in memory; `base_dir` is where external data lives.
[[nodiscard]] graph parse_onnx(std::span<const std::byte> bytes,
                               const std::filesystem::path& base_dir, const std::string& source);

/// The two-input Add model of the original report: C = A + B on float32
/// tensors of shape [1, 2, 3, 3], opset 13, as serialized ONNX.
[[nodiscard]] std::vector<std::byte> make_add_model();

/// Writes bytes to `path` atomically (a temporary file, then a rename).
void write_model(const std::filesystem::path& path, std::span<const std::byte> bytes);

}  // namespace coolbench::engine
