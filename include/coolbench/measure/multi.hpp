/// @file
/// The protocol on several GPUs at once (docs/measure.md, "Many GPUs"): one worker thread per
/// GPU, each with its own workload, environment (telemetry sampler, device release) and
/// protocol, all running at the same time.
///
///   auto jobs = [&](int ordinal) {
///     return coolbench::measure::device_job{coolbench::measure::make_workload(spec, ordinal),
///                                           coolbench::measure::make_gpu_environment(ordinal)};
///   };
///   auto all = coolbench::measure::measure_devices({0, 1}, jobs, options);
///   // all.runs[i].result: GPU i's run; all.spread: the figure across GPUs of one model
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "coolbench/measure/multi_result.hpp"
#include "coolbench/measure/options.hpp"
#include "coolbench/measure/protocol.hpp"
#include "coolbench/measure/workload.hpp"

namespace coolbench::measure {

/// What one GPU's worker measures with.
struct device_job {
  std::unique_ptr<workload> w;
  std::unique_ptr<environment> env;
};

/// Makes GPU `ordinal`'s workload and environment. Called in that GPU's worker thread, so that
/// everything of the GPU (its context, streams, library handles) is made where it is used.
/// What it throws fails that GPU only.
using device_job_factory = std::function<device_job(int ordinal)>;

/// A progress line of GPU `ordinal`'s run. Called from its worker thread: the callee
/// serializes (the CLI prints under a lock).
using device_progress_fn = std::function<void(int ordinal, const std::string& line)>;

/// Runs the protocol on every GPU of `ordinals` at once, a worker thread each, and waits for
/// all. A GPU that fails (its job cannot be made, its workload throws, its release is refused)
/// fails alone: the others run to their end, and its device_run says what went wrong. Throws
/// invalid_argument for bad options or an empty or repeated ordinal list, before any thread
/// starts.
[[nodiscard]] multi_result measure_devices(const std::vector<int>& ordinals,
                                           const device_job_factory& make_job,
                                           const protocol_options& options,
                                           const device_progress_fn& progress = {});

}  // namespace coolbench::measure
