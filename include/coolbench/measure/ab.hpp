/// @file
/// Matched A/B runs (docs/measure.md, "Matched A/B"): two workloads measured in turn on one GPU,
/// in ABBA order, each burst gated to the same temperature, each pair of bursts in one CUDA
/// context and the pairs isolated from each other, so that heat, power state and the context's
/// draw are matched. The figure is the ratio B/A with its CI over the pairs.
///
///   auto a = coolbench::measure::make_workload("gemm:fp16:128:2304:768:50", 0);
///   auto b = coolbench::measure::make_workload("gemm:fp16:128:2304:768:51", 0);
///   auto env = coolbench::measure::make_gpu_environment(0);
///   auto ab = coolbench::measure::measure_ab(*a, *b, *env, {});
///   // ab.time->ratio, ab.time->lower, ab.time->upper; ab.a, ab.b: each workload's run
#pragma once

#include "coolbench/measure/ab_result.hpp"
#include "coolbench/measure/protocol.hpp"

namespace coolbench::measure {

/// Measures A and B in matched pairs until the ratio's CI half-width is within rel_ci of it
/// (after at least `contexts` pairs, rounded up to an even number so that each order comes as
/// often) or a limit (max_time, max_samples over both) stops it. Uses the protocol's options
/// (target_temp, gate_timeout, context_min_samples per burst, max_burst, ...); the mode is
/// cold, the policy coolbench. Never throws for what happens during the run, as measure().
[[nodiscard]] ab_result measure_ab(workload& a, workload& b, environment& env,
                                   const protocol_options& options,
                                   const progress_fn& progress = {}, const status_fn& status = {});

}  // namespace coolbench::measure
