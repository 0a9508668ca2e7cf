// coolbench.compare(): A and B, each a callable (one inference) or a workload name, measured
// in matched pairs (measure_ab, docs/measure.md "Matched A/B"); returns the coolbench.ab/1
// document as a dict. The protocol runs with the GIL released; every call into Python takes it.
#include "python/compare.hpp"

#include <pybind11/stl.h>

#include <Python.h>

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "coolbench/core/error.hpp"
#include "coolbench/device.hpp"
#include "coolbench/measure/ab.hpp"
#include "coolbench/measure/workload.hpp"
#include "coolbench/report/ab_report.hpp"
#include "python/keywords.hpp"

namespace py = pybind11;

namespace coolbench::python {
namespace {

/// The Python calls of one compare(): the callables, progress, and the first exception raised.
struct compare_calls {
  std::optional<py::error_already_set> raised;
  bool interrupted = false;

  void call(const py::object& f, const std::string& role) {
    py::gil_scoped_acquire gil;
    try {
      f();
    } catch (py::error_already_set& e) {
      if (e.matches(PyExc_KeyboardInterrupt)) {
        interrupted = true;
        throw error("interrupted");
      }
      const std::string message = role + " raised " + e.what();
      if (!raised) raised.emplace(std::move(e));
      throw error(message);
    }
  }

  bool poll_interrupt() {
    if (interrupted) return true;
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
      py::error_already_set e;
      interrupted = true;
      if (!e.matches(PyExc_KeyboardInterrupt) && !raised) raised.emplace(std::move(e));
    }
    return interrupted;
  }
};

/// A callable or a workload name, as a workload on `device`.
std::unique_ptr<measure::workload> workload_of(const py::object& f, const char* which, int device,
                                               compare_calls& calls) {
  if (py::isinstance<py::str>(f)) return measure::make_workload(f.cast<std::string>(), device);
  if (PyCallable_Check(f.ptr()) == 0) {
    throw invalid_argument(std::string("compare(): ") + which +
                           " is a callable (one inference) or a workload name such as "
                           "'gemm:fp16:gpt2-small'");
  }
  measure::callable_spec spec;
  const py::object label =
      py::hasattr(f, "__qualname__") ? f.attr("__qualname__") : py::type::of(f).attr("__name__");
  spec.name = std::string(which) + ": callable " + py::str(label).cast<std::string>();
  spec.device = device;
  spec.run = [&calls, f, role = std::string(which)] { calls.call(f, role); };
  return measure::make_callable_workload(std::move(spec));
}

py::object run_compare(const py::object& fa, const py::object& fb, int device,
                       const std::optional<std::string>& release, double same_within,
                       int telemetry_period_ms, const py::object& progress,
                       const py::kwargs& options) {
  if (telemetry_period_ms < 1 || telemetry_period_ms > 1000) {
    throw invalid_argument("telemetry_period_ms must be in 1..1000");
  }
  const bool callables = !py::isinstance<py::str>(fa) || !py::isinstance<py::str>(fb);
  // A callable's framework (PyTorch, CuPy) holds the context: the pairs then share it.
  const measure::context_release how =
      measure::parse_context_release(release.value_or(callables ? "keep" : "reset"));
  const measure::protocol_options o =
      measure::options_from(protocol_keywords(options), how == measure::context_release::reset);
  (void)device::device::get(device);  // a GPU that is not there is said before anything runs
  compare_calls calls;
  auto a = workload_of(fa, "A", device, calls);
  auto b = workload_of(fb, "B", device, calls);
  auto env = measure::make_gpu_environment(
      device, std::chrono::milliseconds(telemetry_period_ms),
      [&calls] { return calls.poll_interrupt(); }, how);
  measure::progress_fn say;
  if (!progress.is_none()) {
    say = [&calls, &progress](const std::string& line) {
      py::gil_scoped_acquire gil;
      try {
        progress(line);
      } catch (py::error_already_set& e) {
        if (!calls.raised) calls.raised.emplace(std::move(e));
        calls.interrupted = true;  // stops at the next poll
      }
    };
  }
  measure::ab_result r;
  {
    py::gil_scoped_release no_gil;
    r = measure::measure_ab(*a, *b, *env, o, say);
  }
  a.reset();
  b.reset();
  env.reset();
  if (calls.raised) {
    py::error_already_set e = std::move(*calls.raised);
    calls.raised.reset();
    throw e;
  }
  if (calls.interrupted) {
    PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw py::error_already_set();
  }
  if (r.stop_reason == measure::stop_reason::invalid_input && r.a.samples.empty()) {
    throw invalid_argument(r.error);
  }
  return py::module_::import("json").attr("loads")(report::ab_to_json(r, same_within).dump());
}

}  // namespace

void bind_compare(py::module_& m) {
  m.def("compare", &run_compare, py::arg("fa"), py::arg("fb"), py::arg("device") = 0, py::kw_only(),
        py::arg("release") = py::none(), py::arg("same_within") = 0.01,
        py::arg("telemetry_period_ms") = 20, py::arg("progress") = py::none(),
        R"(Matched A/B: measures B against A on GPU `device` in pairs of bursts, ABBA order,
each burst gated to the same temperature, both bursts of a pair in one CUDA context and a
context release between pairs (release='reset', the default for workload names; with
callables the framework holds the context, release='keep', and the pairs share it). fa and fb
are callables (one inference each, on the GPU) or workload names ('gemm:fp16:gpt2-small').
Returns the coolbench.ab/1 document as a dict (docs/run-json.md, "Matched A/B"): 'verdict'
(FASTER, SLOWER, SAME or UNSURE, B against A), 'time' ({'ratio', 'ci'}: B/A over the pairs),
'cycles', 'energy', 'pairs', and each workload's run under 'a' and 'b'. same_within: SAME when
the ratio's CI lies within 1 ± it. The protocol's keywords of measure() apply (rel_ci: the
ratio's CI; contexts: the pairs at least; context_min_samples: kept samples per burst).)");
}

}  // namespace coolbench::python
