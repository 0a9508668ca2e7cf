// coolbench run --device all | N,M,...: the protocol on several GPUs at once, a worker thread
// each (docs/cli/run.md, "Several GPUs"), its summary and its files.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "coolbench/measure/options.hpp"

namespace coolbench::cli {

struct devices_run {
  std::vector<int> ordinals;  ///< two or more
  std::string model;          ///< the .onnx file; empty with a workload spec
  std::string workload;       ///< a GPU workload spec; empty with a model
  std::map<std::string, std::int64_t> dims;
  bool cuda_graph = true;
  int telemetry_ms = 20;
  std::string json_path;
  std::string csv_path;  ///< one file per GPU: run.csv -> run.gpu0.csv, run.gpu1.csv, ...
  std::string html_path;
  bool quiet = false;
};

/// Measures every GPU at once, prints each GPU's summary and the spread, writes the files
/// (also when some GPUs failed), and returns the exit code: 0, 7 when some GPUs failed and
/// the others measured, 1 when every GPU failed, 130 interrupted.
int run_devices(const devices_run& run, const measure::protocol_options& protocol);

/// The CSV file of GPU `ordinal` in a run of several: `path` with ".gpuN" before its extension.
[[nodiscard]] std::string per_gpu_path(const std::string& path, int ordinal);

}  // namespace coolbench::cli
