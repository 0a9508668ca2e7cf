/// @file
/// The smallest real GPU work: one elementwise Add, enough to create a context and run a kernel
/// in it, so that `coolbench release-check` shows what a context that did work costs while idle.
/// Host-only header: callers need no CUDA headers. Built only with the CUDA toolkit
/// (COOLBENCH_HAVE_CUDA).
#pragma once

namespace coolbench::device {

class lease;

/// Runs c = a + b on two 1x2x3x3 float tensors through the lease (allocate buffers, copy random
/// inputs, launch on lease.stream(), copy back, synchronize) and returns the max abs error
/// against the CPU sum. Throws cuda_error when a CUDA call fails.
[[nodiscard]] double run_probe_add(lease& l);

}  // namespace coolbench::device
