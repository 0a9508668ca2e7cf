// The benches' timing of a CUDA session's graph (attention_bench, skinny_gemm_bench): CUDA
// events around `runs` launches of the captured graph queued back to back, the fastest of 3
// rounds. The first session of a process read 24 us against 5.4 for the same attention in the
// next (GPT-2 b1 x 128 fp16, then bf16, on an H100, 2026-12-07), hence the rounds.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "coolbench/engine/session.hpp"

namespace coolbench::bench {

inline void check_cuda(cudaError_t status) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(status));
    std::exit(1);
  }
}

/// Milliseconds of `runs` graph launches of `s`, already run (recorded and captured), the
/// fastest of 3 rounds; says on stderr, naming `bench`, where the session runs node by node.
inline double fastest_replays_ms(coolbench::engine::session& s, int runs, const char* bench) {
  if (s.execution().mode != coolbench::engine::execution_mode::graph) {
    std::fprintf(stderr, "%s: the session runs node by node: %s\n", bench,
                 s.execution().reason.c_str());
  }
  const auto stream = static_cast<cudaStream_t>(s.stream());
  cudaEvent_t start = nullptr, stop = nullptr;
  check_cuda(cudaEventCreate(&start));
  check_cuda(cudaEventCreate(&stop));
  float best = 0;
  for (int round = 0; round < 3; ++round) {
    s.prepare();
    check_cuda(cudaEventRecord(start, stream));
    for (int i = 0; i < runs; ++i) s.launch();
    check_cuda(cudaEventRecord(stop, stream));
    s.synchronize();
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, start, stop));
    best = round == 0 ? ms : std::min(best, ms);
  }
  check_cuda(cudaEventDestroy(start));
  check_cuda(cudaEventDestroy(stop));
  return static_cast<double>(best);
}

}  // namespace coolbench::bench
