// What tests need of a prepared GEMM chain beyond the workload interface: its
// matrices, copied back to the host.
#pragma once

#include <vector>

#include "coolbench/measure/workload.hpp"

namespace coolbench::measure::detail {

enum class gemm_matrix : std::uint8_t { a, b, c };

/// Matrix A (MxK), B (KxN) or C (MxN) of a GEMM chain made by make_gemm_chain,
/// row-major, converted to float; prepares the chain first. Synchronizes its
/// stream. Throws invalid_argument when `chain` is not a GEMM chain.
[[nodiscard]] std::vector<float> read_gemm_matrix(workload& chain, gemm_matrix which);

}  // namespace coolbench::measure::detail
