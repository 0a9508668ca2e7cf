// coolbench wait-cool: block until a GPU is at or below a temperature. This
// process creates no CUDA context, so it does not keep the GPU warm itself.
#include <fmt/format.h>

#include <memory>

#include "cli/command.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help.hpp"
#include "cli/interrupt.hpp"
#include "coolbench/core/clock.hpp"
#include "coolbench/core/error.hpp"
#include "coolbench/telemetry.hpp"

namespace coolbench::cli {
namespace {

struct wait_cool_options {
  int below_c = 0;
  int device = 0;
  double timeout_s = 600;
  int period_ms = 250;
  bool quiet = false;
};

int run_wait_cool(const wait_cool_options& options) {
  catch_interrupts();
  const telemetry::gpu_telemetry gpu(options.device);
  const std::int64_t start_ns = steady_now_ns();
  std::int64_t last_report_ns = start_ns - 1'000'000'000'000;
  constexpr std::int64_t report_every_ns = 5'000'000'000;
  while (true) {
    const auto sample = gpu.read();
    const double waited_s = static_cast<double>(sample.time_ns - start_ns) / 1e9;
    if (sample.temp_gpu_c.status == telemetry::reading_status::unsupported) {
      throw not_available(
          "GPU " + std::to_string(options.device) +
          " does not report its temperature through NVML; wait-cool cannot work on it.");
    }
    if (sample.temp_gpu_c.ok() && sample.temp_gpu_c.value <= options.below_c) {
      if (!options.quiet) {
        fmt::print("GPU {}: {} C <= {} C after {:.1f} s\n", options.device, sample.temp_gpu_c.value,
                   options.below_c, waited_s);
      }
      return exit_ok;
    }
    if (!options.quiet && sample.time_ns - last_report_ns >= report_every_ns) {
      fmt::print("GPU {}: {} C, waiting for <= {} C ({:.0f} s of {:.0f} s)\n", options.device,
                 sample.temp_gpu_c.ok() ? std::to_string(sample.temp_gpu_c.value) : "n/a",
                 options.below_c, waited_s, options.timeout_s);
      std::fflush(stdout);
      last_report_ns = sample.time_ns;
    }
    if (waited_s >= options.timeout_s) {
      throw timeout_error(fmt::format(
          "GPU {} is still at {} C after {:.0f} s, above {} C. Something may "
          "keep it busy (coolbench who), or raise --timeout.",
          options.device, sample.temp_gpu_c.ok() ? std::to_string(sample.temp_gpu_c.value) : "n/a",
          waited_s, options.below_c));
    }
    if (!sleep_unless_interrupted(std::chrono::milliseconds(options.period_ms))) {
      fmt::print(stderr, "coolbench wait-cool: interrupted\n");
      return exit_interrupted;
    }
  }
}

}  // namespace

command add_wait_cool_command(CLI::App& parent) {
  auto options = std::make_shared<wait_cool_options>();
  auto* app = parent.add_subcommand("wait-cool", "Wait until a GPU is at or below a temperature");
  app->add_option("--below", options->below_c, "Target temperature in degrees C")
      ->required()
      ->check(CLI::Range(0, 120));
  add_device_option(*app, options->device);
  app->add_option("--timeout", options->timeout_s, "Give up after this many seconds")
      ->check(CLI::PositiveNumber);
  app->add_option("--period", options->period_ms, "How often to read the temperature, in ms")
      ->check(CLI::Range(10, 10000));
  app->add_flag("--quiet", options->quiet, "Print nothing; the exit code says it all");
  return {app, [options] { return run_wait_cool(*options); }, help::wait_cool()};
}

}  // namespace coolbench::cli
