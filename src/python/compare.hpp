// coolbench.compare(fa, fb, device=0): a matched A/B run from Python (docs/python.md).
#pragma once

#include <pybind11/pybind11.h>

namespace coolbench::python {

void bind_compare(pybind11::module_& m);

}  // namespace coolbench::python
