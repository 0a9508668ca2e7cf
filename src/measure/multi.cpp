// Several GPUs measured at once, a worker thread each (docs/measure.md, "Many GPUs"). The
// device layer keeps each GPU's state apart and makes a lease's GPU current in its thread;
// each worker touches only its own GPU, so the threads share nothing but the progress line.
#include "coolbench/measure/multi.hpp"

#include <algorithm>
#include <exception>
#include <set>
#include <thread>

#include "coolbench/core/error.hpp"

namespace coolbench::measure {
namespace {

/// One GPU's whole part: its job made, measured and dropped, in this thread. Nothing escapes.
device_run run_one(int ordinal, const device_job_factory& make_job, const protocol_options& options,
                   const device_progress_fn& progress) {
  device_run out;
  out.ordinal = ordinal;
  const progress_fn lines = [&](const std::string& line) {
    if (progress) progress(ordinal, line);
  };
  try {
    device_job job = make_job(ordinal);
    if (!job.w || !job.env) throw error("GPU " + std::to_string(ordinal) + ": no workload made");
    out.result = measure(*job.w, *job.env, options, lines);
    // The workload goes before its environment (and its sampler), as in a single run.
    job.w.reset();
    job.env.reset();
  } catch (const std::exception& e) {
    out.error = e.what();
  } catch (...) {
    out.error = "an unknown error";
  }
  if (!out.error.empty()) lines("failed: " + out.error);
  return out;
}

void check_ordinals(const std::vector<int>& ordinals) {
  if (ordinals.empty()) throw invalid_argument("no GPU to measure: the device list is empty");
  std::set<int> seen;
  for (int o : ordinals) {
    if (o < 0) throw invalid_argument("a CUDA ordinal is 0 or more, not " + std::to_string(o));
    if (!seen.insert(o).second) {
      throw invalid_argument("GPU " + std::to_string(o) +
                             " is listed twice: each GPU is measured by one worker");
    }
  }
}

}  // namespace

multi_result measure_devices(const std::vector<int>& ordinals, const device_job_factory& make_job,
                             const protocol_options& options, const device_progress_fn& progress) {
  check_ordinals(ordinals);
  validate(options);
  multi_result all;
  all.runs.resize(ordinals.size());
  {
    std::vector<std::jthread> workers;
    workers.reserve(ordinals.size());
    for (std::size_t i = 0; i < ordinals.size(); ++i) {
      workers.emplace_back(
          [&, i] { all.runs[i] = run_one(ordinals[i], make_job, options, progress); });
    }
  }  // joins every worker
  all.spread = spread_of(all.runs);
  return all;
}

}  // namespace coolbench::measure
