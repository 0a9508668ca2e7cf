// The coolbench command. Parses the command line into one subcommand's
// options, runs it, and maps every error type to its documented exit code
// (docs/cli/coolbench.md) in this one place.
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help.hpp"
#include "coolbench/core/error.hpp"
#include "coolbench/core/version.hpp"

namespace coolbench::cli {
namespace {

int fail(std::string_view where, std::string_view what, int code) {
  std::fflush(stdout);
  fmt::print(stderr, "{}: {}\n", where, what);
  return code;
}

int run_guarded(const command& cmd) {
  const std::string where = "coolbench " + cmd.app->get_name();
  try {
    return cmd.run();
  } catch (const not_available& e) {
    return fail(where, e.what(), exit_no_gpu);
  } catch (const invalid_argument& e) {
    return fail(where, e.what(), exit_bad_device);
  } catch (const timeout_error& e) {
    return fail(where, e.what(), exit_timeout);
  } catch (const std::exception& e) {
    return fail(where, e.what(), exit_error);
  }
}

int run(int argc, char** argv) {
  CLI::App app{"coolbench: GPU inference latency that does not depend on temperature"};
  app.name("coolbench");
  app.set_version_flag("--version", std::string(version()));
  app.require_subcommand(0, 1);
  std::vector<command> commands = {
      add_info_command(app),      add_monitor_command(app),       add_who_command(app),
      add_wait_cool_command(app), add_release_check_command(app), add_heat_command(app),
      add_run_command(app)};
  commands.push_back(add_hidden_state_command(app));
  commands.push_back(add_report_command(app));
  commands.push_back(add_compare_command(app));
  commands.push_back(add_exec_command(app));
#ifdef COOLBENCH_HAVE_ENGINE
  commands.push_back(add_model_command(app));
  commands.push_back(add_nodes_command(app));
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    for (const auto& cmd : commands) {
      if (cmd.app->parsed()) {
        fmt::print("{}", cmd.help);
        return exit_ok;
      }
    }
    fmt::print("{}", help::coolbench());
    return exit_ok;
  } catch (const CLI::CallForVersion&) {
    fmt::print("coolbench {}\n", version());
    return exit_ok;
  } catch (const CLI::ParseError& e) {
    std::string where = "coolbench";
    for (const auto& cmd : commands) {
      if (cmd.app->parsed()) where += " " + cmd.app->get_name();
    }
    return fail(where, fmt::format("{}. Run '{} --help'.", e.what(), where), exit_usage);
  }
  for (const auto& cmd : commands) {
    if (cmd.app->parsed()) return run_guarded(cmd);
  }
  std::fflush(stdout);
  fmt::print(stderr, "{}", help::coolbench());
  return exit_usage;
}

}  // namespace
}  // namespace coolbench::cli

int main(int argc, char** argv) { return coolbench::cli::run(argc, argv); }
