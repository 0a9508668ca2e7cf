// What tests need of a GEMM chain beyond the workload interface: its matrices,
// copied back to the host, and its stream hold (detail/stream_hold.hpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "coolbench/measure/workload.hpp"

namespace coolbench::measure::detail {

enum class gemm_matrix : std::uint8_t { a, b, c };

/// Matrix A (MxK), B (KxN) or C (MxN) of shape `shape` (0-based) of a GEMM
/// chain made by make_gemm_chain, row-major, converted to float; prepares the
/// chain first. Synchronizes its stream. Throws invalid_argument when `chain`
/// is not a GEMM chain or has no such shape.
[[nodiscard]] std::vector<float> read_gemm_matrix(workload& chain, gemm_matrix which,
                                                  std::size_t shape = 0);

struct hold_state {
  std::uint64_t hold_ns = 0;      ///< how long the next run() holds its stream
  std::uint64_t short_holds = 0;  ///< samples redone because the hold ended too early
};
/// The chain's current hold. Throws invalid_argument when `chain` is not a GEMM chain.
[[nodiscard]] hold_state gemm_chain_hold(const workload& chain);
/// Makes the host sleep `gap` before each matmul launch, as a slow or busy
/// host would. Throws invalid_argument when `chain` is not a GEMM chain.
void set_launch_gap(workload& chain, std::chrono::nanoseconds gap);

/// `runs` back-to-back replays of the whole chain as one CUDA graph (captured at the first call
/// after each prepare(), owned by the lease so a release destroys it), each timed between two
/// events, in ms; prepares the chain first. No hold is needed: one launch a replay keeps the
/// host ahead of the GPU. The hidden-state sentinel's figure (sentinel.hpp). Throws
/// invalid_argument when `chain` is not a GEMM chain.
[[nodiscard]] std::vector<double> replay_gemm_chain_graph(workload& chain, int runs);

}  // namespace coolbench::measure::detail
