// coolbench.Session over engine::session. Arrays are copied in and out (the
// engine owns its tensors); bfloat16, which numpy lacks, goes in as float32
// (rounded to nearest even) or as an array whose dtype is named "bfloat16"
// (ml_dtypes'), and comes out as float32.
#include "python/session.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "coolbench/device/device.hpp"
#include "coolbench/engine/model.hpp"
#include "coolbench/engine/session.hpp"

namespace py = pybind11;

namespace coolbench::python {
namespace {

/// A model input or output as Session.inputs / .outputs show it.
struct value_description {
  std::string name;
  std::string dtype;
  py::object shape;  ///< a list: ints, strings for symbolic dimensions, None when unknown
};

value_description describe(const engine::value_info& v) {
  value_description d{v.name, std::string(engine::to_string(v.type)), py::none()};
  if (!v.has_shape) return d;
  py::list shape;
  for (const auto& dim : v.shape) {
    if (dim.value >= 0) {
      shape.append(dim.value);
    } else if (!dim.symbol.empty()) {
      shape.append(dim.symbol);
    } else {
      shape.append(py::none());
    }
  }
  d.shape = shape;
  return d;
}

/// The numpy dtype name of an array ("float32", "bfloat16" for ml_dtypes').
std::string dtype_name(const py::array& a) { return py::str(a.dtype().attr("name")); }

engine::shape_t shape_of(const py::array& a) {
  engine::shape_t shape;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) shape.push_back(static_cast<std::int64_t>(a.shape(i)));
  return shape;
}

/// `value` as a tensor of the input's type; InvalidArgument when it is not one.
engine::tensor to_tensor(const engine::value_info& input, const py::handle& value) {
  if (!py::isinstance<py::array>(value)) {
    throw invalid_argument("input '" + input.name + "' takes a numpy array; got " +
                           std::string(py::str(py::type::of(value).attr("__name__"))));
  }
  const auto given = py::reinterpret_borrow<py::array>(value);
  const std::string got = dtype_name(given);
  const std::string want(engine::to_string(input.type));
  if (input.type == engine::dtype::bfloat16 && got == "float32") {
    const auto a = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(given);
    engine::tensor t(input.type, shape_of(a));
    auto raw = t.raw();
    for (py::ssize_t i = 0; i < a.size(); ++i) {
      const std::uint16_t bits = engine::float_to_bfloat16(a.data()[i]);
      std::memcpy(raw.data() + 2 * i, &bits, sizeof bits);
    }
    return t;
  }
  if (got != want) {
    throw invalid_argument("input '" + input.name + "' is " + want + " in the model; got a " + got +
                           " array" +
                           (input.type == engine::dtype::bfloat16
                                ? " (give bfloat16 as float32, or an ml_dtypes bfloat16 array)"
                                : " (convert it with .astype(numpy." + want + "))"));
  }
  const auto contiguous = py::array::ensure(given, py::array::c_style);
  engine::tensor t(input.type, shape_of(contiguous));
  if (t.bytes() > 0) std::memcpy(t.raw().data(), contiguous.data(), t.bytes());
  return t;
}

/// A host tensor as a new numpy array (bfloat16 widened to float32).
py::array to_array(const engine::tensor& t) {
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  if (t.type() == engine::dtype::bfloat16) {
    py::array_t<float> out(shape);
    const auto raw = t.raw();
    for (py::ssize_t i = 0; i < out.size(); ++i) {
      std::uint16_t bits = 0;
      std::memcpy(&bits, raw.data() + 2 * i, sizeof bits);
      out.mutable_data()[i] = engine::bfloat16_to_float(bits);
    }
    return out;
  }
  // numpy.empty: C-contiguous, of numpy's own dtype of that name.
  auto out =
      py::module_::import("numpy")
          .attr("empty")(py::tuple(py::cast(shape)), std::string(engine::to_string(t.type())))
          .cast<py::array>();
  if (t.bytes() > 0) std::memcpy(out.mutable_data(), t.raw().data(), t.bytes());
  return out;
}

/// The Python object: the engine session, shared with a measurement of it.
class py_session {
 public:
  py_session(const std::string& path, std::optional<std::string> device,
             const std::map<std::string, std::int64_t>& dims, std::optional<bool> fuse,
             bool cuda_graph, bool gemm_autotune) {
    m_device = device ? *device : (device::device::count() > 0 ? "cuda:0" : "cpu");
    if (!device && m_device == "cpu") {
      py::module_::import("warnings")
          .attr("warn")(
              "coolbench.Session: no NVIDIA GPU or driver found: running on the CPU "
              "(choose with device='cpu' or device='cuda:N')",
              py::module_::import("builtins").attr("RuntimeWarning"), 2);
    }
    if (m_device != "cpu" && m_device != "cuda" && !m_device.starts_with("cuda:")) {
      throw invalid_argument("device takes 'cpu' or 'cuda:N' (N a CUDA ordinal); got '" + m_device +
                             "'");
    }
    engine::session_options options;
    for (const auto& [symbol, value] : dims) options.dimensions[symbol] = value;
    options.fuse = fuse;
    options.cuda_graph = cuda_graph;
    options.gemm_autotune = gemm_autotune;
    engine::graph g = engine::load_onnx(path);
    py::gil_scoped_release no_gil;
    m_session = std::make_shared<engine::session>(std::move(g), options, m_device);
  }

  [[nodiscard]] const std::shared_ptr<engine::session>& engine_session() const { return m_session; }
  [[nodiscard]] const std::string& device() const { return m_device; }

  /// The feeds as tensors keyed by input name, every input present, no other.
  [[nodiscard]] std::map<std::string, engine::tensor> tensors(const py::dict& feeds) const {
    std::map<std::string, engine::tensor> out;
    for (const auto& [key, value] : feeds) {
      const std::string name = py::str(key);
      const auto& inputs = m_session->inputs();
      const auto it = std::find_if(inputs.begin(), inputs.end(),
                                   [&](const engine::value_info& v) { return v.name == name; });
      if (it == inputs.end())
        throw invalid_argument("the model has no input '" + name + "'" + input_list());
      out.insert_or_assign(name, to_tensor(*it, value));
    }
    for (const auto& v : m_session->inputs()) {
      if (!out.contains(v.name))
        throw invalid_argument("input '" + v.name + "' is missing from feeds");
    }
    return out;
  }

  py::list run(const std::optional<std::vector<std::string>>& output_names, const py::dict& feeds) {
    std::vector<std::string> names;
    if (output_names) {
      names = *output_names;
    } else {
      for (const auto& v : m_session->outputs()) names.push_back(v.name);
    }
    for (const auto& name : names) {
      const auto& outputs = m_session->outputs();
      if (std::none_of(outputs.begin(), outputs.end(),
                       [&](const engine::value_info& v) { return v.name == name; })) {
        throw invalid_argument("the model has no output '" + name + "'");
      }
    }
    auto inputs = tensors(feeds);
    {
      py::gil_scoped_release no_gil;
      for (auto& [name, value] : inputs) m_session->set_input(name, std::move(value));
      m_session->run();
      // On a GPU the outputs are copied back when first read: here, without the GIL.
      for (const auto& name : names) static_cast<void>(m_session->output(name));
    }
    if (!m_fallbacks_checked) warn_fallbacks();
    py::list out;
    for (const auto& name : names) out.append(to_array(m_session->output(name)));
    return out;
  }

  /// Each plan node's time with these feeds (engine::session::node_times).
  py::list node_times(const py::dict& feeds, std::size_t runs) {
    if (runs == 0) throw invalid_argument("node_times: runs must be at least 1");
    auto inputs = tensors(feeds);
    std::vector<engine::node_time> times;
    {
      py::gil_scoped_release no_gil;
      for (auto& [name, value] : inputs) m_session->set_input(name, std::move(value));
      times = m_session->node_times(runs);
    }
    py::list out;
    for (const auto& t : times) {
      py::dict d;
      d["name"] = t.name;
      d["op_type"] = t.op_type;
      d["domain"] = t.domain;
      d["mean_ms"] = t.mean_ms;
      d["min_ms"] = t.min_ms;
      d["detail"] = t.detail;
      out.append(d);
    }
    return out;
  }

 private:
  [[nodiscard]] std::string input_list() const {
    std::string text;
    for (const auto& v : m_session->inputs()) text += (text.empty() ? " (it has " : ", ") + v.name;
    return text.empty() ? text : text + ")";
  }

  // After the first run: a RuntimeWarning when nodes took a slower path than the engine's own
  // (an elementwise program interpreted: NVRTC missing), which execution['fallbacks'] lists.
  void warn_fallbacks() {
    m_fallbacks_checked = true;
    const std::vector<std::string> fallbacks = m_session->execution().fallbacks;
    if (fallbacks.empty()) return;
    py::module_::import("warnings")
        .attr("warn")("coolbench.Session: " + std::to_string(fallbacks.size()) +
                          " node(s) ran a slower path than the engine's own, so its times are "
                          "not the engine's: " +
                          fallbacks.front() + " (execution['fallbacks'] lists each)",
                      py::module_::import("builtins").attr("RuntimeWarning"), 3);
  }

  std::string m_device;
  std::shared_ptr<engine::session> m_session;
  bool m_fallbacks_checked = false;
};

}  // namespace

bool is_session(const py::handle& object) { return py::isinstance<py_session>(object); }

std::unique_ptr<measure::workload> make_session_workload(const py::handle& session,
                                                         const py::handle& feeds) {
  const auto& s = session.cast<const py_session&>();
  if (!py::isinstance<py::dict>(feeds)) {
    throw invalid_argument("measure(session, feeds): feeds is a dict of input name -> numpy array");
  }
  auto inputs = s.tensors(py::reinterpret_borrow<py::dict>(feeds));
  return measure::make_session_workload(s.engine_session(), std::move(inputs), "model session");
}

void add_session(py::module_& m) {
  py::class_<value_description>(m, "ValueInfo", "A model input or output: name, dtype, shape.")
      .def_readonly("name", &value_description::name)
      .def_readonly("dtype", &value_description::dtype,
                    "numpy's name for it: float32, float16, bfloat16, int64, int32 or bool")
      .def_readonly("shape", &value_description::shape,
                    "ints, and strings for symbolic dimensions; None without a declared shape")
      .def("__repr__", [](const value_description& v) {
        return "<coolbench.ValueInfo " + v.name + " " + v.dtype + " " +
               std::string(py::repr(v.shape)) + ">";
      });
  py::class_<py_session>(m, "Session", R"(An ONNX model on coolbench's engine, used like
onnxruntime's InferenceSession:

    s = coolbench.Session("model.onnx", device="cuda:0", dims={"batch": 1})
    (logits,) = s.run(None, {"input_ids": ids})

device: "cpu", "cuda" or "cuda:N"; None (the default) takes GPU 0 when there is one,
else the CPU with a RuntimeWarning. dims binds symbolic input dimensions ahead of the
first run. Feeds are numpy arrays of the input's dtype (bfloat16: float32 or an
ml_dtypes bfloat16 array); outputs are new numpy arrays (bfloat16 as float32).
fuse: run the fusion passes (None: on a GPU, not on the CPU). cuda_graph: on a GPU,
run a model whose shapes are all static as one CUDA graph (False: kernel by kernel).
gemm_autotune: on a GPU, time cuBLASLt's candidate algorithms for each new product shape
and keep the fastest (False: the heuristic's first; COOLBENCH_GEMM_AUTOTUNE=0 too).)")
      .def(py::init<const std::string&, std::optional<std::string>,
                    const std::map<std::string, std::int64_t>&, std::optional<bool>, bool, bool>(),
           py::arg("path"), py::kw_only(), py::arg("device") = py::none(),
           py::arg("dims") = std::map<std::string, std::int64_t>{}, py::arg("fuse") = py::none(),
           py::arg("cuda_graph") = true, py::arg("gemm_autotune") = true)
      .def_property_readonly("device", &py_session::device, "Where it runs: cpu or cuda:N")
      .def_property_readonly("inputs",
                             [](const py_session& s) {
                               std::vector<value_description> out;
                               for (const auto& v : s.engine_session()->inputs()) {
                                 out.push_back(describe(v));
                               }
                               return out;
                             })
      .def_property_readonly("outputs",
                             [](const py_session& s) {
                               std::vector<value_description> out;
                               for (const auto& v : s.engine_session()->outputs()) {
                                 out.push_back(describe(v));
                               }
                               return out;
                             })
      .def("run", &py_session::run, py::arg("output_names"), py::arg("feeds"),
           "The outputs named (None: all, in the model's order) as numpy arrays.")
      .def("node_times", &py_session::node_times, py::arg("feeds"), py::arg("runs") = 20,
           "Each node of the session's plan (fusions included, in run order) as a dict: name, "
           "op_type, domain, mean_ms and min_ms over `runs` runs node by node after one "
           "untimed run (CUDA events between the nodes on a GPU, queued behind a wait so they "
           "bracket GPU time; the host clock on the CPU). Where the time goes, not what a run "
           "costs: use measure() for that. detail: what the backend chose for the node (a "
           "product's cuBLASLt algorithm and how it was chosen), empty when nothing.")
      .def(
          "release",
          [](py_session& s) {
            py::gil_scoped_release no_gil;
            s.engine_session()->release();
          },
          "Drops the inputs, outputs and every device tensor; the next run() copies the "
          "weights in again.")
      .def_property_readonly(
          "execution",
          [](const py_session& s) {
            const engine::execution_info info = s.engine_session()->execution();
            py::dict d;
            d["mode"] = std::string(engine::to_string(info.mode));
            d["reason"] = info.reason;
            d["arena"] = info.arena;
            d["arena_bytes"] = info.arena_bytes;
            d["allocations"] = info.allocations;
            d["fusions"] = s.engine_session()->fusion_counts();
            d["fallbacks"] = info.fallbacks;
            return d;
          },
          "How runs execute: mode ('host', 'eager' or 'graph'), reason (why not a graph), "
          "arena, arena_bytes, allocations (per run, from the arena), fusions (rewrites "
          "per fusion pass) and fallbacks (nodes whose last run took a slower path than the "
          "engine's own, each with why: an elementwise program interpreted because NVRTC is "
          "missing; empty when none did).")
      .def("__repr__", [](const py_session& s) {
        return "<coolbench.Session on " + s.device() + ", " +
               std::to_string(s.engine_session()->node_count()) + " nodes, " +
               std::string(engine::to_string(s.engine_session()->execution().mode)) + ">";
      });
}

}  // namespace coolbench::python
