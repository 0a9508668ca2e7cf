// What the module's measuring functions share (module.cpp, devices.cpp): its exception types,
// the Result type, the calls into Python a callable workload makes.
#pragma once

#include <pybind11/pybind11.h>

#include <Python.h>

#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "coolbench/core/error.hpp"
#include "coolbench/measure/result.hpp"

namespace coolbench::python {

namespace py = pybind11;

// The module's exception types, made once at import.
struct exception_types {
  py::object error;
  py::object invalid_argument;
  py::object not_available;
  py::object release_refused;
  py::object timeout;
  py::object run_incomplete;
  py::object interrupted;
};

inline exception_types& exceptions() {
  static auto* types = new exception_types();  // lives as long as the interpreter
  return *types;
}

inline py::object json_text_to_python(const std::string& text) {
  return py::module_::import("json").attr("loads")(text);
}

inline py::object json_to_python(const nlohmann::json& value) {
  return json_text_to_python(value.dump());
}

/// A finished run, as Python sees it.
class result {
 public:
  explicit result(measure::run_result r) : m_r(std::move(r)) {}

  [[nodiscard]] const measure::run_result& raw() const { return m_r; }

  /// The figure: the mean of the per-context medians when spread over
  /// contexts, else the median of the kept samples; None without any.
  [[nodiscard]] std::optional<double> figure_ms() const {
    if (m_r.contexts) return m_r.contexts->mean_ms;
    if (m_r.summary.count == 0) return std::nullopt;
    return m_r.summary.median_ms;
  }
  [[nodiscard]] std::optional<std::pair<double, double>> ci_ms() const {
    return m_r.contexts ? m_r.contexts->ci : m_r.median_ci;
  }
  [[nodiscard]] std::optional<double> rel_ci() const {
    const auto f = figure_ms();
    const auto ci = ci_ms();
    if (!f || !ci || *f <= 0) return std::nullopt;
    return (ci->second - ci->first) / 2 / *f;
  }

  [[nodiscard]] std::string repr() const {
    std::string text = "<coolbench.Result " + m_r.workload + ": ";
    const auto f = figure_ms();
    if (!f) return text + "no samples kept, " + to_string(m_r.stop_reason) + ">";
    text += fmt::format("{:.4f} ms", *f);
    if (const auto r = rel_ci()) text += fmt::format(" ±{:.2f}%", 100 * *r);
    if (m_r.contexts)
      text += " over " + std::to_string(m_r.contexts->per_context.size()) + " contexts";
    return text + ", " + to_string(m_r.stop_reason) + (m_r.complete ? "" : ", incomplete") + ">";
  }

 private:
  measure::run_result m_r;
};

/// The Python objects a callable workload calls, and what they raised. Made
/// and dropped with the GIL held; the workload's functions hold a pointer.
struct python_calls {
  py::object run;
  py::object setup;
  py::object teardown;
  py::object progress;
  std::optional<py::error_already_set> raised;  ///< the first exception a callable raised
  bool interrupted = false;                     ///< Ctrl-C, in a callable or between samples

  /// Calls `f` with the GIL; a Python exception becomes a C++ error for the
  /// protocol (which ends the run), and is kept to be raised again.
  void call(const py::object& f, const char* role) {
    py::gil_scoped_acquire gil;
    try {
      f();
    } catch (py::error_already_set& e) {
      if (e.matches(PyExc_KeyboardInterrupt)) {
        interrupted = true;
        throw error("interrupted");
      }
      const std::string message = std::string("the ") + role + " raised " + e.what();
      if (!raised) raised.emplace(std::move(e));
      throw error(message);
    }
  }

  /// Between samples: Python's signal handlers run here (the protocol
  /// polls it), so Ctrl-C stops the run like the command's.
  bool poll_interrupt() {
    if (interrupted) return true;
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
      py::error_already_set e;
      if (e.matches(PyExc_KeyboardInterrupt)) {
        interrupted = true;
      } else if (!raised) {
        raised.emplace(std::move(e));
        interrupted = true;
      }
    }
    return interrupted;
  }
};

inline py::object make_error(const py::object& type, const std::string& message, const result* r) {
  py::object e = type(message);
  if (r != nullptr) e.attr("result") = py::cast(*r);
  return e;
}

[[noreturn]] inline void raise(const py::object& exception) {
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exception.ptr())), exception.ptr());
  throw py::error_already_set();
}

}  // namespace coolbench::python
