// The keywords of coolbench.measure(), one struct for the run on one GPU or the host
// (module.cpp) and the run on several GPUs at once (devices.cpp, devices=).
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "coolbench/core/error.hpp"
#include "coolbench/measure/options.hpp"

namespace coolbench::python {

struct measure_arguments {
  /// A callable (one inference), a workload name or a Session; with devices=, a name or a
  /// callable make(device) that returns the callable for that GPU.
  pybind11::object workload;
  pybind11::object feeds;  ///< with a Session
  pybind11::object setup;
  pybind11::object teardown;
  std::optional<int> device;
  std::uintptr_t stream = 0;
  std::optional<bool> hold;
  std::optional<std::string> release;
  std::optional<std::string> name;
  std::optional<double> flops;
  std::map<std::string, std::int64_t> dims;
  /// The protocol's options given (table names, measure/options.hpp), None ones left out.
  std::vector<std::pair<std::string, measure::option_value>> protocol;
  int telemetry_period_ms = 20;
  pybind11::object progress;
  bool check = true;
  /// None: one GPU (device=) or the host; else "all" or a sequence of CUDA ordinals.
  pybind11::object devices;
};

/// What both runs refuse before anything starts: `resets` says whether the release is "reset".
inline void check_common(const measure_arguments& a, bool resets) {
  if (a.telemetry_period_ms < 1 || a.telemetry_period_ms > 1000) {
    throw invalid_argument("telemetry_period_ms must be in 1..1000");
  }
  for (const auto& [name, value] : a.protocol) {
    if (name == "isolation" && std::get<std::string>(value) == "process") {
      throw invalid_argument(
          "isolation='process' needs each workload in a process of its own, which a call in "
          "this interpreter cannot give; use isolation='touch' (the default) or 'release'");
    }
    if (name == "contexts" && std::get<std::int64_t>(value) > 1 && !resets) {
      throw invalid_argument(
          "contexts above 1 needs release='reset' (a new CUDA context for each): with "
          "release='keep' the run stays in one context");
    }
  }
}

}  // namespace coolbench::python
