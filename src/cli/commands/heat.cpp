// coolbench heat: a power-bound GEMM chain in a background thread
// (measure::heater), with the GPU's state printed at the start, every 5 s and
// at the end. Meant to pre-heat a GPU for a benchmark in another process
// (docs/facts-h200.md §4: heating in-process changes later kernels' speed).
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help.hpp"
#include "cli/interrupt.hpp"
#include "coolbench/core/clock.hpp"
#include "coolbench/measure/heater.hpp"
#include "coolbench/telemetry.hpp"

namespace coolbench::cli {
namespace {

using namespace std::chrono_literals;

constexpr std::int64_t report_every_ns = 5'000'000'000;

struct heat_options {
  int device = 0;
  double seconds = 60;
  std::string workload = measure::to_string(measure::default_heater_chain());
};

template <class T>
std::string show(const telemetry::reading<T>& r, std::string_view unit) {
  return r.ok() ? fmt::format("{}{}", r.value, unit) : "n/a";
}

std::string show_power(const telemetry::reading<double>& r) {
  return r.ok() ? fmt::format("{:.0f} W", r.value) : "n/a";
}

std::string show_state(const telemetry::gpu_sample& s) {
  return fmt::format(
      "{}, SM {}, {}, reasons {}", show(s.temp_gpu_c, " C"), show(s.clock_sm_mhz, " MHz"),
      show_power(s.power_w),
      s.clock_reasons.ok() ? telemetry::clock_reasons_short(s.clock_reasons.value) : "n/a");
}

double tflops(const measure::heater& heat, std::uint64_t gemms, double seconds) {
  return seconds > 0 ? heat.flops_per_gemm() * static_cast<double>(gemms) / seconds / 1e12 : 0.0;
}

int run_heat(const heat_options& options) {
  catch_interrupts();
  const telemetry::gpu_telemetry gpu(options.device);
  measure::heater heat(options.device, measure::parse_gemm_chain(options.workload));
  fmt::print("GPU {} at start: {}\n", options.device,
             show_state(gpu.read(telemetry::read_scope::fast)));
  const std::string how_long =
      options.seconds > 0 ? fmt::format("for {:g} s", options.seconds) : "until Ctrl-C";
  fmt::print("heating with {} {}\n", options.workload, how_long);
  std::fflush(stdout);

  heat.start();
  const std::int64_t start_ns = steady_now_ns();
  const auto elapsed_s = [&] { return static_cast<double>(steady_now_ns() - start_ns) / 1e9; };
  std::int64_t next_report_ns = start_ns + report_every_ns;
  bool stopped_by_user = false;
  while (options.seconds <= 0 || elapsed_s() < options.seconds) {
    if (!sleep_unless_interrupted(50ms)) {
      stopped_by_user = true;
      break;
    }
    if (!heat.running()) break;
    if (steady_now_ns() >= next_report_ns) {
      const auto gemms = heat.gemms();
      const double s = elapsed_s();
      fmt::print("{:6.1f} s: {}; {} GEMMs, {:.0f} TFLOP/s\n", s,
                 show_state(gpu.read(telemetry::read_scope::fast)), gemms, tflops(heat, gemms, s));
      std::fflush(stdout);
      next_report_ns += report_every_ns;
    }
  }
  const std::uint64_t gemms = heat.stop();
  const double s = elapsed_s();
  fmt::print("GPU {} at end: {}\n", options.device,
             show_state(gpu.read(telemetry::read_scope::fast)));
  fmt::print("ran {} GEMMs in {:.1f} s: {:.0f} TFLOP/s on average\n", gemms, s,
             tflops(heat, gemms, s));
  if (stopped_by_user && options.seconds > 0) {
    fmt::print(stderr, "coolbench heat: interrupted\n");
    return exit_interrupted;
  }
  return exit_ok;
}

}  // namespace

command add_heat_command(CLI::App& parent) {
  auto options = std::make_shared<heat_options>();
  auto* app = parent.add_subcommand("heat", "Keep a GPU busy with power-bound GEMMs");
  add_device_option(*app, options->device);
  app->add_option("--seconds", options->seconds, "Heat for this many seconds; 0: until Ctrl-C")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--workload", options->workload,
                  "The GEMM chain, gemm:DTYPE:M:N:K[:COUNT][,M:N:K[:COUNT]...][@ROUNDS]")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            try {
              (void)measure::parse_gemm_chain(text);
              return {};
            } catch (const invalid_argument& e) {
              return e.what();
            }
          },
          "GEMM", "gemm"));
  return {app, [options] { return run_heat(*options); }, help::heat()};
}

}  // namespace coolbench::cli
