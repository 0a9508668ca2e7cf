// The cuBLASLt product matmul.cpp runs, shared with the fused GEMM op: a
// row-major Y = epilogue(alpha op(A) op(B) + beta C + bias).
#pragma once

#include <cstdint>

#include "engine/backends/cuda/backend.hpp"
#include "engine/backends/cuda/kernels.hpp"

namespace coolbench::engine::cuda {

/// What cuBLASLt applies after the product and the bias (its epilogues):
/// nothing, Relu, or GELU in its tanh approximation.
enum class blas_activation : std::uint8_t { none, relu, gelu_tanh };

/// One row-major product Y[M,N] = alpha op(A)[M,K] op(B)[K,N] + beta C, over
/// `batch` matrices `stride_*` elements apart; C is Y unless given (then of
/// Y's layout). Rows are dense unless `ldb` / `ldy` say otherwise.
struct product {
  dtype type = dtype::float32;
  bool trans_a = false;
  bool trans_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  const void* b = nullptr;
  void* y = nullptr;
  float alpha = 1, beta = 0;
  std::int64_t batch = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_y = 0;
  /// Elements between A's rows when more than its dense row (a product over every P-th row of
  /// A, as the row phases take them); 0: dense.
  std::int64_t lda = 0;
  /// Elements between B's rows when more than its dense row (a weight padded
  /// to an aligned row length, FusedGemm's b_columns); 0: dense.
  std::int64_t ldb = 0;
  /// Columns of B (as op(B) is [K, N]) that may be read, from N up: a weight
  /// padded with zeros (FusedGemm's b_columns) lets a product whose N is not
  /// a whole number of 16-byte steps be computed with N rounded up into its
  /// padded scratch, which cuBLASLt runs about 3 times faster. 0: N.
  std::int64_t b_columns_readable = 0;
  /// Elements between Y's (and C's) rows; 0: dense (N).
  std::int64_t ldy = 0;
  const void* c = nullptr;     ///< nullptr: Y itself
  const void* bias = nullptr;  ///< N elements of Y's dtype added per column, or none
  blas_activation activation = blas_activation::none;
  /// When set, cuBLASLt having no algorithm (for an epilogue) sets it and
  /// queues nothing, instead of failing.
  bool* no_algorithm = nullptr;
};

/// Queues the product on the call's stream (fp32 accumulation, no TF32
/// unless COOLBENCH_ALLOW_TF32=1); fails naming the node when cuBLASLt has
/// no algorithm for it. A dense Y whose rows break 16-byte alignment (an odd
/// N in a 16-bit dtype) while A's and B's keep it is computed into a padded
/// scratch tensor (call.allocate: the arena in a planned run) and copied
/// into Y, so cuBLASLt's aligned kernels run. The algorithm is chosen once
/// per product signature (gemm_tuning.hpp) and kept with the handle.
void run_product(const op_call& call, const product& p);

/// Conv as products (conv_gemm.hpp): Y = bias, then per group and chunk of images the input's
/// columns and one batched product adding W x col to it. Returns false, queueing nothing, where
/// the direct kernel is the better choice (small groups) or COOLBENCH_CONV_KERNEL=direct asks
/// for it.
bool run_conv_as_gemm(const op_call& call, const tensor& x, const tensor& w, const tensor* bias,
                      const tensor& y, const conv_plan& plan);

}  // namespace coolbench::engine::cuda
