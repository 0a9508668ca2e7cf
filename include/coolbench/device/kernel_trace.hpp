/// @file
/// Every kernel the process runs on its GPUs, as CUPTI's activity API records
/// them: the GPU's own start and end of each kernel, with no event or mark
/// between kernels, so a CUDA graph's kernels and the idle time between them
/// are seen as they run. `coolbench nodes --kernels` prints a model's runs this
/// way (docs/cli/nodes.md). CUPTI (libcupti of the CUDA toolkit) is loaded at
/// run time, so a binary without it still starts; a trace then cannot start
/// and says why.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coolbench/core/error.hpp"

namespace coolbench::device {

/// A kernel trace cannot start here: no CUPTI, or another tracer holds it.
class kernel_trace_unavailable : public not_available {
 public:
  using not_available::not_available;
};

/// One kernel as the GPU ran it.
struct kernel_record {
  std::string name;                        ///< demangled where it is a C++ name
  std::uint64_t start_ns = 0, end_ns = 0;  ///< the GPU's timestamps
  std::uint32_t device = 0, stream = 0;
  std::int32_t grid[3] = {}, block[3] = {};
  std::int32_t static_shared = 0, dynamic_shared = 0;  ///< bytes a block asked for
  std::uint32_t shared_executed = 0;  ///< the shared-memory configuration it ran with
                                      ///< (bytes; 0 where CUPTI does not report it)
  std::uint16_t registers = 0;        ///< per thread
  std::uint64_t graph_node = 0;       ///< 0 when not launched by a CUDA graph
};

/// Records kernels from construction to stop(). One trace at a time in a
/// process (CUPTI's activity buffers are process-wide).
class kernel_trace {
 public:
  /// Starts recording. Throws kernel_trace_unavailable when CUPTI cannot be
  /// loaded, or refuses (another tool, such as ncu or nsys, already traces
  /// the process), saying what to do; invalid_argument while another trace
  /// records.
  kernel_trace();
  ~kernel_trace();
  kernel_trace(const kernel_trace&) = delete;
  kernel_trace& operator=(const kernel_trace&) = delete;
  kernel_trace(kernel_trace&&) = delete;
  kernel_trace& operator=(kernel_trace&&) = delete;

  /// Ends recording and returns every kernel recorded, by start time. Call
  /// it once the work finished on the GPU (after a synchronize): a kernel
  /// still running is not in the records. Records CUPTI had no room for, and
  /// records without timestamps, are counted in dropped().
  [[nodiscard]] std::vector<kernel_record> stop();
  [[nodiscard]] std::size_t dropped() const noexcept { return m_dropped; }

 private:
  bool m_recording = false;
  std::size_t m_dropped = 0;
};

/// One kernel name's share of repeated runs.
struct kernel_total {
  std::string name;
  std::size_t calls = 0;              ///< over all runs
  double total_us = 0;                ///< over all runs
  double least_us = 0;                ///< the shortest call
  std::int32_t static_shared = 0;     ///< of its last call (bytes)
  std::int32_t dynamic_shared = 0;    ///< of its last call (bytes)
  std::uint32_t shared_executed = 0;  ///< of its last call (bytes; 0 where CUPTI left it out)
};

/// Repeated runs of the same work, each run beginning with a marker kernel
/// (a stream hold): what the kernels take per run and how long the GPU sat
/// idle between them.
struct kernel_runs {
  bool marked = false;              ///< the marker was found: else all records are one run
  std::size_t runs = 0;             ///< runs with at least one kernel after the marker
  std::size_t kernels_per_run = 0;  ///< the first such run's
  double span_us = 0;  ///< mean per run: the first kernel's start to the last one's end
  double busy_us = 0;  ///< mean per run: time some kernel ran (overlaps counted once)
  std::vector<kernel_total> kernels;  ///< by total time, largest first
};

/// Splits `records` (any order) into runs at each kernel whose short name
/// (short_kernel_name) is `marker` (the marker itself left out; records
/// before the first marker are no run) and sums each kernel name over the
/// runs. With no marker in the records, all of them are one run.
[[nodiscard]] kernel_runs summarize_kernel_runs(std::span<const kernel_record> records,
                                                std::string_view marker);

/// A kernel's name for a table: the demangled name without its return type,
/// namespaces and parameter list ("void ns::k<__half, 64>(const __half*)"
/// is "k<__half, 64>"); a name that is no C++ signature as it is.
[[nodiscard]] std::string short_kernel_name(std::string_view name);

}  // namespace coolbench::device
