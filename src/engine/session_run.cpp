// How a session runs its plan. On the CPU: node by node on host tensors. On
// a device backend, for a plan whose shapes are all static:
//   1. the first run is recorded (run_memory): every allocation and when it
//      is dropped; the arena is laid out from those lifetimes;
//   2. later runs take arena slices in the same order (no allocation), the
//      inputs sit in fixed slots of the arena, copied there once per set_input;
//   3. with cuda_graph on, one such run is captured as a CUDA graph, and each
//      run after it is one graph launch. After a device release the arena is
//      taken again, one eager run loads the kernels in the new context, and
//      the graph is captured again.
// Anything a run does that a plan cannot repeat (a node waiting for the
// device, another allocation sequence) ends the graph or the arena for that
// plan, and execution() says why.
#include <algorithm>

#include "coolbench/engine/model.hpp"
#include "coolbench/engine/session.hpp"
#include "engine/backend.hpp"
#include "engine/session_plan.hpp"

namespace coolbench::engine {
namespace {

// Sends the backend's allocations to a source for as long as it lives.
class source_scope {
 public:
  source_scope(backend& b, allocation_source* source) : m_backend(b) {
    m_backend.set_allocation_source(source);
  }
  ~source_scope() { m_backend.set_allocation_source(nullptr); }
  source_scope(const source_scope&) = delete;
  source_scope& operator=(const source_scope&) = delete;
  source_scope(source_scope&&) = delete;
  source_scope& operator=(source_scope&&) = delete;

 private:
  backend& m_backend;
};

}  // namespace

bool session::arena_usable(const plan& p) const {
  return p.memory != nullptr && !p.memory->mismatch();
}

bool session::graph_usable(const plan& p) const {
  return arena_usable(p) && m_options.cuda_graph && m_backend->can_record() &&
         p.not_recordable.empty();
}

void session::specialize_for_inputs() {
  for (const auto& v : m_graph.inputs) {
    if (!m_inputs.contains(v.name))
      throw invalid_argument("input '" + v.name + "' was not set before run()");
  }
  symbol_bindings bound = m_options.dimensions;
  for (const auto& [symbol, value] : m_symbols) bound.insert_or_assign(symbol, value);
  if (m_plan && bound == m_plan->bound) return;
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

void session::run() {
  launch();
  synchronize();
}

void session::prepare() {
  specialize_for_inputs();
  if (!m_backend->on_device()) return;
  try {
    prepare_device(*m_plan);
  } catch (...) {
    m_in_flight = false;
    m_backend->end_run();
    throw;
  }
}

void session::launch() {
  prepare();
  plan& p = *m_plan;
  m_outputs.clear();
  if (!m_backend->on_device()) {
    auto outputs = execute(p);
    m_outputs = std::move(outputs);
    return;
  }
  try {
    if (p.work && p.work->valid()) {
      p.work->launch();  // the outputs stay in their arena slots
      m_in_flight = true;
      return;
    }
    run_eager(p, arena_usable(p));
  } catch (...) {
    m_in_flight = false;
    m_backend->end_run();
    throw;
  }
}

void session::synchronize() {
  if (!m_backend->on_device()) return;
  complete();
  m_backend->end_run();
}

void session::complete() const {
  if (!m_in_flight) return;
  m_in_flight = false;
  try {
    m_backend->synchronize();
  } catch (...) {
    m_backend->end_run();
    throw;
  }
}

void* session::stream() { return m_backend->stream(); }

// Constants, the memory plan, the inputs and the graph, each made only when
// missing (first run, new plan, or a device release freed it).
void session::prepare_device(plan& p) {
  const auto ready = [&] {
    if (p.resident.size() != p.g.initializers.size() || p.staged.size() != p.g.inputs.size()) {
      return false;
    }
    const auto valid = [](const auto& entry) { return entry.second.storage()->valid(); };
    if (!std::all_of(p.resident.begin(), p.resident.end(), valid) ||
        !std::all_of(p.staged.begin(), p.staged.end(), valid)) {
      return false;
    }
    if (graph_usable(p)) return p.work && p.work->valid();
    return !arena_usable(p) || (p.memory->recorded() && p.memory->arena_valid());
  };
  // Launches back to back need nothing made: no wait for the one before.
  if (ready()) return;
  complete();  // a launched run may still read what this replaces
  // A device release freed what these hold: copied in again below.
  for (auto* copies : {&p.resident, &p.staged}) {
    std::erase_if(*copies, [](const auto& entry) { return !entry.second.storage()->valid(); });
  }
  for (const auto& [name, host] : p.g.initializers) {
    if (!p.resident.contains(name)) p.resident.emplace(name, m_backend->copy_in(host));
  }
  if (arena_usable(p) && !p.memory->recorded()) record_memory(p);
  if (arena_usable(p) && p.memory->ensure_arena()) {
    // A new arena (first, or after a device release): what the old held is gone.
    p.staged.clear();
    p.work.reset();
    m_device_outputs.clear();
  }
  stage_inputs(p);
  if (!graph_usable(p) || (p.work && p.work->valid())) return;
  p.work.reset();
  if (p.warm_generation != m_backend->context_generation()) {
    run_eager(p, true);  // loads the kernels and makes the handles in this context
    complete();
    if (!graph_usable(p)) return;
  }
  record_graph(p);
}

// The inputs set since their last copy: into their arena slots, or into
// device memory of their own without an arena.
void session::stage_inputs(plan& p) {
  for (std::size_t i = 0; i < p.g.inputs.size(); ++i) {
    const std::string& name = p.g.inputs[i].name;
    if (p.staged.contains(name)) continue;
    const tensor& host = m_inputs.at(name);
    if (arena_usable(p) && p.memory->arena_valid()) {
      tensor slot(host.type(), host.shape(), p.memory->fixed_slot(i));
      m_backend->copy_into(host, slot);
      p.staged.emplace(name, std::move(slot));
    } else {
      p.staged.emplace(name, m_backend->copy_in(host));
    }
  }
}

// One eager run with the allocations recorded, then the arena's layout.
void session::record_memory(plan& p) {
  stage_inputs(p);  // outside the recording: the inputs get fixed slots later
  static_cast<void>(m_backend->take_blocking_note());
  m_device_outputs.clear();
  p.memory->begin_recording();
  try {
    const source_scope scope(*m_backend, p.memory.get());
    m_device_outputs = execute(p);
  } catch (...) {
    p.memory->abandon();
    throw;
  }
  m_in_flight = true;
  try {
    complete();
  } catch (...) {
    p.memory->abandon();
    throw;
  }
  p.memory->end_recording();
  p.warm_generation = m_backend->context_generation();
  const std::string note = m_backend->take_blocking_note();
  if (!note.empty()) {
    p.launch_waits = true;
    p.not_recordable = note + " (a run that waits for the device cannot be a CUDA graph)";
  }
  // The recorded run's blocks went back to the device layer's cache; the
  // arena replaces them.
  m_device_outputs.clear();
  p.staged.clear();
  m_backend->trim();
}

void session::record_graph(plan& p) {
  m_backend->prepare_recording();
  m_device_outputs.clear();  // their slots are the captured run's outputs
  p.memory->begin_replay();
  try {
    const source_scope scope(*m_backend, p.memory.get());
    m_backend->begin_recording();
    m_device_outputs = execute(p);
    p.memory->end_replay();
    if (p.memory->mismatch()) throw invalid_argument("the memory plan mismatched");
    p.work = m_backend->end_recording();
  } catch (const std::exception& e) {
    m_backend->abandon_recording();
    p.memory->abandon();
    m_device_outputs.clear();
    p.work.reset();
    if (p.not_recordable.empty()) p.not_recordable = std::string("recording failed: ") + e.what();
  }
}

void session::run_eager(plan& p, bool use_arena, bool marks) {
  m_device_outputs.clear();  // frees their slots for this run
  static_cast<void>(m_backend->take_blocking_note());
  if (!use_arena) {
    m_device_outputs = execute(p, marks);
  } else {
    p.memory->begin_replay();
    try {
      const source_scope scope(*m_backend, p.memory.get());
      m_device_outputs = execute(p, marks);
    } catch (...) {
      p.memory->abandon();
      throw;
    }
    p.memory->end_replay();
  }
  m_in_flight = true;
  if (!m_backend->take_blocking_note().empty()) p.launch_waits = true;
  p.warm_generation = m_backend->context_generation();
}

std::map<std::string, tensor> session::execute(plan& p, bool marks) {
  const bool device = m_backend->on_device();
  std::map<std::string, tensor> values;
  const auto lookup = [&](const std::string& name) -> const tensor* {
    if (name.empty()) return nullptr;
    if (auto it = values.find(name); it != values.end()) return &it->second;
    if (device) {
      if (auto it = p.staged.find(name); it != p.staged.end()) return &it->second;
      if (auto it = p.resident.find(name); it != p.resident.end()) return &it->second;
    } else {
      if (auto it = m_inputs.find(name); it != m_inputs.end()) return &it->second;
      if (auto it = p.g.initializers.find(name); it != p.g.initializers.end()) return &it->second;
    }
    throw invalid_argument("value '" + name + "' is missing at run time");
  };
  std::vector<const tensor*> inputs;
  std::vector<tensor> outputs;
  for (std::size_t i = 0; i < p.g.nodes.size(); ++i) {
    const node& n = p.g.nodes[i];
    inputs.clear();
    for (const auto& name : n.inputs) inputs.push_back(lookup(name));
    outputs.assign(n.outputs.size(), tensor());
    m_backend->run(n, inputs, outputs);
    for (std::size_t o = 0; o < n.outputs.size(); ++o) {
      if (!n.outputs[o].empty()) values.insert_or_assign(n.outputs[o], std::move(outputs[o]));
    }
    outputs.clear();  // dropped now, so a recorded lifetime ends here
    for (const auto& name : p.drops[i]) values.erase(name);
    if (marks) m_backend->mark();
  }
  std::map<std::string, tensor> result;
  for (const auto& v : p.g.outputs) result.insert_or_assign(v.name, *lookup(v.name));
  return result;
}

std::vector<node_time> session::node_times(std::size_t runs) {
  if (runs == 0) throw invalid_argument("node_times needs at least one run");
  prepare();  // the plan, constants and inputs; the device held until synchronize()
  plan& p = *m_plan;
  std::vector<node_time> times(p.g.nodes.size());
  for (std::size_t i = 0; i < times.size(); ++i) {
    const node& n = p.g.nodes[i];
    times[i] = {n.name, n.op_type, n.domain, 0.0, 0.0, {}};
  }
  const bool device = m_backend->on_device();
  try {
    for (std::size_t run = 0; run <= runs; ++run) {  // run 0 warms up, untimed
      m_outputs.clear();
      m_backend->begin_marks();
      if (device) {
        run_eager(p, arena_usable(p), true);
      } else {
        m_outputs = execute(p, true);
      }
      const std::vector<double> intervals = m_backend->mark_intervals_ms();
      complete();
      if (run == 0) continue;
      for (std::size_t i = 0; i < times.size() && i < intervals.size(); ++i) {
        times[i].mean_ms += intervals[i];  // the sum until the end; divided once below
        times[i].min_ms = run == 1 ? intervals[i] : std::min(times[i].min_ms, intervals[i]);
      }
    }
  } catch (...) {
    m_in_flight = false;
    m_backend->end_run();
    throw;
  }
  for (std::size_t i = 0; i < times.size(); ++i) {
    // Rounding can put sum / runs an ulp below the least of equal intervals; a mean is never
    // below the minimum, so it is held there.
    times[i].mean_ms = std::max(times[i].min_ms, times[i].mean_ms / static_cast<double>(runs));
    times[i].detail = m_backend->node_detail(p.g.nodes[i]);
    if (std::string why = m_backend->fallback(p.g.nodes[i]); !why.empty()) {
      times[i].detail += (times[i].detail.empty() ? "" : "; ") + why;
    }
  }
  m_backend->end_run();
  return times;
}

}  // namespace coolbench::engine
