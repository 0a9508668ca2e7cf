/// @file
/// The kinds of GPU resource the device layer owns, and the handles that
/// refer to them. A handle remembers the context generation it was made in;
/// after a release it is stale, and using it throws instead of touching a
/// freed pointer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace coolbench::device {

/// Every kind of resource the registry tracks, in the order a release
/// destroys them (users first, memory last).
enum class resource_kind : std::uint8_t {
  graph,             ///< CUDA graphs and graph executables
  blas_handle,       ///< cuBLAS / cuBLASLt handles
  cuda_module,       ///< loaded modules (cuModuleLoad*)
  event,             ///< CUDA events
  stream,            ///< CUDA streams
  kernel_attribute,  ///< per-kernel attributes, re-applied in each new context
  allocation,        ///< device memory (live and cached)
};
inline constexpr std::size_t resource_kind_count = 7;

[[nodiscard]] std::string_view to_string(resource_kind kind) noexcept;

/// Count per kind, indexed by resource_kind.
using resource_counts = std::array<std::uint64_t, resource_kind_count>;

/// Settable per-kernel attributes (cudaFuncAttribute values the library uses).
enum class kernel_attribute : std::uint8_t {
  max_dynamic_shared_memory_bytes,   ///< cudaFuncAttributeMaxDynamicSharedMemorySize
  preferred_shared_memory_carveout,  ///< cudaFuncAttributePreferredSharedMemoryCarveout (%)
};

}  // namespace coolbench::device
