// coolbench hidden-state: is the GPU, as this process finds it, in a state no sensor shows
// (docs/measure.md, "Hidden state")? The run's own start check, on its own: the sentinel as
// found, then a touch (another process makes a CUDA context and exits; it cleared the state
// in the reference program and in PyTorch's measuring processes, docs/perf/hidden-state.md
// §13), then the sentinel calibrated in the same context and the first check judged against
// it. This process's context is released at the end.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help.hpp"
#include "cli/interrupt.hpp"
#include "coolbench/core/error.hpp"
#include "coolbench/measure/hidden_state.hpp"
#include "coolbench/measure/protocol.hpp"
#include "coolbench/report/format.hpp"

namespace coolbench::cli {
namespace {

using namespace std::chrono_literals;

struct hidden_state_options {
  int device = 0;
  int checks = 5;
  std::string json_path;
};

measure::sentinel_reading check(measure::environment& env) {
  const auto m = env.check_sentinel(measure::sentinel_kind::gemm_chain);
  if (!m) throw not_available("this environment has no hidden-state sentinel");
  return *m;
}

nlohmann::json to_json(const hidden_state_options& o, const std::string& gpu,
                       const measure::sentinel_reading& found, const std::string& isolation_line,
                       const measure::sentinel_calibration& c, const measure::sentinel_check& v,
                       const std::string& release_line) {
  nlohmann::json j;
  j["device"] = o.device;
  j["gpu"] = gpu;
  j["sentinel"] = measure::to_string(measure::sentinel_kind::gemm_chain);
  j["as_found_ms"] = found.median_ms;
  j["isolation"] = measure::to_string(measure::isolation::touch);
  j["isolation_note"] = isolation_line;
  j["calibration"] = {{"median_ms", c.median_ms},
                      {"noise", c.noise},
                      {"checks", c.checks},
                      {"check_ms", c.check_ms}};
  j["shift"] = v.shift;
  j["threshold"] = v.threshold;
  j["moved"] = v.moved;
  j["judged"] = v.judged;
  j["sensors_unchanged"] = v.sensors_unchanged;
  j["sensor_change"] = v.sensor_change.empty() ? nlohmann::json() : nlohmann::json(v.sensor_change);
  j["hidden_state"] = v.hidden_state();
  j["summary"] = v.summary();
  j["release"] = release_line;
  return j;
}

int run_hidden_state(const hidden_state_options& o) {
  catch_interrupts();
  const auto env = measure::make_gpu_environment(o.device, 20ms, [] { return interrupted(); });
  const auto conditions = env->conditions();
  const std::string gpu = conditions.gpu ? conditions.gpu->name : "";
  fmt::print("GPU {} ({}): the sentinel, {} as one CUDA graph\n", o.device, gpu,
             "GPT-2 small's 48 fp16 GEMMs at sequence 128");
  const measure::sentinel_reading found = check(*env);
  fmt::print("as found:        {:.4f} ms\n", found.median_ms);
  std::fflush(stdout);
  const std::string isolation_line = env->isolate(measure::isolation::touch);
  std::vector<double> medians;
  std::uint64_t context = found.context;
  for (int i = 0; i < o.checks; ++i) {
    if (interrupted()) {
      fmt::print(stderr, "coolbench hidden-state: interrupted\n");
      (void)env->release_device();
      return exit_interrupted;
    }
    const auto m = check(*env);
    medians.push_back(m.median_ms);
    context = m.context;
  }
  measure::sentinel_calibration calibration =
      measure::calibrate_sentinel(medians, measure::sensors_of(env->latest()));
  calibration.context = context;
  measure::sentinel_check verdict = measure::judge_sentinel(
      calibration, found.median_ms, measure::sensors_of(env->latest()), "as found");
  if (context != found.context) {  // the device layer made a new context between the checks
    verdict.judged = false;
    verdict.action = "not judged: the checks after the touch ran in a new CUDA context";
  } else if (verdict.hidden_state()) {
    verdict.action = "cleared by touch";
  }
  fmt::print("after a touch:   {:.4f} ms (the median of {} checks, noise {:.2f} %)\n",
             calibration.median_ms, calibration.checks, 100 * calibration.noise);
  fmt::print("{}{}\n", verdict.summary(), verdict.action.empty() ? "" : "; " + verdict.action);
  const std::string release_line = env->release_device();
  if (!o.json_path.empty()) {
    report::write_text_atomically(
        o.json_path,
        to_json(o, gpu, found, isolation_line, calibration, verdict, release_line).dump(2) + "\n");
  }
  return exit_ok;
}

}  // namespace

command add_hidden_state_command(CLI::App& parent) {
  auto options = std::make_shared<hidden_state_options>();
  auto* app = parent.add_subcommand(
      "hidden-state", "Whether the GPU is in a slow state that no sensor shows, and clear it");
  add_device_option(*app, options->device);
  app->add_option("--checks", options->checks, "Sentinel checks after the touch (default 5)")
      ->check(CLI::Range(1, 100));
  app->add_option("--json", options->json_path, "Write the checks and the verdict here");
  return {app, [options] { return run_hidden_state(*options); }, help::hidden_state()};
}

}  // namespace coolbench::cli
