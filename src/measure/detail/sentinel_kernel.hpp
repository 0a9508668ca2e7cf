// The hidden-state sentinel's GPU work (docs/perf/hidden-state.md): dependent
// random reads from a small table through the L1 cache, which is as large as
// the SM's shared-memory carveout leaves it. After a kernel with a large
// shared-memory request the L1 of later kernels in the process can stay
// small, with every sensor nominal; the table then misses L1 and the
// sentinel slows down.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

struct CUstream_st;
struct CUevent_st;

namespace coolbench::measure::detail {

/// The table the sentinel reads, in bytes (fits the L1 of a clean SM, not the
/// ~28 KiB left beside a 200 KiB shared-memory carveout).
inline constexpr std::size_t sentinel_table_bytes = 64 * 1024;

/// Fills `table` (`bytes` of device memory, a multiple of 4) with a random
/// permutation-free walk: entry i holds the next index to read.
void fill_sentinel_table(std::uint32_t* table, std::size_t bytes, CUstream_st* stream);

/// Queues one sentinel pass on `stream`: one block per SM (`blocks`), each
/// thread chasing `steps` table entries; the sum lands in `sink` (blocks * 256
/// words) so nothing is optimised away.
void queue_sentinel(const std::uint32_t* table, std::size_t bytes, std::uint32_t* sink, int blocks,
                    int steps, CUstream_st* stream);

/// `runs` passes, each timed with the events around it (`events` holds at
/// least runs + 1), after `warmups` untimed ones; milliseconds per pass.
[[nodiscard]] std::vector<double> time_sentinel(const std::uint32_t* table, std::size_t bytes,
                                                std::uint32_t* sink, int blocks, int steps,
                                                int warmups, int runs, CUstream_st* stream,
                                                const std::vector<CUevent_st*>& events);

}  // namespace coolbench::measure::detail
