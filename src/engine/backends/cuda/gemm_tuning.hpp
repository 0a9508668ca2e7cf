// The algorithm each product signature runs with. A new signature asks
// cuBLASLt's heuristic for its best k_candidates algorithms; with tuning on
// and the stream not being captured into a CUDA graph, each is timed on the
// real operands (CUDA events, an L2 flush before each timed launch so the
// weights come from memory as in a model's run, the median of
// k_repetitions) and the fastest is kept. Where the output has fewer tiles
// than the GPU has multiprocessors (batch-1 transformers: M = 128), the
// heuristic's first three that can split K are also timed split 2 to 16
// ways (gemm_choice.hpp, split_k_counts), as cuBLASLt accepts them. Otherwise (tuning off, a
// capture, or no device memory left for the flush and scratch blocks timing takes) the heuristic's
// first is taken, and a capture keeps it only for that launch, so the next eager run still tunes.
// Timing writes Y repeatedly: when that would change what the product reads (beta != 0 with C in Y,
// or Y overlapping an input) it writes a scratch block from the device layer instead.
//
// The skinny kernel (skinny_gemm.hpp, for M of 1 to 8) is one more candidate where
// COOLBENCH_GEMM_SKINNY=1 and skinny_fits: timed with cuBLASLt's, kept only where it measures
// faster (a tie goes to cuBLASLt); untimed paths (tuning off, a capture) keep the heuristic's
// first. COOLBENCH_GEMM_SKINNY=force takes it wherever it fits, untimed (tests, benchmarks).
// Unset (the default) it is never considered: it has yet to be timed on a GPU. The mode is
// part of the signature, so a process's kept choices of one mode do not answer for another.
//
// What is kept where: the descriptors and the timing events live in the
// backend's cuBLASLt state, which a device release drops with the handle.
// The timed choice itself (cuBLASLt's algorithm descriptor is plain data,
// valid for any handle on the same device and library) is kept per device
// for the process, so every session of a process and every run after a
// release computes a product with the same algorithm, to the same bytes,
// and no release makes the products time again.
#pragma once

#include <cublasLt.h>

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/backends/cuda/fused_blas.hpp"
#include "engine/backends/cuda/skinny_gemm.hpp"

namespace coolbench::engine::cuda {

/// Heuristic results asked for per signature.
inline constexpr int k_candidates = 16;
/// Timed launches per candidate, after k_warmups untimed ones.
inline constexpr int k_repetitions = 5;
inline constexpr int k_warmups = 2;

/// What decides which algorithms run a product and how fast they are.
struct gemm_key {
  int type = 0;
  bool trans_a = false, trans_b = false;
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_y = 0;
  std::int64_t lda = 0, ldb = 0, ldy = 0;
  int epilogue = 0;
  bool separate_c = false;  ///< C given apart from Y
  bool beta_zero = true;
  bool tf32 = false;
  std::uint32_t align_a = 0, align_b = 0, align_c = 0, align_y = 0, align_bias = 0;
  std::size_t workspace = 0;
  skinny_mode skinny = skinny_mode::off;  ///< COOLBENCH_GEMM_SKINNY when the entry was made
  auto operator<=>(const gemm_key&) const = default;
};

struct lt_desc_deleter {
  void operator()(cublasLtMatmulDesc_t d) const noexcept { cublasLtMatmulDescDestroy(d); }
};
struct lt_layout_deleter {
  void operator()(cublasLtMatrixLayout_t l) const noexcept { cublasLtMatrixLayoutDestroy(l); }
};
using lt_desc = std::unique_ptr<cublasLtMatmulDescOpaque_t, lt_desc_deleter>;
using lt_layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, lt_layout_deleter>;

/// One signature's descriptors (cuBLAS's column-major view: its A is our B)
/// and the algorithm chosen: cuBLASLt's, or the skinny kernel's plan; neither
/// when cuBLASLt has no algorithm for it.
struct gemm_entry {
  lt_desc desc;
  lt_layout la, lb, ly;                      ///< ly describes C and Y alike
  std::optional<cublasLtMatmulAlgo_t> algo;  ///< none: cuBLASLt has no algorithm, or skinny
  std::optional<skinny_plan> skinny;         ///< set: the skinny kernel runs the product
  /// The algorithm, its rank among the candidates and how it was chosen.
  std::string detail;
  [[nodiscard]] bool runnable() const noexcept { return algo.has_value() || skinny.has_value(); }
};

/// Every signature's entry, and the events timing reuses (made by the lease,
/// so a release destroys them with the rest of this state).
struct gemm_cache {
  std::map<gemm_key, std::unique_ptr<gemm_entry>> entries;
  std::vector<CUevent_st*> events;
};

/// The key of `p` as run_product launches it (ldb, ldy resolved).
[[nodiscard]] gemm_key key_of(const product& p, bool tf32, std::size_t workspace,
                              skinny_mode skinny = skinny_mode::off);

/// What the skinny kernel's plan reads of a key.
[[nodiscard]] skinny_problem skinny_problem_of(const gemm_key& key);

/// The skinny kernel's operands for `p` (ldb, ldy resolved as in `key`), writing `y`
/// and reading C from `c`.
[[nodiscard]] skinny_operands skinny_operands_of(const product& p, const gemm_key& key,
                                                 const void* c, void* y);

/// The entry for `p`: cached, or made now (descriptors, candidates, and the
/// choice, timed when `tune` and the stream is not capturing). A capture's
/// untimed choice is returned without being cached (`scratch` holds it).
[[nodiscard]] const gemm_entry& gemm_entry_for(const op_call& call, blas_state& blas,
                                               const product& p, bool tf32, bool tune,
                                               std::unique_ptr<gemm_entry>& scratch);

/// Sets the bias pointer of `entry`'s descriptor (one descriptor serves
/// every node of its signature).
void set_bias_pointer(const gemm_entry& entry, const void* bias);

}  // namespace coolbench::engine::cuda
