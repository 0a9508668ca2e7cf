// OpenBLAS, loaded when the CPU backend first multiplies matrices. Loading it
// ourselves lets coolbench correct one failure of OpenBLAS's CPU detection:
// Debian 12's OpenBLAS (0.3.21) does not know recent Xeons (Sapphire and
// Emerald Rapids) and falls back to its SSE3 "Prescott" kernels, about 4x
// slower than the AVX-512 ones those CPUs run (docs/perf/engine.md). OpenBLAS
// reads its override, OPENBLAS_CORETYPE, only when it loads.
#pragma once

#include <string>

namespace coolbench::engine::cpu {

struct blas_library {
  std::string path;       ///< the file loaded
  std::string core;       ///< OpenBLAS's kernel set in use ("SkylakeX", "Haswell", ...)
  std::string corrected;  ///< the fallback core detection chose, when coolbench overrode it
  int threads = 0;        ///< OpenBLAS's thread count
};

/// Loads OpenBLAS once (thread-safe) and describes it. When OPENBLAS_CORETYPE
/// is unset and OpenBLAS chose a pre-AVX2 core on a CPU with AVX2 and FMA, it
/// loads OpenBLAS again with OPENBLAS_CORETYPE set to SkylakeX (AVX-512) or
/// Haswell (AVX2) — an environment variable of the process, visible to code
/// that reads it later. Throws coolbench::error when OpenBLAS is missing.
const blas_library& blas();

/// Row-major C = alpha * op(A) * op(B) + beta * C (cblas_sgemm).
void blas_sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                int lda, const float* b, int ldb, float beta, float* c, int ldc);

}  // namespace coolbench::engine::cpu
