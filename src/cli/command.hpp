// What each subcommand file gives main: its CLI11 subcommand, the function
// that runs it once parsed, and its help text (docs/cli/<name>.md).
#pragma once

#include <functional>
#include <string_view>

#include <CLI/CLI.hpp>

namespace coolbench::cli {

struct command {
  CLI::App* app = nullptr;
  std::function<int()> run;  ///< returns an exit_code
  std::string_view help;
};

command add_info_command(CLI::App& parent);
command add_monitor_command(CLI::App& parent);
command add_who_command(CLI::App& parent);
command add_wait_cool_command(CLI::App& parent);
command add_model_command(CLI::App& parent);
command add_nodes_command(CLI::App& parent);
command add_release_check_command(CLI::App& parent);
command add_heat_command(CLI::App& parent);
command add_hidden_state_command(CLI::App& parent);
command add_run_command(CLI::App& parent);
command add_report_command(CLI::App& parent);
command add_compare_command(CLI::App& parent);
command add_exec_command(CLI::App& parent);

/// Adds `--device N` (a CUDA ordinal, default 0) to a subcommand.
void add_device_option(CLI::App& app, int& device);

}  // namespace coolbench::cli
