// The hidden-state sentinel on a real GPU (docs/measure.md, "Hidden state"). Two kinds:
// - gemm_chain (the default): GPT-2 small's 48 fp16 GEMMs at sequence 128 through cuBLASLt
//   (the gemm:fp16:gpt2-small workload) replayed as one CUDA graph, the kind of latency-bound
//   chain the state moves (on an H100 such a chain, replayed as a graph, ran 1.7-2.4 % faster
//   after a 200 KB shared-memory kernel or bf16 GEMMs, back after a touch:
//   docs/perf/hidden-state.md §8). A check is a rebuild (from the cache), an eager pass and a
//   capture, warm-up replays for at least 20 ms until two batches agree, and 20 timed ones;
//   with the lease's own NVML reads (when no other lease is held) about 30-45 ms (estimated;
//   not yet run on a GPU), plus the context's first cuBLASLt kernel loads after a release. Its
//   figure is also drawn per CUDA context (docs/perf/thermal.md), so a check is only comparable
//   with a calibration made in the same context (`context` below).
// - l1_walk: dependent loads through a 64 KiB table in L1 (sentinel_kernel.hpp), the first
//   candidate; it did not move on the H200 in any disturbance tried (§6).
// One check is the median of the timed passes after warming the GPU until the passes settle
// (an idle GPU runs its first passes at a low clock).
#pragma once

#include <cstdint>
#include <memory>

#include "coolbench/measure/hidden_state.hpp"
#include "coolbench/measure/options.hpp"

namespace coolbench::measure::detail {

class sentinel {
 public:
  /// Throws invalid_argument for sentinel_kind::none.
  sentinel(int ordinal, sentinel_kind kind);
  ~sentinel();
  sentinel(const sentinel&) = delete;
  sentinel& operator=(const sentinel&) = delete;

  /// One check, through a lease of its own (taken and dropped here, so a release is never
  /// refused on its account). The walk's memory and events are made once per context
  /// generation; the chain is rebuilt from the allocator's cache at each check. Throws
  /// cuda_error when the GPU refuses, not_available when cuBLASLt has no algorithm.
  [[nodiscard]] sentinel_reading check();
  /// check()'s median alone.
  [[nodiscard]] double check_ms() { return check().median_ms; }

 private:
  struct walk_resources;
  struct chain_resources;
  sentinel_reading check_walk();
  sentinel_reading check_chain();

  int m_ordinal;
  sentinel_kind m_kind;
  std::unique_ptr<walk_resources> m_walk;
  std::unique_ptr<chain_resources> m_chain;
};

}  // namespace coolbench::measure::detail
