// coolbench info: identity, clocks, thresholds, power, state and processes of
// each GPU, and the host's CPU sensors.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "cli/command.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help.hpp"
#include "coolbench/core/error.hpp"
#include "coolbench/report.hpp"
#include "coolbench/telemetry.hpp"

namespace coolbench::cli {
using namespace coolbench::report;  // the renderings the commands print and write
namespace {

struct info_options {
  std::string device = "all";
  bool json = false;
};

std::vector<int> devices_named(const std::string& device) {
  const int count = telemetry::gpu_telemetry::device_count();
  if (device == "all") {
    std::vector<int> all(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) all[static_cast<std::size_t>(i)] = i;
    return all;
  }
  return {std::stoi(device)};
}

// How each GPU reaches each other one (NVLink, the PCIe path): what decides
// whether a neighbour's heat or traffic can reach a measured GPU.
void print_topology(const std::vector<telemetry::gpu_telemetry>& gpus,
                    const std::vector<int>& ordinals, bool json, nlohmann::json& report) {
  std::vector<std::vector<telemetry::gpu_link>> links(gpus.size());
  report["topology"] = nlohmann::json::array();
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    links[i].resize(gpus.size());
    for (std::size_t j = 0; j < gpus.size(); ++j) {
      if (i == j) continue;
      links[i][j] = gpus[i].link_to(gpus[j]);
      auto cell = to_json(links[i][j]);
      cell["from"] = ordinals[i];
      cell["to"] = ordinals[j];
      report["topology"].push_back(std::move(cell));
    }
  }
  if (!json) fmt::print("{}", format_topology(ordinals, links));
}

int run_info(const info_options& options) {
  const auto host = telemetry::read_cpu_sensors();
  nlohmann::json report = {{"host", to_json(host)}, {"gpus", nlohmann::json::array()}};
  if (!options.json) fmt::print("{}", format_cpu_sensors(host));
  std::vector<int> devices;
  try {
    devices = devices_named(options.device);
  } catch (const not_available&) {
    if (options.json) fmt::print("{}\n", report.dump(2));
    throw;
  }
  if (devices.empty() && !options.json)
    fmt::print("\nNo GPU is visible to CUDA (CUDA_VISIBLE_DEVICES?).\n");
  std::vector<telemetry::gpu_telemetry> gpus;
  for (const int ordinal : devices) {
    const auto& gpu = gpus.emplace_back(ordinal);
    const auto sample = gpu.read();
    const auto processes = gpu.processes();
    if (options.json) {
      report["gpus"].push_back({{"identity", to_json(gpu.identity())},
                                {"sample", to_json(sample)},
                                {"processes", to_json(processes)}});
    } else {
      fmt::print("\n{}", format_gpu_info(gpu.identity(), sample, processes));
    }
  }
  if (gpus.size() >= 2) print_topology(gpus, devices, options.json, report);
  if (options.json) fmt::print("{}\n", report.dump(2));
  return exit_ok;
}

}  // namespace

command add_info_command(CLI::App& parent) {
  auto options = std::make_shared<info_options>();
  auto* app = parent.add_subcommand(
      "info", "Identity, clocks, thresholds, power and processes of each GPU");
  app->add_option("--device", options->device, "CUDA ordinal, or all")
      ->check([](const std::string& value) -> std::string {
        if (value == "all") return {};
        if (!value.empty() && value.find_first_not_of("0123456789") == std::string::npos) return {};
        return "must be a CUDA ordinal (0, 1, ...) or all, got '" + value + "'";
      });
  app->add_flag("--json", options->json, "Print JSON instead of text");
  return {app, [options] { return run_info(*options); }, help::info()};
}

void add_device_option(CLI::App& app, int& device) {
  app.add_option("--device", device, "CUDA ordinal of the GPU")->check(CLI::NonNegativeNumber);
}

}  // namespace coolbench::cli
