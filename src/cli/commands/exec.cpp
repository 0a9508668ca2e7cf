// coolbench exec -- CMD ...: a command that times itself, run under the protocol in fresh
// processes, reported as `coolbench run` reports (docs/cli/exec.md).
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help.hpp"
#include "cli/interrupt.hpp"
#include "cli/protocol_flags.hpp"
#include "coolbench/measure/protocol.hpp"
#include "coolbench/measure/workload.hpp"
#include "coolbench/report.hpp"

namespace coolbench::cli {
using namespace coolbench::report;
namespace {

struct exec_options {
  int device = 0;
  std::shared_ptr<protocol_flags> protocol = std::make_shared<protocol_flags>();
  int telemetry_ms = 20;
  int line_timeout_s = 60;
  std::string json_path;
  std::string csv_path;
  bool quiet = false;
  std::vector<std::string> command;
};

int run_exec(const exec_options& o) {
  measure::protocol_options protocol;
  std::unique_ptr<measure::workload> w;
  try {
    protocol = protocol_from(*o.protocol);
    w = measure::make_command_workload(o.command, o.device, std::chrono::seconds(o.line_timeout_s));
  } catch (const invalid_argument& e) {
    std::fflush(stdout);
    fmt::print(stderr, "coolbench exec: {}. Run 'coolbench exec --help'.\n", e.what());
    return exit_usage;
  }
  catch_interrupts();
  const auto stop_requested = [] { return interrupted(); };
  // The command's process holds its context; ending it is the release.
  const auto env =
      measure::make_gpu_environment(o.device, std::chrono::milliseconds(o.telemetry_ms),
                                    stop_requested, measure::context_release::process);
  if (!o.quiet) fmt::print("measuring {}\n", w->describe());
  const measure::progress_fn progress = [&](const std::string& line) {
    if (!o.quiet) {
      fmt::print("  {}\n", line);
      std::fflush(stdout);
    }
  };
  const measure::run_result result = measure::measure(*w, *env, protocol, progress);
  if (!o.json_path.empty()) write_text_atomically(o.json_path, to_json(result).dump(1) + "\n");
  if (!o.csv_path.empty()) write_text_atomically(o.csv_path, samples_csv(result));
  return finish_run("exec", result);
}

}  // namespace

command add_exec_command(CLI::App& parent) {
  auto o = std::make_shared<exec_options>();
  auto* app = parent.add_subcommand(
      "exec", "Measure a command that prints its own latencies, in fresh processes");
  add_device_option(*app, o->device);
  add_protocol_flags(*app, o->protocol);
  app->add_option("--telemetry-period", o->telemetry_ms, "ms")->check(CLI::Range(1, 1000));
  app->add_option("--line-timeout", o->line_timeout_s,
                  "Give up when the command prints no line for this long (s)")
      ->check(CLI::Range(1, 86400));
  app->add_option("--json", o->json_path, "Write the whole run as JSON (docs/run-json.md)");
  app->add_option("--csv", o->csv_path, "Write every sample as CSV");
  app->add_flag("--quiet", o->quiet, "Print only the summary");
  app->add_option("command", o->command, "The command and its arguments, after --")->required();
  return {app, [o] { return run_exec(*o); }, help::exec()};
}

}  // namespace coolbench::cli
