// A small GPU workload for the release tests: one kernel that needs more
// than 48 KB of dynamic shared memory, so it launches only if the kernel
// attribute was re-applied in the current context.
#pragma once

#include <vector>

#include "coolbench/device/device.hpp"

namespace coolbench::testing {

/// Bytes of dynamic shared memory the workload's kernel asks for (> 48 KB).
inline constexpr int cycle_workload_shared_bytes = 100 * 1024;

/// Sets the kernel's attribute through the lease (kept across releases).
void register_cycle_workload(device::lease& lease);

/// Fills n inputs from `seed` on the GPU, runs the kernel, returns its output.
/// Throws cuda_error on any CUDA failure (a launch without the attribute fails).
[[nodiscard]] std::vector<float> run_cycle_workload(device::lease& lease, int n, unsigned seed);

}  // namespace coolbench::testing
