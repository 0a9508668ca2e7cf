// coolbench run: a latency figure that does not depend on the GPU's
// temperature when the run started, with the evidence (docs/cli/run.md,
// docs/measure.md).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help.hpp"
#include "cli/interrupt.hpp"
#include "report/format.hpp"
#include "report/run_report.hpp"
#ifdef COOLBENCH_HAVE_ENGINE
#include "coolbench/engine/model.hpp"
#endif
#include "coolbench/measure/protocol.hpp"
#include "coolbench/measure/workload.hpp"

namespace coolbench::cli {
using namespace coolbench::report;  // the renderings the commands print and write
namespace {

struct run_options {
  std::string model;
  std::string workload;
  int device = 0;
  std::vector<std::string> dims;
  std::string mode = "cold";
  std::string policy = "coolbench";
  std::string on_throttle;
  double target_temp_c = 45;
  double max_temp_c = 0;  // 0: the protocol's default
  double rel_ci = 0.005;
  int min_samples = 30;
  int max_samples = 1000000;
  double min_time_s = 1;
  double max_time_s = 120;
  double gate_timeout_s = 300;
  double profile_time_s = 60;
  int telemetry_ms = 20;
  int contexts = 0;  // 0: k_default_contexts in cold mode with the coolbench policy, else 1
  int context_min_samples = 30;
  std::string json_path;
  std::string csv_path;
  bool quiet = false;
};

std::chrono::milliseconds seconds(double s) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(s * 1000));
}

measure::protocol_options protocol_from(const run_options& o) {
  measure::protocol_options p;
  p.mode = measure::parse_run_mode(o.mode);
  p.policy = measure::parse_sampling_policy(o.policy);
  if (!o.on_throttle.empty()) p.on_throttle = measure::parse_throttle_action(o.on_throttle);
  p.target_temp_c = o.target_temp_c;
  if (o.max_temp_c > 0) p.max_temp_c = o.max_temp_c;
  p.rel_ci = o.rel_ci;
  p.min_samples = o.min_samples;
  p.max_samples = o.max_samples;
  p.min_time = seconds(o.min_time_s);
  p.max_time = seconds(o.max_time_s);
  p.gate_timeout = seconds(o.gate_timeout_s);
  p.profile_time = seconds(o.profile_time_s);
  p.contexts =
      o.contexts > 0 ? o.contexts
      : p.mode == measure::run_mode::cold && p.policy == measure::sampling_policy::coolbench
          ? measure::default_cold_contexts
          : 1;
  p.context_min_samples = o.context_min_samples;
  measure::validate(p);
  return p;
}

std::map<std::string, std::int64_t> parse_dims(const std::vector<std::string>& dims) {
  std::map<std::string, std::int64_t> out;
  for (const auto& d : dims) {
    const auto eq = d.find('=');
    char* end = nullptr;
    const long long value =
        eq == std::string::npos ? 0 : std::strtoll(d.c_str() + eq + 1, &end, 10);
    if (eq == std::string::npos || eq == 0 || end == nullptr || *end != '\0' || value < 1) {
      throw invalid_argument(
          "--dim takes NAME=VALUE with VALUE >= 1, e.g. --dim sequence=128; got '" + d + "'");
    }
    out[d.substr(0, eq)] = value;
  }
  return out;
}

#ifdef COOLBENCH_HAVE_ENGINE
/// The built-in default: GPT-2 small, written once into the user's cache.
std::filesystem::path default_model(bool quiet) {
  const char* cache = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::filesystem::path folder =
      cache != nullptr && *cache != '\0'
          ? std::filesystem::path(cache) / "coolbench"
          : std::filesystem::path(home != nullptr ? home : ".") / ".cache" / "coolbench";
  const auto path = folder / "gpt2-small-seed1.onnx";
  if (!std::filesystem::exists(path)) {
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    if (!quiet) fmt::print("writing GPT-2 small (124M parameters) to {} ...\n", path.string());
    engine::write_gpt2_model(engine::gpt2_config{}, path);
  }
  return path;
}
#endif

int run_run(const run_options& o) {
  // Everything the command line alone decides, checked before any work:
  // a mistake there is a usage error (exit 2), not a failure.
  measure::protocol_options protocol;
  std::map<std::string, std::int64_t> dims;
  try {
    protocol = protocol_from(o);
    dims = parse_dims(o.dims);
    if (!o.model.empty() && !o.workload.empty()) {
      throw invalid_argument("give a model or --workload, not both");
    }
    if (o.workload.starts_with("gemm:")) (void)measure::parse_gemm_chain(o.workload);
  } catch (const invalid_argument& e) {
    std::fflush(stdout);
    fmt::print(stderr, "coolbench run: {}. Run 'coolbench run --help'.\n", e.what());
    return exit_usage;
  }
  std::unique_ptr<measure::workload> w;
  if (!o.workload.empty()) {
    w = measure::make_workload(o.workload, o.device);
  } else {
#ifndef COOLBENCH_HAVE_ENGINE
    throw not_available(
        "this coolbench was built without the engine (COOLBENCH_ENGINE=OFF), so it runs no "
        "model; measure a GPU workload with --workload gemm:DTYPE:M:N:K[:COUNT] or "
        "gemm:fp16:gpt2-small");
#else
    std::filesystem::path model = o.model;
    if (model.empty()) {
      model = default_model(o.quiet);
      dims.try_emplace("batch", 1);
      dims.try_emplace("sequence", 128);
      if (!o.quiet) {
        fmt::print(
            "no model given: GPT-2 small at batch 1, sequence 128 on the CPU backend "
            "(the CUDA backend is not built yet)\n");
      }
    }
    try {
      w = measure::make_model_workload(model, "cpu", dims);
    } catch (const engine::model_error& e) {
      std::fflush(stdout);
      fmt::print(stderr, "coolbench run: {}\n", e.what());
      return exit_bad_device;  // documented: a file that cannot be read
    }
#endif
  }

  catch_interrupts();
  const auto stop_requested = [] { return interrupted(); };
  std::unique_ptr<measure::environment> env =
      w->device() ? measure::make_gpu_environment(
                        *w->device(), std::chrono::milliseconds(o.telemetry_ms), stop_requested)
                  : measure::make_cpu_environment(stop_requested);
  if (!o.quiet) fmt::print("measuring {}\n", w->describe());
  const measure::progress_fn progress = [&](const std::string& line) {
    if (!o.quiet) {
      fmt::print("  {}\n", line);
      std::fflush(stdout);
    }
  };
  const measure::run_result result = measure::measure(*w, *env, protocol, progress);

  // Written whatever happened, marked incomplete when cut short.
  if (!o.json_path.empty()) write_text_atomically(o.json_path, to_json(result).dump(1) + "\n");
  if (!o.csv_path.empty()) write_text_atomically(o.csv_path, samples_csv(result));
  if (result.stop_reason == measure::stop_reason::invalid_input && result.samples.empty()) {
    // Nothing was measured: a usage error, said in one line.
    std::fflush(stdout);
    fmt::print(stderr, "coolbench run: {}. Run 'coolbench run --help'.\n", result.error);
    return exit_usage;
  }
  fmt::print("{}", format_run_summary(result));
  if (result.complete) return exit_ok;
  if (result.stop_reason == measure::stop_reason::interrupted) return exit_interrupted;
  if (result.stop_reason == measure::stop_reason::gate_timeout) return exit_timeout;
  return exit_error;
}

}  // namespace

command add_run_command(CLI::App& parent) {
  auto o = std::make_shared<run_options>();
  auto* app = parent.add_subcommand(
      "run", "Measure a model's or a GPU workload's latency, independent of the GPU's temperature");
  app->add_option("model", o->model, "An .onnx file (default: the built-in GPT-2 small)");
  app->add_option("--workload", o->workload,
                  "A GPU workload instead: gemm:DTYPE:M:N:K[:COUNT][,M:N:K[:COUNT]...][@ROUNDS], "
                  "or gemm:DTYPE:gpt2-small (docs/measure.md)");
  add_device_option(*app, o->device);
  app->add_option("--dim", o->dims, "Bind a symbolic input dimension: NAME=VALUE (repeatable)");
  app->add_option("--mode", o->mode, "cold, sustained or profile")
      ->check(CLI::IsMember({"cold", "sustained", "profile"}));
  app->add_option("--policy", o->policy, "coolbench, naive, fixed-sleep or clock-discard")
      ->check(CLI::IsMember({"coolbench", "naive", "fixed-sleep", "clock-discard"}));
  app->add_option("--on-throttle", o->on_throttle, "discard or label")
      ->check(CLI::IsMember({"discard", "label"}));
  app->add_option("--target-temp", o->target_temp_c, "Cool to this before measuring (C)")
      ->check(CLI::Range(10.0, 100.0));
  app->add_option("--max-temp", o->max_temp_c, "Pause above this (C)")
      ->check(CLI::Range(10.0, 110.0));
  app->add_option("--rel-ci", o->rel_ci, "Stop when the median's CI half-width is within this")
      ->check(CLI::Range(1e-6, 0.5));
  app->add_option("--min-samples", o->min_samples)->check(CLI::Range(1, 100000000));
  app->add_option("--max-samples", o->max_samples)->check(CLI::Range(1, 100000000));
  app->add_option("--min-time", o->min_time_s, "Seconds")->check(CLI::Range(0.0, 86400.0));
  app->add_option("--max-time", o->max_time_s, "Seconds")->check(CLI::Range(0.001, 86400.0));
  app->add_option("--gate-timeout", o->gate_timeout_s, "Seconds")->check(CLI::Range(0.1, 86400.0));
  app->add_option("--profile-time", o->profile_time_s, "Seconds")->check(CLI::Range(1.0, 86400.0));
  app->add_option("--telemetry-period", o->telemetry_ms, "ms")->check(CLI::Range(1, 1000));
  app->add_option("--contexts", o->contexts,
                  "Spread a cold run over at least N CUDA contexts (default 5 in cold mode with "
                  "the coolbench policy, else 1)")
      ->check(CLI::Range(1, 10000));
  app->add_option("--context-min-samples", o->context_min_samples,
                  "Kept samples a context needs to count")
      ->check(CLI::Range(1, 100000000));
  app->add_option("--json", o->json_path, "Write the whole run as JSON (docs/run-json.md)");
  app->add_option("--csv", o->csv_path, "Write every sample as CSV");
  app->add_flag("--quiet", o->quiet, "Print only the summary");
  return {app, [o] { return run_run(*o); }, help::run()};
}

}  // namespace coolbench::cli
