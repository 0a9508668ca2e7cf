#include "engine/fusion/fusion_graph.hpp"

#include <cstring>
#include <queue>

#include "engine/backend.hpp"

namespace coolbench::engine::fusion_detail {

graph_index::graph_index(const graph& g) {
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    for (const auto& name : g.nodes[i].outputs) {
      if (!name.empty()) m_producer[name] = i;
    }
    for (const auto& name : g.nodes[i].inputs) {
      if (name.empty()) continue;
      auto& readers = m_readers[name];
      if (readers.empty() || readers.back() != i) readers.push_back(i);
    }
  }
  for (const auto& v : g.outputs) m_outputs.insert(v.name);
}

std::optional<std::size_t> graph_index::producer(const std::string& value) const {
  const auto it = m_producer.find(value);
  return it == m_producer.end() ? std::nullopt : std::optional<std::size_t>(it->second);
}

const std::vector<std::size_t>& graph_index::readers(const std::string& value) const {
  static const std::vector<std::size_t> none;
  const auto it = m_readers.find(value);
  return it == m_readers.end() ? none : it->second;
}

bool graph_index::only_read_by(const std::string& value, const std::set<std::size_t>& nodes) const {
  if (is_graph_output(value)) return false;
  for (const std::size_t r : readers(value)) {
    if (!nodes.contains(r)) return false;
  }
  return true;
}

std::optional<std::size_t> graph_index::sole_reader(const std::string& value) const {
  const auto& r = readers(value);
  if (r.size() != 1 || is_graph_output(value)) return std::nullopt;
  return r.front();
}

std::optional<double> scalar_constant(const graph& g, const std::string& name) {
  const auto it = g.initializers.find(name);
  if (it == g.initializers.end() || it->second.size() != 1) return std::nullopt;
  const tensor& t = it->second;
  switch (t.type()) {
    case dtype::float32: return t.data<float>()[0];
    case dtype::int64: return static_cast<double>(t.data<std::int64_t>()[0]);
    case dtype::int32: return t.data<std::int32_t>()[0];
    case dtype::float16:
    case dtype::bfloat16: {
      std::uint16_t bits = 0;
      std::memcpy(&bits, t.raw().data(), sizeof bits);
      return t.type() == dtype::float16 ? half_to_float(bits) : bfloat16_to_float(bits);
    }
    case dtype::boolean: return std::nullopt;
  }
  return std::nullopt;
}

std::optional<shape_t> static_shape(const fusion_context& context, const std::string& value) {
  const auto it = context.shapes.find(value);
  if (it == context.shapes.end() || !it->second.is_static()) return std::nullopt;
  return it->second.static_shape();
}

std::optional<dtype> type_of(const fusion_context& context, const std::string& value) {
  const auto it = context.shapes.find(value);
  if (it == context.shapes.end() || !it->second.type_known) return std::nullopt;
  return it->second.type;
}

bool target_runs(const fusion_context& context, const node& fused) {
  std::vector<std::optional<dtype>> types;
  for (const auto& name : fused.inputs) {
    types.push_back(name.empty() ? std::nullopt : type_of(context, name));
  }
  return !context.target.refuses(fused, types).has_value();
}

void replace_nodes(graph& g, const std::set<std::size_t>& removed, node fused) {
  std::vector<node> nodes;
  nodes.reserve(g.nodes.size() - removed.size() + 1);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (!removed.contains(i)) nodes.push_back(std::move(g.nodes[i]));
  }
  nodes.push_back(std::move(fused));
  // Kahn's algorithm, taking the earliest ready node first: the order stays
  // the original one wherever it was already valid.
  std::map<std::string, std::size_t> producer;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& name : nodes[i].outputs) {
      if (!name.empty()) producer[name] = i;
    }
  }
  std::vector<std::size_t> pending(nodes.size(), 0);
  std::vector<std::vector<std::size_t>> dependents(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    std::set<std::size_t> sources;
    for (const auto& name : nodes[i].inputs) {
      const auto it = producer.find(name);
      if (it != producer.end() && it->second != i) sources.insert(it->second);
    }
    pending[i] = sources.size();
    for (const std::size_t s : sources) dependents[s].push_back(i);
  }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<node> ordered;
  ordered.reserve(nodes.size());
  while (!ready.empty()) {
    const std::size_t i = ready.top();
    ready.pop();
    for (const std::size_t d : dependents[i]) {
      if (--pending[d] == 0) ready.push(d);
    }
    ordered.push_back(std::move(nodes[i]));
  }
  if (ordered.size() != nodes.size()) {
    throw invalid_argument("fusion made a cycle in graph '" + g.name +
                           "' (a fusion pass is wrong)");
  }
  g.nodes = std::move(ordered);
}

node fused_node(std::string op_type, const node& last) {
  node n;
  n.name = last.name + "_fused";
  n.op_type = std::move(op_type);
  n.domain = std::string(k_fused_domain);
  return n;
}

}  // namespace coolbench::engine::fusion_detail
