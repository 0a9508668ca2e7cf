// The protocol's keywords of coolbench.measure(), made from the option table.
#include "python/keywords.hpp"

#include <variant>

#include <fmt/format.h>

namespace py = pybind11;

namespace coolbench::python {
namespace {

/// A keyword's Python value as the kind of value its option takes (TypeError otherwise).
measure::option_value option_value_of(const measure::option_spec& spec, const py::handle& value) {
  const bool is_bool = py::isinstance<py::bool_>(value);
  switch (spec.kind) {
    case measure::option_kind::name:
      if (py::isinstance<py::str>(value)) return value.cast<std::string>();
      break;
    case measure::option_kind::integer:
      if (py::isinstance<py::int_>(value) && !is_bool) return value.cast<std::int64_t>();
      break;
    case measure::option_kind::number:
    case measure::option_kind::seconds:
      if ((py::isinstance<py::int_>(value) || py::isinstance<py::float_>(value)) && !is_bool) {
        return value.cast<double>();
      }
      break;
  }
  const char* wanted = spec.kind == measure::option_kind::name      ? "a str"
                       : spec.kind == measure::option_kind::integer ? "an int"
                                                                    : "a number";
  throw py::type_error("measure(): " + std::string(spec.name) + " takes " + wanted + ", not " +
                       py::str(py::type::of(value).attr("__name__")).cast<std::string>());
}

}  // namespace

std::vector<std::pair<std::string, measure::option_value>> protocol_keywords(
    const py::kwargs& kwargs) {
  std::vector<std::pair<std::string, measure::option_value>> given;
  for (const auto& [key, value] : kwargs) {
    const auto name = py::str(key).cast<std::string>();
    const measure::option_spec* spec = nullptr;
    for (const auto& s : measure::option_table()) {
      if (s.name == name) spec = &s;
    }
    if (spec == nullptr) {
      throw py::type_error("measure() got an unexpected keyword argument '" + name + "'");
    }
    if (!value.is_none()) given.emplace_back(name, option_value_of(*spec, value));
  }
  return given;
}

/// measure()'s docstring: the fixed part, then each protocol keyword from the option table.
const std::string& measure_doc() {
  static const std::string doc = [] {
    std::string text =
        R"(Measures one workload under the protocol (docs/measure.md) and returns a Result.

workload: a callable (one inference; on a GPU give device=, and stream= when its work
  does not go to the legacy default stream; hold=False for one that synchronizes
  itself), or a name: 'gemm:DTYPE:M:N:K[:COUNT]',
  'gemm:fp16:gpt2-small', or the path of an .onnx model (CPU backend; dims= binds
  symbolic input dimensions).
setup / teardown: callables run before the first run and after each release, and at
  release (a callable only).
release: 'keep' (default for a callable: its framework holds the CUDA context, which
  cannot survive a reset) or 'reset' (the default for a name: the context is reset
  between bursts and contexts; refused while memory coolbench did not allocate is live).
With check=True a run cut short raises RunIncomplete carrying .result; Ctrl-C raises
Interrupted carrying .result; an exception raised by the callable is raised again as it was.
devices=[0, 1] or "all": every GPU at once, a worker thread each; returns a MultiResult (a
  Result per GPU and the spread across GPUs of one model). A name is measured on each GPU; a
  callable is called as workload(device) once per GPU and returns the callable that runs one
  inference there. One GPU failing leaves the others' results; with check=True it raises
  RunIncomplete carrying the MultiResult.

The protocol's keywords, `coolbench run`'s options (times in seconds; None: the default):
)";
    const measure::protocol_options defaults;
    for (const auto& spec : measure::option_table()) {
      text += fmt::format("{}: {}", spec.name, spec.help);
      if (!spec.unit.empty()) text += fmt::format(" ({})", spec.unit);
      if (const auto v = spec.get(defaults); v && !spec.derived_default) {
        text += std::visit([](const auto& x) { return fmt::format("; default {}", x); }, *v);
      }
      text += "\n";
    }
    return text;
  }();
  return doc;
}

}  // namespace coolbench::python
