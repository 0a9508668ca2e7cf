// Whether a release would pull memory from under another runtime: NVML's
// figure for this process, less the bare context and coolbench's own bytes,
// against half of NVML's step (docs/device.md, "Foreign state"). Pure
// arithmetic over what the device layer gathered, so that every verdict and
// message is tested without a GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "device/detail/context_baseline.hpp"

namespace coolbench::device::detail {

/// NVML moves in 2 MiB steps on the H200 (docs/perf/release.md): the figure
/// used when the probe has not measured the step on this machine.
inline constexpr std::uint64_t default_granularity = std::uint64_t{2} << 20U;

struct foreign_inputs {
  int ordinal = 0;
  bool force = false;
  std::optional<std::uint64_t> process_bytes;  ///< NVML's figure for this process
  std::string nvml_unavailable;                ///< why process_bytes is empty
  bool context_by_coolbench = false;           ///< coolbench created the context
  /// NVML's figure right after coolbench created the context (its baseline then).
  std::optional<std::uint64_t> own_context_bytes;
  baseline_lookup bare;  ///< the bare context, for a context another runtime made
  std::string module_loading = "LAZY";
  std::uint64_t coolbench_bytes = 0;         ///< what coolbench's own leases added to NVML's figure
  std::optional<std::uint64_t> granularity;  ///< NVML's step, as the probe measured it
  std::vector<std::string> cuda_libraries;   ///< other CUDA users loaded in the process
};

enum class foreign_state {
  none,           ///< coolbench's context, nothing of anyone else's
  memory_live,    ///< device memory of another runtime (its pointers would dangle)
  context_state,  ///< another runtime's context with none of its memory: handles, streams
  unknown,        ///< NVML or the baseline cannot tell
};

[[nodiscard]] const char* to_string(foreign_state state) noexcept;

struct foreign_verdict {
  foreign_state state = foreign_state::unknown;
  bool refuse = false;
  std::optional<std::int64_t> foreign_bytes;
  std::optional<std::uint64_t> process_bytes;  ///< NVML's figure, as given
  std::uint64_t coolbench_bytes = 0;           ///< coolbench's share, as given
  std::optional<std::uint64_t> baseline_bytes;
  std::string baseline_source;
  std::uint64_t granularity = default_granularity;
  std::uint64_t threshold = default_granularity / 2;  ///< refused at this many foreign bytes
  std::string context_made_by;                        ///< "coolbench", "another runtime (…)"
  std::string check;                                  ///< what was seen, in one line
  std::string message;                                ///< the refusal, when refuse
  std::string dangling;  ///< what a reset leaves dangling; "" when nothing
};

[[nodiscard]] foreign_verdict check_foreign(const foreign_inputs& in);

}  // namespace coolbench::device::detail
