/// @file
/// Graph passes that run when a session is created: shape inference with the
/// symbolic dimensions bound so far, constant folding of the shape
/// subgraphs exporters emit (Shape → Gather → Unsqueeze → Concat → Reshape),
/// and dead-node removal.
///
///   graph g = load_onnx("gpt2.onnx");
///   fold_constants(g, {{"batch", 1}, {"sequence", 128}});
///   remove_dead_nodes(g);
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "coolbench/engine/graph.hpp"
#include "coolbench/engine/tensor.hpp"

namespace coolbench::engine {

/// Values of symbolic dimensions, by symbol: {"batch", 1}, {"sequence", 128}.
using symbol_bindings = std::map<std::string, std::int64_t>;

/// What shape inference knows about one value. Unknown parts stay unknown:
/// inference never guesses.
struct shape_info {
  bool type_known = false;
  dtype type = dtype::float32;
  bool rank_known = false;
  /// One entry per dimension when rank_known: a value >= 0, or -1 with the
  /// symbol it equals (empty when nothing is known about it).
  std::vector<dimension> dims;

  /// Rank known and every dimension a number.
  [[nodiscard]] bool is_static() const noexcept;
  /// The dimensions as numbers; throws invalid_argument unless is_static().
  [[nodiscard]] shape_t static_shape() const;
  /// "[batch, 12, ?, 64]", or "unknown rank".
  [[nodiscard]] std::string describe() const;
};

/// Results of at most this many elements are folded; larger ones (a weight
/// transposed, a mask expanded) stay computed at run time so that folding
/// never multiplies the memory a model needs.
inline constexpr std::int64_t k_fold_max_elements = 64 * 1024;

/// The dtype and shape of every value where they can be derived: graph
/// inputs (their symbols replaced by `bound` values), initializers, and each
/// node's outputs by its operator's rule. Small constant subgraphs are
/// evaluated on the CPU backend along the way, so that a Reshape whose shape
/// comes from Shape → Gather → Concat gets its output shape. Throws
/// model_error naming the node and both shapes when shapes are inconsistent
/// (an Add of [2, 3] and [4, 3], a MatMul whose inner dimensions differ).
[[nodiscard]] std::map<std::string, shape_info> infer_shapes(const graph& g,
                                                             const symbol_bindings& bound = {});

/// Replaces each node whose outputs are known before any input is given
/// (all its inputs are initializers or folded values, or it is a Shape or
/// Size of a value whose shape inference knows) by initializers holding
/// its outputs, when each output has at most `max_elements` elements.
/// Returns how many nodes were replaced. Throws model_error as infer_shapes.
std::size_t fold_constants(graph& g, const symbol_bindings& bound = {},
                           std::int64_t max_elements = k_fold_max_elements);

/// Drops the nodes none of whose outputs reach a graph output, and (unless
/// `keep_initializers`) the initializers no remaining node reads. Returns how
/// many nodes were dropped.
std::size_t remove_dead_nodes(graph& g, bool keep_initializers = false);

}  // namespace coolbench::engine
