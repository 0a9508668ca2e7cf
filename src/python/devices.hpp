// coolbench.measure(..., devices=[0, 1] or "all"): the protocol on several GPUs at once, a
// worker thread each, and the MultiResult it returns (docs/python.md, "Several GPUs").
#pragma once

#include <pybind11/pybind11.h>

#include "python/measure_arguments.hpp"

namespace coolbench::python {

/// Measures every GPU at once and returns a MultiResult; raises as docs/python.md says.
/// Refuses the keywords that go with one GPU only (device=, stream=, setup=, teardown=,
/// feeds).
pybind11::object measure_on_devices(const measure_arguments& a);

/// The MultiResult type.
void bind_devices(pybind11::module_& m);

}  // namespace coolbench::python
