// What the fusion passes share: who produces and who reads each value,
// constants among the initializers, the shapes and dtypes shape inference
// found, and the rewrite that swaps a matched pattern for one fused node.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/fusion/elementwise_program.hpp"
#include "engine/fusion/fusion.hpp"

namespace coolbench::engine::fusion_detail {

/// Producers and readers of every value, over the graph as it is now.
class graph_index {
 public:
  explicit graph_index(const graph& g);
  /// The index of the node that makes `value`, or nullopt (an input, an initializer).
  [[nodiscard]] std::optional<std::size_t> producer(const std::string& value) const;
  /// The distinct nodes that read `value`.
  [[nodiscard]] const std::vector<std::size_t>& readers(const std::string& value) const;
  [[nodiscard]] bool is_graph_output(const std::string& value) const {
    return m_outputs.contains(value);
  }
  /// Whether every reader of `value` is in `nodes` and it is no graph output:
  /// a pattern may then compute it internally and drop it.
  [[nodiscard]] bool only_read_by(const std::string& value,
                                  const std::set<std::size_t>& nodes) const;
  /// The single reader of `value` when it has exactly one and is no graph output.
  [[nodiscard]] std::optional<std::size_t> sole_reader(const std::string& value) const;

 private:
  std::map<std::string, std::size_t> m_producer;
  std::map<std::string, std::vector<std::size_t>> m_readers;
  std::set<std::string> m_outputs;
};

/// The value of a one-element float or integer initializer, as double.
[[nodiscard]] std::optional<double> scalar_constant(const graph& g, const std::string& name);

/// The static shape shape inference found for `value`, or nullopt.
[[nodiscard]] std::optional<shape_t> static_shape(const fusion_context& context,
                                                  const std::string& value);
/// The dtype shape inference found for `value`, or nullopt.
[[nodiscard]] std::optional<dtype> type_of(const fusion_context& context, const std::string& value);

/// Whether the target backend runs `fused` with inputs of the dtypes
/// shape inference found.
[[nodiscard]] bool target_runs(const fusion_context& context, const node& fused);

/// Replaces the nodes at `removed` (indices into g.nodes) by `fused`, then
/// restores a topological order (a fused node may make a value that a node
/// between the pattern's first and last reads).
void replace_nodes(graph& g, const std::set<std::size_t>& removed, node fused);

/// A fused node of k_fused_domain named after the pattern's last node.
[[nodiscard]] node fused_node(std::string op_type, const node& last);

/// Whether `n` may be part of an elementwise program: an op ew_op_of knows,
/// float or bool values (integers only into a Cast), a constant exponent
/// for Pow, a Where over a bool condition, and a static output shape.
[[nodiscard]] bool ew_member_ok(const graph& g, const fusion_context& context, const node& n);

/// A compiled program and the values its loads read, in input order.
struct ew_compiled {
  ew_program program;
  std::vector<std::string> inputs;
};

/// Compiles the nodes at `members` (ascending indices of g.nodes, each
/// ew_member_ok) into one program whose result is the last member's output;
/// one-element initializers become constants. nullopt when it needs more
/// registers, constants, inputs or instructions than a program holds.
[[nodiscard]] std::optional<ew_compiled> ew_compile(const graph& g, const fusion_context& context,
                                                    const std::vector<std::size_t>& members);

}  // namespace coolbench::engine::fusion_detail
