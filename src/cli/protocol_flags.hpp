// The protocol's options as flags (measure/options.hpp's table), for the commands that run the
// protocol: `coolbench run` and `coolbench exec`.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "coolbench/measure/options.hpp"
#include "coolbench/measure/result.hpp"

namespace coolbench::cli {

/// The flags given, as written: table name → text.
using protocol_flags = std::vector<std::pair<std::string, std::string>>;

/// Adds one flag per option of the table to `app`; what is given lands in `given`.
void add_protocol_flags(CLI::App& app, std::shared_ptr<protocol_flags> given);

/// The protocol's options: what the command line gave, the rest the table's defaults (and the
/// default contexts rule), checked; throws invalid_argument naming the flag.
[[nodiscard]] measure::protocol_options protocol_from(const protocol_flags& given);

/// Prints how a run of `command` ended (its summary, or one usage line when nothing could be
/// measured) and returns the command's exit code.
[[nodiscard]] int finish_run(const std::string& command, const measure::run_result& result);

}  // namespace coolbench::cli
