// The one walk over a graph behind the public passes: shape inference and
// constant evaluation together, since each feeds the other (a folded Concat
// gives a Reshape its shape; a known shape lets a Shape node fold). The
// session uses it directly so that its plan borrows the model's
// initializers instead of copying them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "coolbench/engine/graph.hpp"
#include "coolbench/engine/passes.hpp"

namespace coolbench::engine {

struct graph_analysis {
  std::map<std::string, shape_info> shapes;
  /// Outputs of the nodes evaluated before run time, by value name.
  std::map<std::string, tensor> folded;
  /// Per node of the graph: whether `folded` holds all its outputs.
  std::vector<bool> node_folded;
};

/// Infers shapes in the graph's (topological) order; evaluates a node when
/// its inputs are known and each of its outputs has at most `max_elements`
/// elements (0: evaluates nothing but Shape, Size and small constants that
/// inference needs). Throws model_error for inconsistent shapes.
[[nodiscard]] graph_analysis analyze_graph(const graph& g, const symbol_bindings& bound,
                                           std::int64_t max_elements);

/// Per node: whether one of its outputs reaches `outputs`, through the nodes
/// that are not `skipped` (folded nodes need nothing upstream of them).
[[nodiscard]] std::vector<bool> live_nodes(const std::vector<node>& nodes,
                                           const std::vector<value_info>& outputs,
                                           const std::vector<bool>& skipped);

}  // namespace coolbench::engine
