// The coolbench Python module (docs/python.md): the measurement protocol over
// Python callables and named workloads, and the device release, over the same
// library as the command. The protocol runs with the GIL released; every call
// back into Python (the callables, progress, the Ctrl-C check) takes it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <Python.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "coolbench/core/error.hpp"
#include "coolbench/core/version.hpp"
#include "coolbench/device.hpp"
#include "coolbench/device/json.hpp"
#include "coolbench/measure/options.hpp"
#include "coolbench/measure/protocol.hpp"
#include "coolbench/measure/workload.hpp"
#include "coolbench/report.hpp"
#include "python/compare.hpp"
#include "python/devices.hpp"
#include "python/keywords.hpp"
#include "python/measure_types.hpp"
#ifdef COOLBENCH_PYTHON_HAVE_ENGINE
#include "python/session.hpp"
#endif

namespace py = pybind11;

namespace coolbench::python {
namespace {

py::object new_exception(py::module_& m, const char* name, const char* doc, py::tuple bases) {
  const std::string qualified = std::string("coolbench.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (type == nullptr) throw py::error_already_set();
  auto object = py::reinterpret_steal<py::object>(type);
  m.attr(name) = object;
  return object;
}

result run_measure(const measure_arguments& a) {
#ifdef COOLBENCH_PYTHON_HAVE_ENGINE
  const bool is_model_session = is_session(a.workload);
#else
  const bool is_model_session = false;
#endif
  const bool is_callable = !is_model_session && PyCallable_Check(a.workload.ptr()) != 0;
  if (!is_model_session && !a.feeds.is_none()) {
    throw invalid_argument("feeds go with a coolbench.Session: measure(session, feeds)");
  }
  if (!is_callable && !is_model_session && !py::isinstance<py::str>(a.workload)) {
    throw invalid_argument(
        "measure() takes a callable (one inference) or a workload name: "
        "'gemm:DTYPE:M:N:K[:COUNT]', 'gemm:fp16:gpt2-small' or the path of an .onnx model");
  }
  // A callable's framework (PyTorch, CuPy) holds the context: keep it unless
  // told the callable survives a reset. coolbench's own workloads reset.
  const measure::context_release release =
      measure::parse_context_release(a.release.value_or(is_callable ? "keep" : "reset"));

  const bool resets = release == measure::context_release::reset;
  check_common(a, resets);
  const measure::protocol_options o = measure::options_from(a.protocol, resets);

  python_calls calls;
  calls.progress = a.progress;
  std::unique_ptr<measure::workload> w;
  if (is_callable) {
    calls.run = a.workload;
    calls.setup = a.setup;
    calls.teardown = a.teardown;
    measure::callable_spec spec;
    if (a.name) {
      spec.name = *a.name;
    } else {
      const py::object label = py::hasattr(a.workload, "__qualname__")
                                   ? a.workload.attr("__qualname__")
                                   : py::type::of(a.workload).attr("__name__");
      spec.name = "callable " + py::str(label).cast<std::string>();
    }
    // A GPU that is not there is said before anything runs.
    if (a.device) (void)device::device::get(*a.device);
    spec.run = [&calls] { calls.call(calls.run, "callable"); };
    if (!calls.setup.is_none()) spec.setup = [&calls] { calls.call(calls.setup, "setup"); };
    if (!calls.teardown.is_none()) {
      spec.teardown = [&calls] { calls.call(calls.teardown, "teardown"); };
    }
    spec.device = a.device;
    spec.stream = a.stream;
    spec.hold = a.hold.value_or(true);
    spec.flops = a.flops;
    w = measure::make_callable_workload(std::move(spec));
  } else if (is_model_session) {
#ifdef COOLBENCH_PYTHON_HAVE_ENGINE
    if (!a.setup.is_none() || !a.teardown.is_none() || a.hold || a.device) {
      throw invalid_argument(
          "setup, teardown, hold and device go with a callable; a Session has its device");
    }
    w = make_session_workload(a.workload, a.feeds);
#endif
  } else {
    if (!a.setup.is_none() || !a.teardown.is_none() || a.hold) {
      throw invalid_argument("setup, teardown and hold go with a callable, not a workload name");
    }
    const auto name = a.workload.cast<std::string>();
    if (name.ends_with(".onnx")) {
      w = measure::make_model_workload(name, "cpu", a.dims);
    } else {
      w = measure::make_workload(name, a.device.value_or(0));
    }
  }

  std::unique_ptr<measure::environment> env;
  const auto stop_requested = [&calls] { return calls.poll_interrupt(); };
  if (w->device()) {
    env = measure::make_gpu_environment(
        *w->device(), std::chrono::milliseconds(a.telemetry_period_ms), stop_requested, release);
  } else {
    env = measure::make_cpu_environment(stop_requested);
  }
  measure::progress_fn progress;
  if (!a.progress.is_none()) {
    progress = [&calls](const std::string& line) {
      py::gil_scoped_acquire gil;
      try {
        calls.progress(line);
      } catch (py::error_already_set& e) {
        if (!calls.raised) calls.raised.emplace(std::move(e));
        calls.interrupted = true;  // stops at the next poll
      }
    };
  }

  measure::run_result r;
  {
    py::gil_scoped_release no_gil;
    r = measure::measure(*w, *env, o, progress);
  }
  if (calls.interrupted && r.stop_reason == measure::stop_reason::error &&
      r.error == "interrupted") {
    // Ctrl-C inside the callable: the run was interrupted, not broken.
    r.stop_reason = measure::stop_reason::interrupted;
    r.error.clear();
  }
  w.reset();
  env.reset();
  result out(std::move(r));
  const auto& raw = out.raw();

  if (calls.raised) {
    // The user's own exception, with its traceback, says best what went wrong.
    py::error_already_set e = std::move(*calls.raised);
    calls.raised.reset();
    py::object value = e.value();
    if (py::hasattr(value, "add_note")) {
      std::string note = "coolbench.measure stopped at this exception, after " +
                         std::to_string(raw.samples.size()) + " completed runs";
      if (!raw.final_release.empty()) note += "; " + raw.final_release;
      value.attr("add_note")(note);
    }
    throw e;
  }
  if (calls.interrupted || raw.stop_reason == measure::stop_reason::interrupted) {
    raise(make_error(exceptions().interrupted,
                     "coolbench.measure: interrupted; the .result "
                     "attribute holds what was measured",
                     &out));
  }
  if (raw.stop_reason == measure::stop_reason::invalid_input && raw.samples.empty()) {
    throw invalid_argument(raw.error);
  }
  if (a.check && !raw.complete) {
    raise(make_error(exceptions().run_incomplete,
                     "coolbench.measure: " + to_string(raw.stop_reason) + ": " + raw.error +
                         " (the .result attribute holds what was measured)",
                     &out));
  }
  return out;
}

void translate_exceptions() {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const device::release_refused& e) {
      PyErr_SetString(exceptions().release_refused.ptr(), e.what());
    } catch (const invalid_argument& e) {
      PyErr_SetString(exceptions().invalid_argument.ptr(), e.what());
    } catch (const not_available& e) {
      PyErr_SetString(exceptions().not_available.ptr(), e.what());
    } catch (const timeout_error& e) {
      PyErr_SetString(exceptions().timeout.ptr(), e.what());
    } catch (const error& e) {
      PyErr_SetString(exceptions().error.ptr(), e.what());
    }
  });
}

// The exception hierarchy (docs/python.md), and the translation of the
// library's errors into it.
void bind_errors(py::module_& m) {
  auto& types = exceptions();
  const auto runtime_error = py::reinterpret_borrow<py::object>(PyExc_RuntimeError);
  types.error =
      new_exception(m, "Error", "Base of coolbench's errors; the message says what to do.",
                    py::make_tuple(runtime_error));
  types.invalid_argument = new_exception(
      m, "InvalidArgument", "A bad option, workload or device ordinal.",
      py::make_tuple(types.error, py::reinterpret_borrow<py::object>(PyExc_ValueError)));
  types.not_available =
      new_exception(m, "NotAvailable", "No NVIDIA driver, NVML, GPU or CUDA in this build.",
                    py::make_tuple(types.error));
  types.release_refused = new_exception(
      m, "ReleaseRefused",
      "A release was refused and nothing was changed: another thread holds a lease, or memory "
      "coolbench did not allocate is live in this process.",
      py::make_tuple(types.error));
  types.timeout = new_exception(
      m, "Timeout", "A wait ran out of time.",
      py::make_tuple(types.error, py::reinterpret_borrow<py::object>(PyExc_TimeoutError)));
  types.run_incomplete = new_exception(
      m, "RunIncomplete",
      "The run stopped short (gate time-out, a GPU error); .result holds what was measured.",
      py::make_tuple(types.error));
  types.interrupted = new_exception(
      m, "Interrupted", "Ctrl-C during a measurement; .result holds what was measured.",
      py::make_tuple(py::reinterpret_borrow<py::object>(PyExc_KeyboardInterrupt)));
  translate_exceptions();
}

void bind_result(py::module_& m) {
  py::class_<result>(m, "Result", "What coolbench.measure() measured, with the evidence.")
      .def_property_readonly("figure_ms", &result::figure_ms,
                             "The figure: mean of the per-context medians when spread over "
                             "contexts, else the median of the kept samples (None if none)")
      .def_property_readonly("ci_ms", &result::ci_ms, "(lower, upper) of the figure, or None")
      .def_property_readonly("rel_ci", &result::rel_ci, "CI half-width / figure, or None")
      .def_property_readonly("median_ms",
                             [](const result& r) -> std::optional<double> {
                               if (r.raw().summary.count == 0) return std::nullopt;
                               return r.raw().summary.median_ms;
                             })
      .def_property_readonly("converged", [](const result& r) { return r.raw().converged; })
      .def_property_readonly("complete", [](const result& r) { return r.raw().complete; })
      .def_property_readonly("stop_reason",
                             [](const result& r) { return to_string(r.raw().stop_reason); })
      .def_property_readonly("error", [](const result& r) { return r.raw().error; })
      .def_property_readonly("warnings", [](const result& r) { return r.raw().warnings; })
      .def_property_readonly("workload", [](const result& r) { return r.raw().workload; })
      .def_property_readonly("final_release", [](const result& r) { return r.raw().final_release; })
      .def_property_readonly(
          "hidden_state",
          [](const result& r) -> py::object {
            if (!r.raw().hidden_state) return py::none();
            return py::str(r.raw().hidden_state->summary());
          },
          "The hidden-state sentinel's line ('hidden state: sentinel +9.3 %, sensors "
          "unchanged (after the run)'), or None without a sentinel; to_json() has every check")
      .def_property_readonly(
          "latencies_ms",
          [](const result& r) {
            std::vector<double> kept;
            for (const auto& s : r.raw().samples) {
              if (s.kept) kept.push_back(s.time.latency_ms);
            }
            return kept;
          },
          "The kept measurement samples, in order")
      .def(
          "to_dict",
          [](const result& r) { return json_to_python(coolbench::report::to_json(r.raw())); },
          "The whole run as the JSON document of docs/run-json.md")
      .def("to_json", [](const result& r) { return coolbench::report::to_json(r.raw()).dump(1); })
      .def(
          "csv", [](const result& r) { return coolbench::report::samples_csv(r.raw()); },
          "Every sample as CSV (the columns of `coolbench run --csv`)")
      .def(
          "summary", [](const result& r) { return coolbench::report::format_run_summary(r.raw()); },
          "The summary `coolbench run` prints")
      .def("profile_markdown",
           [](const result& r) { return coolbench::report::profile_markdown(r.raw()); })
      .def(
          "write_json",
          [](const result& r, const std::string& path) {
            coolbench::report::write_text_atomically(
                path, coolbench::report::to_json(r.raw()).dump(1) + "\n");
          },
          py::arg("path"), "Writes to_json() through a temporary file and a rename")
      .def(
          "write_csv",
          [](const result& r, const std::string& path) {
            coolbench::report::write_text_atomically(path, coolbench::report::samples_csv(r.raw()));
          },
          py::arg("path"))
      .def("__repr__", &result::repr);
}

void bind_measure(py::module_& m) {
  m.def(
      "measure",
      [](py::object workload, py::object feeds, py::object setup, py::object teardown,
         std::optional<int> device, std::uintptr_t stream, std::optional<bool> hold,
         std::optional<std::string> release, std::optional<std::string> name,
         std::optional<double> flops, std::map<std::string, std::int64_t> dims,
         int telemetry_period_ms, py::object progress, bool check, py::object devices,
         const py::kwargs& options) -> py::object {
        measure_arguments a;
        a.workload = std::move(workload);
        a.feeds = std::move(feeds);
        a.setup = std::move(setup);
        a.teardown = std::move(teardown);
        a.device = device;
        a.stream = stream;
        a.hold = hold;
        a.release = std::move(release);
        a.name = std::move(name);
        a.flops = flops;
        a.dims = std::move(dims);
        a.protocol = protocol_keywords(options);
        a.telemetry_period_ms = telemetry_period_ms;
        a.progress = std::move(progress);
        a.check = check;
        a.devices = std::move(devices);
        if (!a.devices.is_none()) return measure_on_devices(a);
        return py::cast(run_measure(a));
      },
      py::arg("workload"), py::arg("feeds") = py::none(), py::kw_only(),
      py::arg("setup") = py::none(), py::arg("teardown") = py::none(),
      py::arg("device") = py::none(), py::arg("stream") = 0, py::arg("hold") = py::none(),
      py::arg("release") = py::none(), py::arg("name") = py::none(), py::arg("flops") = py::none(),
      py::arg("dims") = std::map<std::string, std::int64_t>{}, py::arg("telemetry_period_ms") = 20,
      py::arg("progress") = py::none(), py::arg("check") = true, py::arg("devices") = py::none(),
      measure_doc().c_str());
}

// release(), device_state() and gpu_count().
void bind_release(py::module_& m) {
  m.def(
      "release",
      [](int device, bool force, bool wait) {
        device::release_options o;
        o.force = force;
        if (wait) o.wait_for_leases = std::chrono::seconds(10);
        device::release_report report;
        {
          py::gil_scoped_release no_gil;
          report = device::device::get(device).release(o);
        }
        return json_text_to_python(device::to_json(report));
      },
      py::arg("device") = 0, py::kw_only(), py::arg("force") = false, py::arg("wait") = false,
      R"(Hands GPU `device` back: every resource coolbench owns destroyed, its memory freed, the
primary context reset, so the GPU can idle while the process goes on. Returns the release
report (docs/c_api.md). Raises ReleaseRefused, changing nothing, while another thread
holds a lease or another runtime's device memory is live in the process (NVML's figure less
the bare context and coolbench's own, to NVML's 2 MiB step: another library's tensors or
loaded kernels, docs/device.md), unless force=True, which leaves their owners with
dangling pointers.)");

  m.def(
      "device_state",
      [](int device) {
        return json_text_to_python(device::to_json(device::device::get(device).status()));
      },
      py::arg("device") = 0,
      "What coolbench holds on GPU `device`: context, leases, memory, resources, releases.");

  m.def(
      "gpu_count", [] { return device::device::count(); },
      "GPUs the CUDA runtime sees (0 without a driver).");
}

}  // namespace
}  // namespace coolbench::python

PYBIND11_MODULE(_coolbench, m) {
  using namespace coolbench::python;
  m.doc() =
      "coolbench: latency on NVIDIA GPUs that does not depend on the GPU's temperature, and a safe "
      "in-process release of the GPU. See docs/python.md.";
  m.attr("__version__") = std::string(coolbench::version());
  bind_errors(m);
  bind_result(m);
  bind_devices(m);  // coolbench.MultiResult (devices.cpp): several GPUs at once
  bind_measure(m);
  bind_compare(m);  // coolbench.compare (compare.cpp): matched A/B
  bind_release(m);
#ifdef COOLBENCH_PYTHON_HAVE_ENGINE
  add_session(m);  // coolbench.Session (session.cpp), where the engine is built
#endif
}
