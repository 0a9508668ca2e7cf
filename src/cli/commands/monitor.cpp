// coolbench monitor: one line per telemetry sample, like nvidia-smi dmon,
// read through the same sampler thread the measurements use.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>

#include "cli/command.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help.hpp"
#include "cli/interrupt.hpp"
#include "coolbench/core/clock.hpp"
#include "coolbench/core/error.hpp"
#include "coolbench/report.hpp"
#include "coolbench/telemetry.hpp"

namespace coolbench::cli {
using namespace coolbench::report;  // the renderings the commands print and write
namespace {

struct monitor_options {
  int device = 0;
  int period_ms = 500;
  double duration_s = 0;  // 0: until Ctrl-C
  std::string csv_path;
};

/// A CSV file written line by line and flushed each time, so that whatever
/// stops the monitor leaves only whole lines behind.
class csv_file {
 public:
  explicit csv_file(const std::string& path) : m_file(std::fopen(path.c_str(), "w")) {
    if (m_file == nullptr) {
      throw invalid_argument("cannot write --csv " + path + ": " + std::strerror(errno));
    }
  }
  ~csv_file() { std::fclose(m_file); }
  csv_file(const csv_file&) = delete;
  csv_file& operator=(const csv_file&) = delete;
  csv_file(csv_file&&) = delete;
  csv_file& operator=(csv_file&&) = delete;

  void write(const std::string& line) {
    std::fputs(line.c_str(), m_file);
    std::fflush(m_file);
  }

 private:
  std::FILE* m_file;
};

int run_monitor(const monitor_options& options) {
  catch_interrupts();
  telemetry::sampler sampler(telemetry::make_gpu_source(options.device),
                             {.period = std::chrono::milliseconds(options.period_ms)});
  std::optional<csv_file> csv;
  if (!options.csv_path.empty()) {
    csv.emplace(options.csv_path);
    csv->write(csv_header());
  }
  const std::int64_t start_ns = steady_now_ns();
  // Wall time of the start, so CSV rows carry absolute times too.
  const double start_unix_s = wall_now_s();
  fmt::print("{}", monitor_header());
  std::fflush(stdout);
  sampler.start();

  std::int64_t last_ns = start_ns - 1;
  const auto print_new = [&] {
    for (const auto& sample : sampler.since(last_ns)) {
      const double t = static_cast<double>(sample.time_ns - start_ns) / 1e9;
      fmt::print("{}", monitor_line(t, options.device, sample));
      if (csv) csv->write(csv_row(t, start_unix_s + t, options.device, sample));
      last_ns = sample.time_ns;
    }
    std::fflush(stdout);
  };
  const auto poll = std::chrono::milliseconds(std::min(options.period_ms, 100));
  while (!interrupted()) {
    const double elapsed_s = static_cast<double>(steady_now_ns() - start_ns) / 1e9;
    if (options.duration_s > 0 && elapsed_s >= options.duration_s) break;
    sleep_unless_interrupted(poll);
    print_new();
  }
  sampler.stop();
  print_new();
  const auto stats = sampler.stats();
  if (stats.failed_reads > 0) {
    fmt::print(stderr, "coolbench monitor: {} of {} reads failed; last: {}\n", stats.failed_reads,
               stats.samples, stats.last_error);
  }
  return exit_ok;
}

}  // namespace

command add_monitor_command(CLI::App& parent) {
  auto options = std::make_shared<monitor_options>();
  auto* app =
      parent.add_subcommand("monitor", "Print a line per telemetry sample (like nvidia-smi dmon)");
  add_device_option(*app, options->device);
  app->add_option("--period", options->period_ms, "Sampling period in ms (1 to 1000)")
      ->check(CLI::Range(1, 1000));
  app->add_option("--duration", options->duration_s, "Stop after this many seconds (0: at Ctrl-C)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--csv", options->csv_path, "Also write every sample to this CSV file");
  return {app, [options] { return run_monitor(*options); }, help::monitor()};
}

}  // namespace coolbench::cli
