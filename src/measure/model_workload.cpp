// An ONNX model on the engine as a workload: seeded random inputs, set once
// by prepare(). On the CPU run() times session::run() with the host clock.
// On the CUDA backend it times the session's launch with two CUDA events on
// its stream, the stream held by a wait kernel while the launch is queued
// (as the GEMM chain and the callables are: detail/stream_hold.hpp), so the
// figure is the GPU's time for the run (one CUDA graph launch for a static
// plan); the inputs are on the device already and the outputs stay there.
// The session's device error flag (an index out of range) is checked after
// the timed region. device() names the GPU, so the protocol gates and
// watches it and releases it between contexts (release() drops the session
// and every device tensor it holds; prepare() makes a new one).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "coolbench/core/clock.hpp"
#include "coolbench/engine/model.hpp"
#include "coolbench/engine/session.hpp"
#include "coolbench/measure/workload.hpp"
#include "coolbench/stats/summary.hpp"

#ifdef COOLBENCH_MEASURE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "coolbench/device.hpp"
#include "core/cuda_check.hpp"
#include "measure/detail/owned_event.hpp"
#include "measure/detail/stream_hold.hpp"
#endif

namespace coolbench::measure {
namespace {

#ifdef COOLBENCH_MEASURE_HAVE_CUDA
// The first hold covers a graph launch with room to spare; detail::adaptive_hold
// lengthens it for a session that launches node by node.
constexpr std::uint64_t first_hold_ns = 50'000;
constexpr std::uint64_t max_hold_ns = 200'000'000;

/// Two events around a device session's launch, on its stream. The events
/// are adopted by the device layer (a release destroys them); the timer is
/// made again after each release of the workload.
class launch_timer {
 public:
  explicit launch_timer(int ordinal)
      : m_lease(device::device::get(ordinal).acquire()),
        m_hold(first_hold_ns, max_hold_ns),
        m_start(detail::make_owned_event(m_lease)),
        m_end(detail::make_owned_event(m_lease)) {}

  timing time(engine::session& session) {
    session.prepare();  // the plan, its memory and its graph: not timed
    const auto stream = static_cast<cudaStream_t>(session.stream());
    // A session whose launch waits for the device cannot be held: the
    // figure then includes the host's launch time.
    const bool hold = !session.execution().launch_waits;
    timing t;
    t.start_ns = steady_now_ns();
    for (;;) {
      const std::int64_t queue_start = steady_now_ns();
      if (hold) detail::hold_stream(stream, m_hold.ns());
      COOLBENCH_CUDA_CALL(cudaEventRecord(m_start.event, stream));
      session.launch();
      COOLBENCH_CUDA_CALL(cudaEventRecord(m_end.event, stream));
      const auto queued = static_cast<std::uint64_t>(steady_now_ns() - queue_start);
      const cudaError_t started = cudaEventQuery(m_start.event);
      if (started != cudaErrorNotReady) COOLBENCH_CUDA_CALL(started);
      COOLBENCH_CUDA_CALL(cudaEventSynchronize(m_end.event));
      if (!hold) break;
      if (started == cudaErrorNotReady || m_hold.at_max()) {
        m_hold.held(queued);
        break;
      }
      m_hold.outlasted(queued);  // queued after the hold ended: again, held longer
    }
    session.synchronize();  // what the kernels found (an index out of range)
    t.end_ns = steady_now_ns();
    float ms = 0;
    COOLBENCH_CUDA_CALL(cudaEventElapsedTime(&ms, m_start.event, m_end.event));
    t.latency_ms = static_cast<double>(ms);
    return t;
  }

 private:
  device::lease m_lease;
  detail::adaptive_hold m_hold;
  detail::owned_event m_start;
  detail::owned_event m_end;
};
#else
class launch_timer {
 public:
  explicit launch_timer(int ordinal) {
    throw not_available("cannot time a session on GPU " + std::to_string(ordinal) +
                        ": this coolbench was built without CUDA");
  }
  timing time(engine::session& /*session*/) { return {}; }
};
#endif

// One run of a session: on a GPU the events' time around its launch
// (launch_timer), on the CPU the host clock around session::run().
timing timed_run(engine::session& session, std::optional<launch_timer>& timer) {
  if (timer) return timer->time(session);
  timing t;
  t.start_ns = steady_now_ns();
  session.run();
  t.end_ns = steady_now_ns();
  t.latency_ms = static_cast<double>(t.end_ns - t.start_ns) / 1e6;
  return t;
}

// Integer inputs that index nothing the model shows get ids in [0, 100).
constexpr std::int64_t default_index_range = 100;
constexpr std::uint64_t input_seed = 20261202;

// The rows of the initializer a Gather indexes with `input` (GPT-2's token
// embedding for input_ids), so that ids stay in range; empty when none does.
std::optional<std::int64_t> gathered_rows(const engine::graph& g, const std::string& input) {
  for (const auto& n : g.nodes) {
    if (n.op_type != "Gather" || n.inputs.size() < 2 || n.inputs[1] != input) continue;
    const auto table = g.initializers.find(n.inputs[0]);
    if (table == g.initializers.end()) continue;
    const auto& shape = table->second.shape();
    auto axis = n.get<std::int64_t>("axis", 0);
    if (axis < 0) axis += static_cast<std::int64_t>(shape.size());
    if (axis < 0 || axis >= static_cast<std::int64_t>(shape.size())) continue;
    if (shape[static_cast<std::size_t>(axis)] > 0) return shape[static_cast<std::size_t>(axis)];
  }
  return std::nullopt;
}

engine::shape_t input_shape(const engine::value_info& input,
                            const std::map<std::string, std::int64_t>& dimensions) {
  if (!input.has_shape) {
    throw invalid_argument("input '" + input.name +
                           "' has no declared shape; the model workload cannot make data for it");
  }
  engine::shape_t shape;
  for (std::size_t i = 0; i < input.shape.size(); ++i) {
    const auto& d = input.shape[i];
    if (d.value >= 0) {
      shape.push_back(d.value);
    } else if (!d.symbol.empty()) {
      const auto it = dimensions.find(d.symbol);
      if (it == dimensions.end()) {
        throw invalid_argument("input '" + input.name + "': dimension " + std::to_string(i) +
                               " is the symbol '" + d.symbol + "'; bind it (coolbench run --dim " +
                               d.symbol + "=1)");
      }
      shape.push_back(it->second);
    } else {
      throw invalid_argument("input '" + input.name + "': dimension " + std::to_string(i) +
                             " is unknown (neither a number nor a symbol)");
    }
  }
  return shape;
}

engine::tensor random_input(const engine::value_info& input, engine::shape_t shape,
                            std::int64_t index_range, std::mt19937_64& rng) {
  engine::tensor t(input.type, std::move(shape));
  switch (input.type) {
    case engine::dtype::float32: {
      std::normal_distribution<float> normal(0.0F, 1.0F);
      for (auto& x : t.data<float>()) x = normal(rng);
      break;
    }
    case engine::dtype::float16:
    case engine::dtype::bfloat16: {
      std::normal_distribution<float> normal(0.0F, 1.0F);
      const bool half = input.type == engine::dtype::float16;
      auto raw = t.raw();
      for (std::size_t i = 0; i + 1 < raw.size(); i += 2) {
        const float value = normal(rng);
        const std::uint16_t bits =
            half ? engine::float_to_half(value) : engine::float_to_bfloat16(value);
        std::memcpy(raw.data() + i, &bits, sizeof bits);
      }
      break;
    }
    case engine::dtype::int64: {
      std::uniform_int_distribution<std::int64_t> ids(0, index_range - 1);
      for (auto& x : t.data<std::int64_t>()) x = ids(rng);
      break;
    }
    case engine::dtype::int32: {
      std::uniform_int_distribution<std::int64_t> ids(0, index_range - 1);
      for (auto& x : t.data<std::int32_t>()) x = static_cast<std::int32_t>(ids(rng));
      break;
    }
    case engine::dtype::boolean: {
      std::bernoulli_distribution coin;
      for (auto& x : t.raw()) x = static_cast<std::byte>(coin(rng) ? 1 : 0);
      break;
    }
  }
  return t;
}

/// The CUDA ordinal a backend name ("cuda", "cuda:N") runs on; empty for "cpu".
std::optional<int> cuda_ordinal(const std::string& backend) {
  if (backend == "cuda") return 0;
  if (!backend.starts_with("cuda:")) return std::nullopt;
  const std::string digits = backend.substr(5);
  if (digits.empty() || digits.size() > 4 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    throw invalid_argument("backend '" + backend + "': expected cuda:N with N a CUDA ordinal");
  }
  return std::stoi(digits);
}

/// The warning for a session whose nodes took slower paths than the engine's own
/// (execution_info::fallbacks): how many, the first and why.
std::vector<std::string> fallback_warnings(const engine::session& s) {
  const std::vector<std::string> fallbacks = s.execution().fallbacks;
  if (fallbacks.empty()) return {};
  std::string text = std::to_string(fallbacks.size()) +
                     (fallbacks.size() == 1 ? " node" : " nodes") +
                     " of the model ran a slower path than the engine's own, so the figure is "
                     "not the engine's: " +
                     fallbacks.front();
  if (fallbacks.size() > 1) {
    text += " (and " + std::to_string(fallbacks.size() - 1) +
            " more; `coolbench nodes` shows each node's)";
  }
  return {text};
}

class model_workload final : public workload {
 public:
  model_workload(std::filesystem::path path, std::string backend,
                 std::map<std::string, std::int64_t> dimensions, bool cuda_graph)
      : m_path(std::move(path)),
        m_backend(std::move(backend)),
        m_dimensions(std::move(dimensions)),
        m_cuda_graph(cuda_graph) {
    (void)cuda_ordinal(m_backend);  // a malformed name fails here, not mid-run
    if (!std::filesystem::is_regular_file(m_path)) {
      throw invalid_argument("no model file '" + m_path.string() + "'");
    }
    // Loaded here, so that a file that is no model fails before any
    // measuring (model_error); the first prepare() takes this graph.
    m_graph = engine::load_onnx(m_path);
  }

  [[nodiscard]] std::string describe() const override {
    std::string text = "model " + m_path.filename().string() + " (" +
                       (m_session ? m_session->backend_description() : m_backend) + ")";
    for (const auto& [name, shape] : m_shapes) text += ", " + name + " " + engine::to_string(shape);
    return text;
  }
  [[nodiscard]] std::optional<int> device() const override { return cuda_ordinal(m_backend); }

  void prepare() override {
    if (m_session) return;
    engine::graph g = m_graph ? std::move(*m_graph) : engine::load_onnx(m_path);
    m_graph.reset();
    std::mt19937_64 rng(input_seed);
    std::vector<std::pair<std::string, engine::tensor>> inputs;
    std::map<std::string, engine::shape_t> shapes;
    for (const auto& input : g.inputs) {
      auto shape = input_shape(input, m_dimensions);
      shapes[input.name] = shape;
      const std::int64_t range = gathered_rows(g, input.name).value_or(default_index_range);
      inputs.emplace_back(input.name, random_input(input, std::move(shape), range, rng));
    }
    engine::session_options options;
    for (const auto& [symbol, value] : m_dimensions) options.dimensions[symbol] = value;
    options.cuda_graph = m_cuda_graph;
    auto s = std::make_unique<engine::session>(std::move(g), options, m_backend);
    for (auto& [name, value] : inputs) s->set_input(name, std::move(value));
    if (const auto ordinal = cuda_ordinal(m_backend)) m_timer.emplace(*ordinal);
    m_session = std::move(s);
    m_shapes = std::move(shapes);
  }

  timing run() override {
    prepare();
    return timed_run(*m_session, m_timer);
  }

  /// The nodes' times and how runs execute (profile_model_nodes).
  [[nodiscard]] std::vector<engine::node_time> node_times(std::size_t runs) {
    prepare();
    return m_session->node_times(runs);
  }
  [[nodiscard]] std::string execution() const {
    if (!m_session) return {};
    const engine::execution_info info = m_session->execution();
    std::string text(engine::to_string(info.mode));
    if (!info.reason.empty()) text += " (" + info.reason + ")";
    if (!info.fallbacks.empty()) {
      text += "; " + std::to_string(info.fallbacks.size()) + " node(s) on a slower path";
    }
    return text;
  }
  [[nodiscard]] std::vector<std::string> warnings() const override {
    return m_session ? fallback_warnings(*m_session) : std::vector<std::string>{};
  }

  void release() override {
    m_timer.reset();
    m_session.reset();
    m_shapes.clear();
  }

 private:
  std::filesystem::path m_path;
  std::string m_backend;
  std::map<std::string, std::int64_t> m_dimensions;
  bool m_cuda_graph = true;
  std::optional<engine::graph> m_graph;  ///< loaded, not yet prepared
  std::unique_ptr<engine::session> m_session;
  std::optional<launch_timer> m_timer;  ///< on a GPU
  std::map<std::string, engine::shape_t> m_shapes;
};

/// A session the caller made, with the caller's inputs: timed as
/// model_workload is. release() releases the session (its device tensors
/// and lease); prepare() sets the inputs again, and the session copies its
/// constants in again by itself on the next run().
class session_workload final : public workload {
 public:
  session_workload(std::shared_ptr<engine::session> s, std::map<std::string, engine::tensor> inputs,
                   std::string name)
      : m_session(std::move(s)), m_inputs(std::move(inputs)), m_name(std::move(name)) {
    if (!m_session) throw invalid_argument("make_session_workload: no session");
    m_device = cuda_ordinal(std::string(m_session->backend_name()));
  }
  [[nodiscard]] std::string describe() const override {
    std::string text = m_name + " (" + m_session->backend_description() + ")";
    for (const auto& [name, value] : m_inputs) {
      text += ", " + name + " " + engine::to_string(value.shape());
    }
    return text;
  }
  [[nodiscard]] std::optional<int> device() const override { return m_device; }
  void prepare() override {
    if (m_prepared) return;
    for (const auto& [name, value] : m_inputs) m_session->set_input(name, value);
    if (m_device) m_timer.emplace(*m_device);
    m_prepared = true;
  }
  timing run() override {
    prepare();
    return timed_run(*m_session, m_timer);
  }
  [[nodiscard]] std::vector<std::string> warnings() const override {
    return fallback_warnings(*m_session);
  }
  void release() override {
    m_timer.reset();
    m_session->release();
    m_prepared = false;
  }

 private:
  std::shared_ptr<engine::session> m_session;
  std::map<std::string, engine::tensor> m_inputs;
  std::string m_name;
  std::optional<int> m_device;
  std::optional<launch_timer> m_timer;  ///< on a GPU
  bool m_prepared = false;
};

}  // namespace

std::unique_ptr<workload> make_session_workload(std::shared_ptr<engine::session> session,
                                                std::map<std::string, engine::tensor> inputs,
                                                std::string name) {
  return std::make_unique<session_workload>(std::move(session), std::move(inputs), std::move(name));
}

std::unique_ptr<workload> make_model_workload(const std::filesystem::path& model,
                                              std::string_view backend,
                                              const std::map<std::string, std::int64_t>& dimensions,
                                              bool cuda_graph) {
  return std::make_unique<model_workload>(model, std::string(backend), dimensions, cuda_graph);
}

model_node_profile profile_model_nodes(const std::filesystem::path& model, std::string_view backend,
                                       const std::map<std::string, std::int64_t>& dimensions,
                                       bool cuda_graph, std::size_t runs, bool trace_kernels) {
  if (runs == 0) throw invalid_argument("profile_model_nodes needs at least one run");
  model_workload w(model, std::string(backend), dimensions, cuda_graph);
  if (trace_kernels && !w.device()) {
    throw invalid_argument("a kernel trace needs a GPU backend, not " + std::string(backend));
  }
  model_node_profile profile;
  profile.runs = runs;
  std::vector<double> times;
  for (std::size_t i = 0; i < 2 * runs; ++i) {
    const double ms = w.run().latency_ms;
    if (i >= runs) times.push_back(ms);  // the first half warms up
  }
  profile.least_run_ms = *std::min_element(times.begin(), times.end());
  profile.median_run_ms = stats::median(times);
  profile.execution = w.execution();
  profile.description = w.describe();
#ifdef COOLBENCH_MEASURE_HAVE_CUDA  // else no backend has a device: refused above
  if (trace_kernels) {
    // Each held run begins with the hold kernel, which splits the trace
    // into runs; a run that waits for the host has no hold, so one run is
    // traced alone then.
    for (const std::size_t traced : {runs, std::size_t{1}}) {
      device::kernel_trace trace;
      for (std::size_t i = 0; i < traced; ++i) (void)w.run();  // each run waits for its events
      const auto records = trace.stop();
      profile.kernels = device::summarize_kernel_runs(records, detail::k_hold_kernel_name);
      profile.kernels_dropped = trace.dropped();
      if (profile.kernels->marked || traced == 1) break;
    }
  }
#endif
  profile.nodes = w.node_times(runs);
  w.release();
  return profile;
}

}  // namespace coolbench::measure
