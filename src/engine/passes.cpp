#include "coolbench/engine/passes.hpp"

#include <set>

#include "engine/shape_inference.hpp"

namespace coolbench::engine {

std::map<std::string, shape_info> infer_shapes(const graph& g, const symbol_bindings& bound) {
  return analyze_graph(g, bound, k_fold_max_elements).shapes;
}

std::size_t fold_constants(graph& g, const symbol_bindings& bound, std::int64_t max_elements) {
  graph_analysis analysis = analyze_graph(g, bound, max_elements);
  std::vector<node> kept;
  std::size_t folded = 0;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (!analysis.node_folded[i]) {
      kept.push_back(std::move(g.nodes[i]));
      continue;
    }
    for (const auto& name : g.nodes[i].outputs) {
      if (!name.empty()) g.initializers.insert_or_assign(name, std::move(analysis.folded[name]));
    }
    ++folded;
  }
  g.nodes = std::move(kept);
  return folded;
}

std::vector<bool> live_nodes(const std::vector<node>& nodes, const std::vector<value_info>& outputs,
                             const std::vector<bool>& skipped) {
  std::set<std::string> needed;
  for (const auto& v : outputs) needed.insert(v.name);
  std::vector<bool> live(nodes.size(), false);
  // Nodes are in topological order, so walking back sees every consumer of
  // a value before its producer.
  for (std::size_t i = nodes.size(); i-- > 0;) {
    if (i < skipped.size() && skipped[i]) continue;
    for (const auto& name : nodes[i].outputs) live[i] = live[i] || needed.contains(name);
    if (!live[i]) continue;
    for (const auto& name : nodes[i].inputs) {
      if (!name.empty()) needed.insert(name);
    }
  }
  return live;
}

std::size_t remove_dead_nodes(graph& g, bool keep_initializers) {
  const std::vector<bool> live = live_nodes(g.nodes, g.outputs, {});
  std::vector<node> kept;
  std::set<std::string> read;
  for (const auto& v : g.outputs) read.insert(v.name);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (!live[i]) continue;
    for (const auto& name : g.nodes[i].inputs) read.insert(name);
    kept.push_back(std::move(g.nodes[i]));
  }
  const std::size_t removed = g.nodes.size() - kept.size();
  g.nodes = std::move(kept);
  if (!keep_initializers) {
    std::erase_if(g.initializers, [&](const auto& entry) { return !read.contains(entry.first); });
  }
  return removed;
}

}  // namespace coolbench::engine
