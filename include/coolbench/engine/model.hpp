/// @file
/// Loading ONNX models into the graph IR, and the models coolbench builds
/// itself so it runs out of the box.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

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

/// The shape of a GPT-2 (Hugging Face's GPT2LMHeadModel). The defaults are
/// GPT-2 small: 124,439,808 parameters, 498 MB as float32.
struct gpt2_config {
  std::int64_t layers = 12;    ///< transformer blocks (n_layer)
  std::int64_t hidden = 768;   ///< embedding width (n_embd); a multiple of heads
  std::int64_t heads = 12;     ///< attention heads (n_head)
  std::int64_t vocab = 50257;  ///< token embeddings, also the width of the logits
  std::int64_t positions =
      1024;  ///< learned position embeddings (n_positions): the longest sequence
  /// The input shape the model is meant to run with. The model declares its
  /// batch and sequence dimensions as the symbols "batch" and "sequence", so
  /// one file runs any batch and any sequence up to `positions`; these two
  /// are recorded in its metadata (coolbench.batch, coolbench.sequence), and
  /// become the declared dimensions only with `fixed_shape`.
  std::int64_t batch = 1;
  std::int64_t sequence = 128;
  bool fixed_shape = false;             ///< declare [batch, sequence] as numbers, not symbols
  dtype element_type = dtype::float32;  ///< float32 or float16: weights and activations
  std::uint64_t seed = 1;               ///< of the random weights
  /// Standard deviation of the random weights (HF's initializer_range).
  float init_std = 0.02F;
};

/// Throws invalid_argument saying which field is wrong and why: zero or
/// negative sizes, hidden not a multiple of heads, sequence > positions,
/// vocab < 2, another dtype, or a model over protobuf's 2 GB limit.
void validate(const gpt2_config& config);

/// Weights of the model (embeddings, layer norms, projections; the LM head is
/// tied to the token embedding and not counted twice).
[[nodiscard]] std::int64_t parameter_count(const gpt2_config& config);

/// A GPT-2 with seeded random weights, as serialized ONNX (opset 17): input
/// `input_ids` int64 [batch, sequence], output `logits` [batch, sequence,
/// vocab]. Weights are drawn like HF's initialisation — normal(0, init_std),
/// residual projections (c_proj) scaled by 1/sqrt(2 * layers) — except that
/// biases are normal(0, init_std) and LayerNorm scales 1 + normal(0,
/// init_std) rather than 0 and 1, so that a misplaced parameter changes the
/// output. The same config and seed give the same bytes. Throws
/// invalid_argument (see validate). Holds the whole file in memory twice:
/// for large models use write_gpt2_model.
[[nodiscard]] std::vector<std::byte> make_gpt2_model(const gpt2_config& config);

/// The same, streamed to `path` atomically (FILE.tmp, then a rename).
/// Throws invalid_argument for a bad config or when the file cannot be written.
void write_gpt2_model(const gpt2_config& config, const std::filesystem::path& path);

/// Writes bytes to `path` atomically (a temporary file, then a rename).
void write_model(const std::filesystem::path& path, std::span<const std::byte> bytes);

}  // namespace coolbench::engine
