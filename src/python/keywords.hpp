// The protocol's keywords of coolbench.measure(), made from the option table
// (coolbench/measure/options.hpp) as `coolbench run`'s flags are.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <utility>
#include <vector>

#include "coolbench/measure/options.hpp"

namespace coolbench::python {

/// The protocol's keywords among `kwargs` (None: the default), as the table's values; an
/// unknown keyword or a value of the wrong type is a TypeError.
[[nodiscard]] std::vector<std::pair<std::string, measure::option_value>> protocol_keywords(
    const pybind11::kwargs& kwargs);

/// measure()'s docstring: the fixed part, then each protocol keyword from the option table.
[[nodiscard]] const std::string& measure_doc();

}  // namespace coolbench::python
