#include "coolbench/engine/session.hpp"

#include <algorithm>
#include <set>

#include "coolbench/engine/model.hpp"
#include "engine/backend.hpp"
#include "engine/shape_inference.hpp"

namespace {

// Ends the backend's run (drops its lease) however run() leaves.
struct end_run_guard {
  explicit end_run_guard(coolbench::engine::backend& backend) : b(backend) {}
  coolbench::engine::backend& b;
  end_run_guard(const end_run_guard&) = delete;
  end_run_guard& operator=(const end_run_guard&) = delete;
  ~end_run_guard() { b.end_run(); }
};

}  // namespace

namespace coolbench::engine {

/// The model specialized for one binding of its symbolic dimensions.
struct session::plan {
  symbol_bindings bound;
  std::vector<std::size_t> nodes;           // indices into m_graph.nodes, in order
  std::map<std::string, tensor> constants;  // folded values the nodes or outputs read
};

session::session(graph g, std::string_view backend_name)
    : session(std::move(g), session_options{}, backend_name) {}

session::session(graph g, session_options options, std::string_view backend_name)
    : m_graph(std::move(g)), m_options(std::move(options)), m_backend(make_backend(backend_name)) {
  specialize(m_options.dimensions);
}

session session::load(const std::filesystem::path& path, std::string_view backend_name) {
  return session(load_onnx(path), backend_name);
}

session session::load(const std::filesystem::path& path, session_options options,
                      std::string_view backend_name) {
  return session(load_onnx(path), std::move(options), backend_name);
}

void session::specialize(const symbol_bindings& bound) {
  graph_analysis analysis = analyze_graph(m_graph, bound, k_fold_max_elements);
  const std::vector<bool> live = live_nodes(m_graph.nodes, m_graph.outputs, analysis.node_folded);
  auto next = std::make_unique<plan>();
  next->bound = bound;
  std::set<std::string> read;
  for (const auto& v : m_graph.outputs) read.insert(v.name);
  for (std::size_t i = 0; i < m_graph.nodes.size(); ++i) {
    if (!live[i]) continue;
    const node& n = m_graph.nodes[i];
    // Only live nodes must be runnable: folded and dead ones never run.
    if (const auto refused = m_backend->refuses(n, input_types(n, analysis))) {
      throw model_error(unsupported_message(n, *refused, analysis));
    }
    next->nodes.push_back(i);
    read.insert(n.inputs.begin(), n.inputs.end());
  }
  for (auto& [name, value] : analysis.folded) {
    if (read.contains(name)) next->constants.emplace(name, std::move(value));
  }
  m_plan = std::move(next);
  m_resident.clear();  // the device copies of the old plan's constants
}

std::vector<std::optional<dtype>> session::input_types(const node& n,
                                                       const graph_analysis& analysis) {
  std::vector<std::optional<dtype>> types;
  for (const auto& name : n.inputs) {
    const auto it = name.empty() ? analysis.shapes.end() : analysis.shapes.find(name);
    if (it != analysis.shapes.end() && it->second.type_known) {
      types.emplace_back(it->second.type);
    } else {
      types.emplace_back(std::nullopt);
    }
  }
  return types;
}

// One line naming the node, op and opset, and on a device backend the dtype
// and that there is no fallback to the CPU.
std::string session::unsupported_message(const node& n, const refusal& refused,
                                         const graph_analysis& analysis) const {
  std::string text = "unsupported operator " + (n.domain.empty() ? "" : n.domain + ".") +
                     n.op_type + " (opset " + std::to_string(m_graph.opset) + ") in node '" +
                     n.name + "'";
  std::optional<dtype> type;
  if (refused.why == refusal::reason::dtype) {
    type = refused.type;
  } else {
    for (const auto& t : input_types(n, analysis)) {
      if (t) {
        type = t;
        break;
      }
    }
  }
  if (refused.why != refusal::reason::op || m_backend->on_device()) {
    text += type ? " for dtype " + std::string(to_string(*type)) : std::string(" for its dtypes");
  }
  // No backend runs that form: the CPU is no way out, so none is offered.
  if (refused.why == refusal::reason::form) return text + ": " + refused.detail;
  if (m_backend->on_device()) {
    text += " on the " + std::string(m_backend->name()) +
            " backend (no fallback to the CPU: run the model with the cpu backend)";
  }
  return text;
}

std::size_t session::node_count() const noexcept { return m_plan ? m_plan->nodes.size() : 0; }

session::~session() = default;
session::session(session&&) noexcept = default;
session& session::operator=(session&&) noexcept = default;

std::string_view session::backend_name() const noexcept { return m_backend->name(); }

std::string session::backend_description() const { return m_backend->describe(); }

void session::set_input(const std::string& name, tensor value) {
  const auto it = std::find_if(m_graph.inputs.begin(), m_graph.inputs.end(),
                               [&](const value_info& v) { return v.name == name; });
  if (it == m_graph.inputs.end()) {
    std::string names;
    for (const auto& v : m_graph.inputs) names += (names.empty() ? "" : ", ") + v.name;
    throw invalid_argument("the model has no input '" + name + "'; its inputs are: " + names);
  }
  if (value.type() != it->type) {
    throw invalid_argument("input '" + name + "': expected " + std::string(to_string(it->type)) +
                           ", got " + std::string(to_string(value.type())));
  }
  if (it->has_shape) {
    const auto& got = value.shape();
    std::string expected = "[";
    for (std::size_t i = 0; i < it->shape.size(); ++i) {
      const auto& d = it->shape[i];
      expected += (i == 0 ? "" : ", ") + (d.value >= 0       ? std::to_string(d.value)
                                          : d.symbol.empty() ? "?"
                                                             : d.symbol);
    }
    expected += "]";
    const auto mismatch = [&](const std::string& why) {
      throw invalid_argument("input '" + name + "': expected shape " + expected + ", got " +
                             to_string(got) + why);
    };
    if (got.size() != it->shape.size()) mismatch("");
    // What the other inputs bind; this input's previous value binds nothing.
    symbol_bindings bound;
    for (const auto& other : m_graph.inputs) {
      const auto set = m_inputs.find(other.name);
      if (other.name == name || set == m_inputs.end() || !other.has_shape) continue;
      for (std::size_t i = 0; i < other.shape.size() && i < set->second.rank(); ++i) {
        const auto& d = other.shape[i];
        if (d.value < 0 && !d.symbol.empty()) bound.emplace(d.symbol, set->second.shape()[i]);
      }
    }
    for (std::size_t i = 0; i < got.size(); ++i) {
      const auto& d = it->shape[i];
      if (d.value >= 0 && d.value != got[i]) mismatch("");
      if (d.value < 0 && !d.symbol.empty()) {
        const auto [entry, inserted] = bound.emplace(d.symbol, got[i]);
        if (!inserted && entry->second != got[i]) {
          mismatch(" ('" + d.symbol + "' is " + std::to_string(entry->second) +
                   " in another input)");
        }
      }
    }
    m_symbols = std::move(bound);
  }
  m_inputs.insert_or_assign(name, std::move(value));
}

void session::run() {
  for (const auto& v : m_graph.inputs) {
    if (!m_inputs.contains(v.name))
      throw invalid_argument("input '" + v.name + "' was not set before run()");
  }
  symbol_bindings bound = m_options.dimensions;
  for (const auto& [symbol, value] : m_symbols) bound.insert_or_assign(symbol, value);
  if (bound != m_plan->bound) {
    try {
      specialize(bound);
    } catch (const model_error& e) {
      std::string binding;
      for (const auto& [symbol, value] : bound) {
        binding += (binding.empty() ? "" : ", ") + symbol + " = " + std::to_string(value);
      }
      throw invalid_argument("with the inputs' dimensions (" + binding + "): " + e.what());
    }
  }
  const end_run_guard guard{*m_backend};
  const bool device = m_backend->on_device();
  if (device) {
    // A device release freed the resident constants: copy them in again.
    for (auto it = m_resident.begin(); it != m_resident.end();) {
      it = it->second.storage()->valid() ? std::next(it) : m_resident.erase(it);
    }
  }
  const std::vector<std::size_t>& order = m_plan->nodes;
  // Last use of each value, so intermediates are dropped as soon as possible.
  std::map<std::string, std::size_t> last_use;
  for (std::size_t i = 0; i < order.size(); ++i) {
    for (const auto& in : m_graph.nodes[order[i]].inputs) last_use[in] = i;
  }
  std::set<std::string> keep;
  for (const auto& v : m_graph.outputs) keep.insert(v.name);

  std::map<std::string, tensor> values;
  // Inputs, folded values and initializers; on a device, their copies there
  // (inputs each run, constants once per plan and device generation).
  const auto source = [&](const std::string& name) -> const tensor* {
    if (auto it = m_inputs.find(name); it != m_inputs.end()) {
      if (!device) return &it->second;
      return &values.insert_or_assign(name, m_backend->copy_in(it->second)).first->second;
    }
    const tensor* host = nullptr;
    if (auto it = m_plan->constants.find(name); it != m_plan->constants.end()) {
      host = &it->second;
    } else if (auto init = m_graph.initializers.find(name); init != m_graph.initializers.end()) {
      host = &init->second;
    }
    if (host == nullptr) throw invalid_argument("value '" + name + "' is missing at run time");
    if (!device) return host;
    auto resident = m_resident.find(name);
    if (resident == m_resident.end()) {
      resident = m_resident.emplace(name, m_backend->copy_in(*host)).first;
    }
    return &resident->second;
  };
  const auto lookup = [&](const std::string& name) -> const tensor* {
    if (name.empty()) return nullptr;
    if (auto it = values.find(name); it != values.end()) return &it->second;
    return source(name);
  };
  std::vector<const tensor*> inputs;
  std::vector<tensor> outputs;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const node& n = m_graph.nodes[order[i]];
    inputs.clear();
    for (const auto& name : n.inputs) inputs.push_back(lookup(name));
    outputs.assign(n.outputs.size(), tensor());
    m_backend->run(n, inputs, outputs);
    for (std::size_t o = 0; o < n.outputs.size(); ++o) {
      if (!n.outputs[o].empty()) values.insert_or_assign(n.outputs[o], std::move(outputs[o]));
    }
    for (const auto& name : n.inputs) {
      if (last_use[name] == i && !keep.contains(name)) values.erase(name);
    }
  }
  m_outputs.clear();
  for (const auto& v : m_graph.outputs) {
    const tensor* value = lookup(v.name);  // an input or initializer may pass through
    m_outputs.insert_or_assign(v.name, device ? m_backend->copy_out(*value) : *value);
  }
}

const tensor& session::output(std::size_t index) const {
  if (index >= m_graph.outputs.size()) {
    throw invalid_argument("output " + std::to_string(index) + " does not exist: the model has " +
                           std::to_string(m_graph.outputs.size()));
  }
  return output(m_graph.outputs[index].name);
}

const tensor& session::output(const std::string& name) const {
  const auto it = m_outputs.find(name);
  if (it == m_outputs.end()) {
    const bool declared = std::any_of(m_graph.outputs.begin(), m_graph.outputs.end(),
                                      [&](const value_info& v) { return v.name == name; });
    throw invalid_argument(declared ? "output '" + name + "' is not computed yet: call run() first"
                                    : "the model has no output '" + name + "'");
  }
  return it->second;
}

void session::release() {
  m_inputs.clear();
  m_outputs.clear();
  m_symbols.clear();
  m_resident.clear();
  m_backend->release();
}

}  // namespace coolbench::engine
