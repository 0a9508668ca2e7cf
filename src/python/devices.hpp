// coolbench.measure(..., devices=[0, 1] or "all"): the protocol on several GPUs at once, a
// worker thread each, and the MultiResult it returns (docs/python.md, "Several GPUs").
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "coolbench/measure/options.hpp"

namespace coolbench::python {

struct devices_arguments {
  pybind11::object workload;  ///< a name, or a callable make(device) -> the callable to time
  pybind11::object devices;   ///< "all" or a sequence of CUDA ordinals
  std::optional<bool> hold;
  std::optional<std::string> release;
  std::optional<std::string> name;
  std::optional<double> flops;
  std::map<std::string, std::int64_t> dims;
  std::vector<std::pair<std::string, measure::option_value>> protocol;
  int telemetry_period_ms = 20;
  pybind11::object progress;
  bool check = true;
};

/// Measures every GPU at once and returns a MultiResult; raises as docs/python.md says.
pybind11::object measure_on_devices(const devices_arguments& a);

/// The MultiResult type.
void bind_devices(pybind11::module_& m);

}  // namespace coolbench::python
