// coolbench.Session: an engine session from Python, the way onnxruntime's
// InferenceSession is used (docs/python.md, "Running a model").
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "coolbench/measure/workload.hpp"

namespace coolbench::python {

/// Adds Session and ValueInfo to the module.
void add_session(pybind11::module_& m);

/// Whether `object` is a coolbench.Session.
[[nodiscard]] bool is_session(const pybind11::handle& object);

/// The workload coolbench.measure(session, feeds) measures: the session's
/// run() with `feeds` (a dict name -> numpy array, checked as run() checks it).
[[nodiscard]] std::unique_ptr<measure::workload> make_session_workload(
    const pybind11::handle& session, const pybind11::handle& feeds);

}  // namespace coolbench::python
