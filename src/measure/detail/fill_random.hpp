// Seeded random device data for the workloads: a counter-based hash of each
// element's index and the seed, mapped to uniform values in [-1, 1) and never
// exactly zero (zeros would make a GEMM draw less power than real data).
#pragma once

#include <cstddef>
#include <cstdint>

#include "coolbench/measure/workload.hpp"

struct CUstream_st;

namespace coolbench::measure::detail {

/// Fills `count` elements of `dtype` at `data` (device memory) on `stream`,
/// asynchronously. Throws cuda_error when the launch fails.
void fill_uniform(void* data, std::size_t count, gemm_dtype dtype, std::uint64_t seed,
                  CUstream_st* stream);

/// The value fill_uniform writes at `index` for `seed`, before rounding to
/// the element type (for host references in tests).
[[nodiscard]] float uniform_value(std::uint64_t index, std::uint64_t seed) noexcept;

}  // namespace coolbench::measure::detail
