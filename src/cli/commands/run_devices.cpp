// coolbench run on several GPUs at once (docs/cli/run.md, "Several GPUs"). Each GPU's worker
// thread makes its own workload (its model session, its GEMM chain) and environment (its
// telemetry sampler, its device release), measures and releases only its GPU.
#include "cli/commands/run_devices.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <mutex>

#include <nlohmann/json.hpp>

#include "cli/exit_codes.hpp"
#include "cli/interrupt.hpp"
#include "coolbench/device/device.hpp"
#include "coolbench/measure/multi.hpp"
#include "coolbench/measure/protocol.hpp"
#include "coolbench/measure/workload.hpp"
#include "coolbench/report.hpp"

namespace coolbench::cli {
namespace {

std::unique_ptr<measure::workload> workload_on(const devices_run& r, int ordinal) {
  if (!r.workload.empty()) return measure::make_workload(r.workload, ordinal);
  return measure::make_model_workload(r.model, "cuda:" + std::to_string(ordinal), r.dims,
                                      r.cuda_graph);
}

void write_files(const devices_run& r, const measure::multi_result& all) {
  if (!r.json_path.empty() || !r.html_path.empty()) {
    nlohmann::json doc = report::multi_to_json(all);
    if (!r.json_path.empty()) report::write_text_atomically(r.json_path, doc.dump(1) + "\n");
    if (!r.html_path.empty()) {
      report::write_text_atomically(r.html_path, report::multi_html(report::read_multi_document(
                                                     std::move(doc), r.html_path)));
    }
  }
  if (r.csv_path.empty()) return;
  for (const auto& d : all.runs) {
    if (d.result) {
      report::write_text_atomically(per_gpu_path(r.csv_path, d.ordinal),
                                    report::samples_csv(*d.result));
    }
  }
}

int exit_code_of(const measure::multi_result& all) {
  for (const auto& d : all.runs) {
    if (d.result && d.result->stop_reason == measure::stop_reason::interrupted) {
      return exit_interrupted;
    }
  }
  const int failed = all.failures();
  if (failed == 0) return exit_ok;
  return failed == static_cast<int>(all.runs.size()) ? exit_error : exit_some_gpus_failed;
}

}  // namespace

std::string per_gpu_path(const std::string& path, int ordinal) {
  std::filesystem::path p(path);
  const std::string extension = p.extension().string();
  p.replace_extension();
  return p.string() + ".gpu" + std::to_string(ordinal) + extension;
}

int run_devices(const devices_run& r, const measure::protocol_options& protocol) {
  catch_interrupts();
  const auto stop_requested = [] { return interrupted(); };
  std::mutex print_mutex;
  const measure::device_progress_fn progress = [&](int ordinal, const std::string& line) {
    if (r.quiet) return;
    const std::lock_guard lock(print_mutex);
    fmt::print("  GPU {}: {}\n", ordinal, line);
    std::fflush(stdout);
  };
  const measure::device_job_factory make_job = [&](int ordinal) {
    // The worker's GPU current before anything of the workload runs: a CUDA call made before
    // its first lease would otherwise go to GPU 0 (a fresh thread's default).
    device::device::get(ordinal).make_current();
    measure::device_job job;
    job.w = workload_on(r, ordinal);
    job.env = measure::make_gpu_environment(ordinal, std::chrono::milliseconds(r.telemetry_ms),
                                            stop_requested);
    return job;
  };
  if (!r.quiet) {
    std::string list;
    for (int o : r.ordinals) list += (list.empty() ? "" : ", ") + std::to_string(o);
    fmt::print("measuring {} on GPUs {} at once\n",
               r.workload.empty() ? "model " + r.model : r.workload, list);
    std::fflush(stdout);
  }
  const measure::multi_result all =
      measure::measure_devices(r.ordinals, make_job, protocol, progress);
  write_files(r, all);
  fmt::print("{}", report::format_multi_summary(all));
  return exit_code_of(all);
}

}  // namespace coolbench::cli
