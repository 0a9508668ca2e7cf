#include "coolbench/engine/session.hpp"

#include <algorithm>
#include <set>

#include "coolbench/engine/model.hpp"
#include "engine/backend.hpp"
#include "engine/fusion/fusion.hpp"
#include "engine/session_plan.hpp"
#include "engine/shape_inference.hpp"

namespace coolbench::engine {

std::string_view to_string(execution_mode mode) noexcept {
  switch (mode) {
    case execution_mode::host: return "host";
    case execution_mode::eager: return "eager";
    case execution_mode::graph: return "graph";
  }
  return "unknown";
}

session::session(graph g, std::string_view backend_name)
    : session(std::move(g), session_options{}, backend_name) {}

session::session(graph g, session_options options, std::string_view backend_name)
    : m_graph(std::move(g)), m_options(std::move(options)), m_backend(make_backend(backend_name)) {
  m_backend->set_product_tuning(m_options.gemm_autotune);
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
  if (m_plan) {
    complete();
    m_device_outputs.clear();
    return_borrowed(*m_plan);
    m_plan.reset();  // its device copies, arena and graph go with it
  }
  graph_analysis analysis = analyze_graph(m_graph, bound, k_fold_max_elements);
  const std::vector<bool> live = live_nodes(m_graph.nodes, m_graph.outputs, analysis.node_folded);
  auto next = std::make_unique<plan>();
  next->bound = bound;
  next->g.name = m_graph.name;
  next->g.opset = m_graph.opset;
  next->g.inputs = m_graph.inputs;
  next->g.outputs = m_graph.outputs;
  std::set<std::string> read;
  for (const auto& v : m_graph.outputs) read.insert(v.name);
  for (std::size_t i = 0; i < m_graph.nodes.size(); ++i) {
    if (!live[i]) continue;
    const node& n = m_graph.nodes[i];
    // Only live nodes must be runnable: folded and dead ones never run.
    if (const auto refused = m_backend->refuses(n, input_types(n, analysis))) {
      throw model_error(unsupported_message(n, *refused, analysis));
    }
    next->g.nodes.push_back(n);
    read.insert(n.inputs.begin(), n.inputs.end());
  }
  for (const auto& name : m_lost) {
    if (read.contains(name)) {
      throw model_error("the model's initializer '" + name +
                        "' was dropped by a fusion pass of an earlier plan; load the model "
                        "again, or create the session with fuse off");
    }
  }
  for (auto& [name, value] : analysis.folded) {
    if (read.contains(name)) next->g.initializers.emplace(name, std::move(value));
  }
  // The model's initializers move into the plan (no copy of the weights).
  for (auto it = m_graph.initializers.begin(); it != m_graph.initializers.end();) {
    if (!read.contains(it->first) || next->g.initializers.contains(it->first)) {
      ++it;
      continue;
    }
    next->borrowed.push_back(it->first);
    next->g.initializers.emplace(it->first, std::move(it->second));
    it = m_graph.initializers.erase(it);
  }
  next->shapes = std::move(analysis.shapes);
  try {
    finish_plan(*next);
  } catch (...) {
    return_borrowed(*next);
    throw;
  }
  m_plan = std::move(next);
}

void session::return_borrowed(plan& p) noexcept {
  for (const auto& name : p.borrowed) {
    auto it = p.g.initializers.find(name);
    if (it == p.g.initializers.end()) {
      m_lost.push_back(name);
      continue;
    }
    m_graph.initializers.insert_or_assign(name, std::move(it->second));
    p.g.initializers.erase(it);
  }
  p.borrowed.clear();
}

void session::finish_plan(plan& p) {
  const auto shape_known = [&](const std::string& name) {
    const auto it = p.shapes.find(name);
    return it != p.shapes.end() && it->second.is_static();
  };
  for (const auto& v : p.g.inputs) {
    if (p.dynamic_value.empty() && !shape_known(v.name)) p.dynamic_value = v.name;
  }
  for (const auto& n : p.g.nodes) {
    for (const auto& name : n.outputs) {
      if (p.dynamic_value.empty() && !name.empty() && !shape_known(name)) p.dynamic_value = name;
    }
  }
  const bool fuse = m_options.fuse.value_or(m_backend->on_device());
  if (fuse && p.dynamic_value.empty()) {
    p.fusion_counts = fuse_for_backend(p.g, fusion_context{p.shapes, *m_backend});
    for (const auto& n : p.g.nodes) {
      if (const auto refused = m_backend->refuses(n, {})) {
        throw model_error("a fusion pass made " + n.describe() + " in domain '" + n.domain +
                          "', which the " + std::string(m_backend->name()) +
                          " backend does not run; create the session with fuse off");
      }
    }
  }
  // Initializers no node reads any more (fused away) leave the plan; the
  // model's go back to the session's graph.
  std::set<std::string> read;
  for (const auto& v : p.g.outputs) read.insert(v.name);
  for (const auto& n : p.g.nodes) read.insert(n.inputs.begin(), n.inputs.end());
  for (auto it = p.borrowed.begin(); it != p.borrowed.end();) {
    const auto value = p.g.initializers.find(*it);
    if (read.contains(*it) || value == p.g.initializers.end()) {
      ++it;
      continue;
    }
    m_graph.initializers.insert_or_assign(*it, std::move(value->second));
    p.g.initializers.erase(value);
    it = p.borrowed.erase(it);
  }
  std::erase_if(p.g.initializers, [&](const auto& entry) { return !read.contains(entry.first); });
  // Last readers, so that intermediates are dropped as soon as possible.
  std::map<std::string, std::size_t> last_use;
  for (std::size_t i = 0; i < p.g.nodes.size(); ++i) {
    for (const auto& in : p.g.nodes[i].inputs) last_use[in] = i;
  }
  std::set<std::string> keep;
  for (const auto& v : p.g.outputs) keep.insert(v.name);
  p.drops.assign(p.g.nodes.size(), {});
  for (const auto& [name, i] : last_use) {
    if (!name.empty() && !keep.contains(name)) p.drops[i].push_back(name);
  }
  if (m_backend->on_device() && m_options.memory_plan && p.dynamic_value.empty()) {
    std::vector<std::size_t> slots;  // the inputs' arena slots
    for (const auto& v : p.g.inputs) {
      const auto& info = p.shapes.at(v.name);
      slots.push_back(static_cast<std::size_t>(element_count(info.static_shape())) *
                      size_of(v.type));
    }
    backend* b = m_backend.get();
    p.memory = std::make_unique<run_memory>(
        [b](std::size_t bytes) { return b->allocate_block(bytes); }, std::move(slots));
  }
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

std::size_t session::node_count() const noexcept { return m_plan ? m_plan->g.nodes.size() : 0; }

session::~session() {
  // A launched run may still use the arena and the graph this frees.
  if (m_backend && m_in_flight) {
    try {
      complete();
    } catch (const std::exception&) {  // what it found no longer matters
    }
    m_backend->end_run();
  }
}
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
  if (m_plan) m_plan->staged.erase(name);  // copied to the device by the next run
  m_inputs.insert_or_assign(name, std::move(value));
}

const tensor& session::output(std::size_t index) const {
  if (index >= m_graph.outputs.size()) {
    throw invalid_argument("output " + std::to_string(index) + " does not exist: the model has " +
                           std::to_string(m_graph.outputs.size()));
  }
  return output(m_graph.outputs[index].name);
}

const tensor& session::output(const std::string& name) const {
  if (const auto it = m_outputs.find(name); it != m_outputs.end()) return it->second;
  const auto device = m_device_outputs.find(name);
  if (device == m_device_outputs.end()) {
    const bool declared = std::any_of(m_graph.outputs.begin(), m_graph.outputs.end(),
                                      [&](const value_info& v) { return v.name == name; });
    throw invalid_argument(declared ? "output '" + name + "' is not computed yet: call run() first"
                                    : "the model has no output '" + name + "'");
  }
  complete();
  if (device->second.storage() && !device->second.storage()->valid()) {
    throw invalid_argument("output '" + name +
                           "' was freed by a device release before it was read: run() again");
  }
  tensor host;
  try {
    host = m_backend->copy_out(device->second);
  } catch (...) {
    m_backend->end_run();
    throw;
  }
  m_backend->end_run();
  return m_outputs.insert_or_assign(name, std::move(host)).first->second;
}

void session::release() {
  try {
    complete();
  } catch (const std::exception&) {  // what the run found no longer matters
  }
  m_inputs.clear();
  m_outputs.clear();
  m_device_outputs.clear();
  m_symbols.clear();
  if (m_plan) {
    m_plan->resident.clear();
    m_plan->staged.clear();
    m_plan->work.reset();
    if (m_plan->memory) m_plan->memory->drop_arena();
  }
  m_backend->release();
}

const std::map<std::string, std::size_t>& session::fusion_counts() const noexcept {
  static const std::map<std::string, std::size_t> none;
  return m_plan ? m_plan->fusion_counts : none;
}

execution_info session::execution() const {
  execution_info info;
  info.device_allocations = m_backend->device_allocations();
  if (m_plan) {
    info.static_shapes = m_plan->dynamic_value.empty();
    info.dynamic_value = m_plan->dynamic_value;
  }
  if (!m_backend->on_device()) return info;
  info.mode = execution_mode::eager;
  if (!m_plan) return info;
  const plan& p = *m_plan;
  for (const node& n : p.g.nodes) {
    if (std::string why = m_backend->fallback(n); !why.empty()) {
      info.fallbacks.push_back(n.describe() + ": " + why);
    }
  }
  info.launch_waits = p.launch_waits || !p.dynamic_value.empty();
  if (p.memory) {
    info.arena = arena_usable(p);
    info.arena_bytes = p.memory->arena_bytes();
    info.unplanned_bytes = p.memory->unplanned_bytes();
    info.allocations = p.memory->allocations();
  }
  if (graph_usable(p)) {
    info.mode = execution_mode::graph;
  } else if (!p.dynamic_value.empty()) {
    const auto it = p.shapes.find(p.dynamic_value);
    info.reason = "the shape of '" + p.dynamic_value + "' is not static (" +
                  (it == p.shapes.end() ? std::string("unknown") : it->second.describe()) +
                  "): bind every symbolic dimension";
  } else if (!m_options.memory_plan) {
    info.reason = "memory_plan is off";
  } else if (p.memory && p.memory->mismatch()) {
    info.reason = "the memory plan mismatched: " + *p.memory->mismatch();
  } else if (!m_options.cuda_graph) {
    info.reason = "cuda_graph is off";
  } else if (!m_backend->can_record()) {
    info.reason = "the " + std::string(m_backend->name()) + " backend cannot record its work";
  } else {
    info.reason = p.not_recordable;
  }
  return info;
}

}  // namespace coolbench::engine
