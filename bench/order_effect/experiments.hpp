// bench/order_effect's experiments: each returns rows that main prints as a
// markdown table and writes to JSON.
#pragma once

#include <string>
#include <vector>

#include "victim.hpp"

namespace order_effect {

/// One figure: `values` from `values.size()` repeats, summarised as their median.
struct figure {
  std::string table;  ///< which experiment
  std::string row;
  std::string column;
  std::vector<double> values;
  std::string unit = "ms";
};

struct bench_context {
  dev::device& gpu;
  std::string self;  ///< this program, for the fresh-process isolation
  int warmups = 20;
  int replays = 200;
  int repeats = 5;
  bool forced = false;  ///< a release was refused once: force from then on
  std::string refusal;
  disturb_stream disturb_on = disturb_stream::legacy;
};

/// Releases (forcing after a refusal) and returns the wall seconds.
double release_device(bench_context& b);

/// Clean and after the bf16 GEMMs, for each victim variant; and its kernels.
std::vector<figure> survey_victims(bench_context& b);
/// The victim in each form between today's and the reference program's (victim_form), on
/// the base `config`: clean, after a 200 KB kernel, after NVML reads, after the bf16 GEMMs,
/// after a touch. The form that slows like the reference names the difference.
std::vector<figure> bisect_forms(bench_context& b, const victim_config& config);
/// Per-operation times, clean and disturbed, for the victim `config` and the
/// same victim with cuBLAS's workspace from the lease.
std::vector<figure> per_kernel(bench_context& b, const victim_config& config);
/// The sentinel kernel at several table sizes, clean, disturbed, after a touch.
std::vector<figure> sentinel_sizes(bench_context& b);
/// Disturbance x isolation, side by side, with each isolation's cost.
std::vector<figure> isolation_table(bench_context& b, const victim_config& config);

/// Detection in `trials` trials for each checker: the protocol's two sentinels (src/measure),
/// then the victim `config` itself. Each trial: a release, a calibration of 5 checks, then one
/// check clean, after a 200 KB kernel, after the bf16 GEMMs as well and after a touch, each
/// judged by judge_sentinel. The victim's kernels are printed (name, shared memory).
std::vector<figure> detection_trials(bench_context& b, const victim_config& config, int trials);

/// One eager pass of the victim clean, the bf16 GEMMs, one eager pass: for ncu.
void profile_passes(bench_context& b, const victim_config& config);

/// The child modes: a fresh process measuring the victim (prints its median);
/// a process that only initialises the driver (no context).
int child_measure(int ordinal, const victim_config& config, int warmups, int replays);
int child_driver_only();
/// A process that makes a context, runs one disturbance (`smem100`, `smem200` or `gemms`, on
/// the legacy stream outside the lease, as the reference program) and exits: whether the state
/// outlives the process that formed it (hidden-state.md §14).
int child_disturb(int ordinal, const std::string& what);

/// Runs `command` and returns its stdout; throws when it fails.
std::string run_command(const std::string& command);

}  // namespace order_effect
