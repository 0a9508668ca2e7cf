/// @file
/// Text, CSV and JSON renderings of telemetry for the commands. Pure functions
/// of their inputs, so tests can check them without a GPU.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "coolbench/telemetry.hpp"

namespace coolbench::report {

/// "n/a" for a reading without a value, else the value with `decimals`.
template <class T>
[[nodiscard]] std::string show(const telemetry::reading<T>& r, int decimals = 0);

/// The `coolbench info` block of one GPU.
[[nodiscard]] std::string format_gpu_info(const telemetry::gpu_identity& id,
                                          const telemetry::gpu_sample& sample,
                                          const std::vector<telemetry::gpu_process>& processes);

/// The topology block of `coolbench info` for two or more GPUs: a matrix
/// like `nvidia-smi topo -m` (links[i][j] is how GPU ordinals[i] reaches
/// ordinals[j]; the diagonal is not read) and a legend.
[[nodiscard]] std::string format_topology(
    const std::vector<int>& ordinals, const std::vector<std::vector<telemetry::gpu_link>>& links);

/// The host sensor block of `coolbench info`; says "absent" for what is absent.
[[nodiscard]] std::string format_cpu_sensors(const telemetry::cpu_sensors& sensors);

/// The `coolbench who` block of one GPU.
[[nodiscard]] std::string format_gpu_processes(
    const telemetry::gpu_identity& id, const std::vector<telemetry::gpu_process>& processes);

/// Header and one line per sample of `coolbench monitor`, like nvidia-smi dmon.
[[nodiscard]] std::string monitor_header();
[[nodiscard]] std::string monitor_line(double time_s, int gpu, const telemetry::gpu_sample& s);

/// CSV header and row of `coolbench monitor --csv`; empty cells for readings
/// without a value.
[[nodiscard]] std::string csv_header();
[[nodiscard]] std::string csv_row(double time_s, double unix_time_s, int gpu,
                                  const telemetry::gpu_sample& s);

/// JSON objects. A reading without a value is null, and its name is listed
/// under "unsupported", "failed" or "skipped".
/// Writes `text` to `path` through `path`.tmp and a rename, so a reader (or
/// an interrupted run) never leaves half a file. Throws error naming the file.
void write_text_atomically(const std::string& path, const std::string& text);

[[nodiscard]] nlohmann::json to_json(const telemetry::gpu_identity& id);
[[nodiscard]] nlohmann::json to_json(const telemetry::gpu_sample& s);
[[nodiscard]] nlohmann::json to_json(const std::vector<telemetry::gpu_process>& processes);
[[nodiscard]] nlohmann::json to_json(const telemetry::cpu_sensors& sensors);
/// {"label", "pcie_path", "direct_nvlinks", "active_nvlinks", "nvlink_p2p"}; unknown parts null.
[[nodiscard]] nlohmann::json to_json(const telemetry::gpu_link& link);

}  // namespace coolbench::report
