// coolbench who: the processes that hold a context on each GPU, which is what
// keeps a GPU from dropping to its idle state.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help.hpp"
#include "coolbench/report.hpp"
#include "coolbench/telemetry.hpp"

namespace coolbench::cli {
using namespace coolbench::report;  // the renderings the commands print and write
namespace {

struct who_options {
  bool json = false;
};

int run_who(const who_options& options) {
  const int count = telemetry::gpu_telemetry::device_count();
  nlohmann::json report = nlohmann::json::array();
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    const telemetry::gpu_telemetry gpu(ordinal);
    const auto processes = gpu.processes();
    if (options.json) {
      report.push_back({{"cuda_ordinal", ordinal},
                        {"name", gpu.identity().name},
                        {"pci_bus_id", gpu.identity().pci_bus_id},
                        {"processes", to_json(processes)}});
    } else {
      fmt::print("{}", format_gpu_processes(gpu.identity(), processes));
    }
  }
  if (options.json) {
    fmt::print("{}\n", report.dump(2));
  } else if (count == 0) {
    fmt::print("No GPU is visible to CUDA (CUDA_VISIBLE_DEVICES?).\n");
  }
  return exit_ok;
}

}  // namespace

command add_who_command(CLI::App& parent) {
  auto options = std::make_shared<who_options>();
  auto* app = parent.add_subcommand("who", "List the processes that hold a context on each GPU");
  app->add_flag("--json", options->json, "Print JSON instead of text");
  return {app, [options] { return run_who(*options); }, help::who()};
}

}  // namespace coolbench::cli
