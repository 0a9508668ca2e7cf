// coolbench run: a latency figure that does not depend on the GPU's
// temperature when the run started, with the evidence (docs/cli/run.md,
// docs/measure.md).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/commands/run_against.hpp"
#include "cli/commands/run_devices.hpp"
#include "cli/device_list.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help.hpp"
#include "cli/interrupt.hpp"
#include "cli/live_line.hpp"
#include "cli/model_choice.hpp"
#include "cli/protocol_flags.hpp"
#include "coolbench/device/device.hpp"
#include "coolbench/report.hpp"
#ifdef COOLBENCH_HAVE_ENGINE
#include "coolbench/engine/model.hpp"
#endif
#include "coolbench/measure/options.hpp"
#include "coolbench/measure/protocol.hpp"
#include "coolbench/measure/workload.hpp"

namespace coolbench::cli {
using namespace coolbench::report;  // the renderings the commands print and write
namespace {

struct run_options {
  std::string model;
  std::string workload;
  /// "cpu", a CUDA ordinal, "all" or "N,M,..." (several GPUs at once, run_devices.cpp), or
  /// empty: GPU 0 when there is one, else the CPU.
  std::string device;
  std::vector<std::string> dims;
  /// A model on a GPU kernel by kernel instead of as one CUDA graph.
  bool no_cuda_graph = false;
  /// The protocol's options given, as written: table name (measure/options.hpp) → text.
  std::shared_ptr<protocol_flags> protocol = std::make_shared<protocol_flags>();
  int telemetry_ms = 20;
  std::string json_path;
  std::string csv_path;
  std::string html_path;
  /// Matched A/B: B, as a workload spec or a model (run_against.cpp).
  std::string against;
  double same_within = 0.01;
  bool quiet = false;
};

/// The workload to measure: a GPU workload spec, or a model (the built-in GPT-2 small when
/// neither is given). Null after saying why when the model file cannot be read.
std::unique_ptr<measure::workload> measured_workload(const std::string& model_path,
                                                     const std::string& spec, const run_options& o,
                                                     std::map<std::string, std::int64_t> dims) {
  if (!spec.empty())
    return measure::make_workload(spec, o.device.empty() ? 0 : std::stoi(o.device));
#ifndef COOLBENCH_HAVE_ENGINE
  (void)model_path;
  (void)dims;
  throw not_available(
      "this coolbench was built without the engine (COOLBENCH_ENGINE=OFF), so it runs no "
      "model; measure a GPU workload with --workload gemm:DTYPE:M:N:K[:COUNT] or "
      "gemm:fp16:gpt2-small");
#else
  const std::string backend = model_backend(o.device, o.quiet);
  std::filesystem::path model = model_path;
  if (model.empty()) {
    const bool half = backend != "cpu";
    model = default_model(half, o.quiet);
    dims.try_emplace("batch", 1);
    dims.try_emplace("sequence", 128);
    if (!o.quiet) {
      fmt::print("no model given: GPT-2 small {} at batch 1, sequence 128 on {}\n",
                 half ? "fp16" : "fp32", half ? "GPU " + backend.substr(5) : "the CPU");
    }
  }
  try {
    return measure::make_model_workload(model, backend, dims, !o.no_cuda_graph);
  } catch (const engine::model_error& e) {
    std::fflush(stdout);
    fmt::print(stderr, "coolbench run: {}\n", e.what());
    return nullptr;  // exit_bad_device, documented: a file that cannot be read
  }
#endif
}

int run_several(const run_options& o, const std::vector<int>& gpus,
                const measure::protocol_options& protocol,
                const std::map<std::string, std::int64_t>& dims) {
  devices_run r;
  r.ordinals = gpus;
  r.workload = o.workload;
  r.dims = dims;
  r.cuda_graph = !o.no_cuda_graph;
  r.telemetry_ms = o.telemetry_ms;
  r.json_path = o.json_path;
  r.csv_path = o.csv_path;
  r.html_path = o.html_path;
  r.quiet = o.quiet;
  if (o.workload.empty()) {
#ifndef COOLBENCH_HAVE_ENGINE
    (void)measured_workload(o.model, o.workload, o, dims);  // says the engine is not built
#else
    if (o.model.empty()) {
      r.model = default_model(true, o.quiet).string();
      r.dims.try_emplace("batch", 1);
      r.dims.try_emplace("sequence", 128);
    } else if (!std::filesystem::exists(o.model)) {
      std::fflush(stdout);
      fmt::print(stderr, "coolbench run: {}: no such file\n", o.model);
      return exit_bad_device;  // documented: a file that cannot be read
    } else {
      r.model = o.model;
    }
#endif
  }
  return run_devices(r, protocol);
}

int run_run(const run_options& o) {
  // Everything the command line alone decides, checked before any work:
  // a mistake there is a usage error (exit 2), not a failure.
  measure::protocol_options protocol;
  std::map<std::string, std::int64_t> dims;
  try {
    protocol = protocol_from(*o.protocol);
    dims = parse_dims(o.dims);
    if (!o.model.empty() && !o.workload.empty()) {
      throw invalid_argument("give a model or --workload, not both");
    }
    if (o.workload.starts_with("gemm:")) (void)measure::parse_gemm_chain(o.workload);
    if (!o.workload.empty() && o.device == "cpu") {
      throw invalid_argument("--workload runs on a GPU; --device cpu is for a model");
    }
    check_against(o.against, o.device, o.csv_path);
    if (names_several_gpus(o.device) && !o.against.empty()) {
      throw invalid_argument("--against measures on one GPU; give --device N, not several");
    }
  } catch (const invalid_argument& e) {
    std::fflush(stdout);
    fmt::print(stderr, "coolbench run: {}. Run 'coolbench run --help'.\n", e.what());
    return exit_usage;
  }
  if (names_several_gpus(o.device)) {
    const std::vector<int> gpus = resolve_gpus(o.device, device::device::count());
    if (gpus.size() > 1) return run_several(o, gpus, protocol, dims);
    // One GPU named (all, on a host with one): a run on it, as --device N gives it.
    run_options one = o;
    one.device = std::to_string(gpus.front());
    return run_run(one);
  }
  std::unique_ptr<measure::workload> w = measured_workload(o.model, o.workload, o, dims);
  std::unique_ptr<measure::workload> against;
  if (w && !o.against.empty()) {
    const bool gemm = o.against.starts_with("gemm:");
    against = measured_workload(gemm ? "" : o.against, gemm ? o.against : "", o, dims);
  }
  if (!w || (!o.against.empty() && !against)) return exit_bad_device;

  catch_interrupts();
  const auto stop_requested = [] { return interrupted(); };
  std::unique_ptr<measure::environment> env =
      w->device() ? measure::make_gpu_environment(
                        *w->device(), std::chrono::milliseconds(o.telemetry_ms), stop_requested)
                  : measure::make_cpu_environment(stop_requested);
  live_line live(o.quiet);  // on a terminal only (docs/cli/run.md, "Progress")
  const measure::progress_fn progress = [&](const std::string& line) {
    if (!o.quiet) {
      live.clear();
      fmt::print("  {}\n", line);
      std::fflush(stdout);
    }
  };
  const measure::status_fn status = [&](const measure::run_status& s) { live.update(s); };
  if (against) {
    return run_against(*w, *against, *env, protocol, {progress, status, &live},
                       {o.json_path, o.html_path, o.same_within, o.quiet});
  }
  if (!o.quiet) fmt::print("measuring {}\n", w->describe());
  const measure::run_result result = measure::measure(*w, *env, protocol, progress, status);
  live.clear();

  // Written whatever happened, marked incomplete when cut short.
  if (!o.json_path.empty() || !o.html_path.empty()) {
    nlohmann::json doc = to_json(result);
    if (!o.json_path.empty()) write_text_atomically(o.json_path, doc.dump(1) + "\n");
    if (!o.html_path.empty()) {
      write_text_atomically(o.html_path, run_html(read_run_document(std::move(doc), o.html_path)));
    }
  }
  if (!o.csv_path.empty()) write_text_atomically(o.csv_path, samples_csv(result));
  return finish_run("run", result);
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
  app->add_option("--device", o->device,
                  "cpu, the GPU by CUDA ordinal, or several at once: all, or N,M,... (default: "
                  "GPU 0 when there is one, else cpu)")
      ->check(check_run_device);
  app->add_option("--dim", o->dims, "Bind a symbolic input dimension: NAME=VALUE (repeatable)");
  app->add_flag("--no-cuda-graph", o->no_cuda_graph,
                "Run a model on the GPU kernel by kernel, not as one CUDA graph");
  // The protocol's options, from their table (measure/options.hpp).
  add_protocol_flags(*app, o->protocol);
  app->add_option("--telemetry-period", o->telemetry_ms, "ms")->check(CLI::Range(1, 1000));
  app->add_option("--json", o->json_path, "Write the whole run as JSON (docs/run-json.md)");
  app->add_option("--csv", o->csv_path, "Write every sample as CSV");
  app->add_option("--html", o->html_path,
                  "Write the run's report as one self-contained HTML page (as coolbench report)");
  app->add_option("--against", o->against,
                  "Matched A/B: measure B (a workload spec or an .onnx file) against A in pairs, "
                  "ABBA order; prints B/A with its CI and a verdict")
      ->type_name("B");
  app->add_option("--same-within", o->same_within,
                  "With --against: SAME when the ratio's CI lies within 1 ± this (default 0.01)")
      ->check(CLI::Range(1e-6, 0.5));
  app->add_flag("--quiet", o->quiet, "Print only the summary");
  return {app, [o] { return run_run(*o); }, help::run()};
}

}  // namespace coolbench::cli
