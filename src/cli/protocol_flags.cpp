#include "cli/protocol_flags.hpp"

#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

#include <cstdio>

#include "cli/exit_codes.hpp"
#include "coolbench/core/error.hpp"
#include "coolbench/report.hpp"

namespace coolbench::cli {
namespace {

/// `text` as the kind of value `spec` takes; throws invalid_argument naming the flag.
measure::option_value parse_value(const measure::option_spec& spec, const std::string& text) {
  const std::string flag = measure::option_flag(spec.name);
  if (spec.kind == measure::option_kind::name) return text;
  char* end = nullptr;
  errno = 0;
  if (spec.kind == measure::option_kind::integer) {
    const long long value = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0) {
      throw invalid_argument(flag + " takes a whole number; got '" + text + "'");
    }
    return static_cast<std::int64_t>(value);
  }
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0) {
    throw invalid_argument(flag + " takes a number; got '" + text + "'");
  }
  return value;
}

}  // namespace

void add_protocol_flags(CLI::App& app, std::shared_ptr<protocol_flags> given) {
  for (const auto& spec : measure::option_table()) {
    std::string help(spec.help);
    if (!spec.unit.empty()) help += " (" + std::string(spec.unit) + ")";
    app.add_option_function<std::string>(
        measure::option_flag(spec.name),
        [given, name = std::string(spec.name)](const std::string& text) {
          given->emplace_back(name, text);
        },
        help);
  }
}

measure::protocol_options protocol_from(const protocol_flags& given) {
  std::vector<std::pair<std::string, measure::option_value>> values;
  for (const auto& [name, text] : given) {
    values.emplace_back(name, parse_value(measure::find_option(name), text));
  }
  return measure::options_from(values, true, measure::option_flag);
}

int finish_run(const std::string& command, const measure::run_result& result) {
  if (result.stop_reason == measure::stop_reason::invalid_input && result.samples.empty()) {
    // Nothing was measured: a usage error, said in one line, after what stdout already holds.
    std::fflush(stdout);
    fmt::print(stderr, "coolbench {}: {}. Run 'coolbench {} --help'.\n", command, result.error,
               command);
    return exit_usage;
  }
  fmt::print("{}", report::format_run_summary(result));
  if (result.complete) return exit_ok;
  if (result.stop_reason == measure::stop_reason::interrupted) return exit_interrupted;
  if (result.stop_reason == measure::stop_reason::gate_timeout) return exit_timeout;
  return exit_error;
}

}  // namespace coolbench::cli
