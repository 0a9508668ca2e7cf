// The CUDA backend's kernel launchers: plain host functions over device
// pointers, so that the host code (ops.cpp) needs no CUDA headers. Each
// launches on `stream` (a cudaStream_t) and checks the launch.
#pragma once

#include <cstddef>
#include <cstdint>

#include "coolbench/engine/tensor.hpp"
#include "engine/window_geometry.hpp"

namespace coolbench::engine::cuda {

inline constexpr int k_max_rank = 8;

/// An iteration space of `rank` dimensions and, per operand, the element
/// stride of each dimension (0 where the operand is broadcast along it).
/// Operands 0..2 are inputs, 3 the output.
struct index_plan {
  int rank = 0;
  std::int64_t count = 0;
  std::int64_t shape[k_max_rank] = {};
  std::int64_t stride[4][k_max_rank] = {};
  std::int64_t base[4] = {};  ///< element offset of each operand's first element
  bool contiguous = false;    ///< every operand is the output's shape, dense: offset = index
};

enum class unary_op : std::uint8_t {
  sqrt,
  reciprocal,
  exp,
  log,
  tanh,
  erf,
  sigmoid,
  gelu_erf,
  gelu_tanh,  // float
  neg,
  abs,
  relu,         // numeric
  logical_not,  // bool
  isnan,        // float -> bool
};

enum class binary_op : std::uint8_t {
  add,
  sub,
  mul,
  div,
  pow,
  min,
  max,  // numeric -> same
  equal,
  less,
  greater,
  less_equal,
  greater_equal,  // -> bool
  logical_and,
  logical_or,
  logical_xor,  // bool
};

void launch_unary(unary_op op, dtype type, const void* x, void* y, std::int64_t count,
                  void* stream);
/// y = op(a, b) over `plan` (operands 0 and 1; output 3). Pow's exponent may
/// have another dtype (b_type); every other op has a_type == b_type.
void launch_binary(binary_op op, dtype a_type, dtype b_type, const void* a, const void* b, void* y,
                   const index_plan& plan, void* stream);
/// y = cond ? a : b over `plan` (operands 0 cond, 1 a, 2 b).
void launch_where(dtype type, const void* cond, const void* a, const void* b, void* y,
                  const index_plan& plan, void* stream);
void launch_cast(dtype from, dtype to, const void* x, void* y, std::int64_t count, void* stream);
/// min(max(x, lo), hi), each bound only when given; the bounds in x's dtype
/// widened to double.
void launch_clip(dtype type, const void* x, void* y, std::int64_t count, bool has_lo, double lo,
                 bool has_hi, double hi, void* stream);

/// A Concat as one launch (launch_shapes.hpp, plan_concat): the output and
/// every part viewed as [outer, row] in `chunk`-byte pieces; part i's row of
/// part_chunks[i] pieces goes to the output row from piece part_begin[i].
inline constexpr int k_concat_parts = 8;
struct concat_launch {
  int chunk = 1;  ///< bytes a thread moves at once: 16, 8, 4, 2 or 1
  int parts = 0;
  std::int64_t outer = 0;
  std::int64_t row_chunks = 0;  ///< the output row, in pieces
  std::int64_t part_chunks[k_concat_parts] = {};
  std::int64_t part_begin[k_concat_parts] = {};
  std::int64_t count = 0;  ///< pieces in all: outer x row_chunks
};
/// out = the parts `from[0..parts)` side by side, as `l` says.
void launch_concat(const concat_launch& l, const void* const* from, void* out, void* stream);

/// out[plan's operand 3 offsets] = in[operand 0 offsets], `element` bytes
/// each (transpose, expand, slice, concat, split).
void launch_strided_copy(std::size_t element, const void* in, void* out, const index_plan& plan,
                         void* stream);
/// Gather along an axis: data viewed as [outer, axis, inner], indices
/// (int32 or int64, negative counted from the end). An index out of range
/// gives 0 and sets `error_flag` to `error_code` (cuda_backend::error_flag).
void launch_gather(std::size_t element, const void* data, const void* indices, bool indices_int64,
                   void* out, std::int64_t outer, std::int64_t axis_size, std::int64_t inner,
                   std::int64_t index_count, int* error_flag, int error_code, void* stream);
/// GatherElements over `plan` (the indices' shape; operand 0: data's strides
/// with 0 on the axis, operand 1: the indices, dense): the axis coordinate
/// from the index (negative counted from the end). An index outside
/// [-axis_size, axis_size) gives 0 and writes `error_code` to `error_flag`
/// (when none is set yet), for synchronize() to report.
void launch_gather_elements(std::size_t element, const void* data, const void* indices,
                            bool indices_int64, void* out, const index_plan& plan,
                            std::int64_t axis_stride, std::int64_t axis_size, int* error_flag,
                            int error_code, void* stream);
/// GatherND: data viewed as [batch, gathered dims (index_depth), slice];
/// indices as [batch, per_batch, index_depth] int64; out of range as Gather.
void launch_gather_nd(std::size_t element, const void* data, const std::int64_t* indices, void* out,
                      std::int64_t batch, std::int64_t per_batch, int index_depth,
                      const std::int64_t* gathered_dims, std::int64_t slice, int* error_flag,
                      int error_code, void* stream);
/// Fills `count` elements of `element` bytes with the bytes of `value`.
void launch_fill(std::size_t element, const void* value, void* out, std::int64_t count,
                 void* stream);
/// out[i] = start + i * delta in `type` (float32: in double, then rounded;
/// int32 and int64: modulo 2^64, from the integer start and delta).
void launch_range(dtype type, double start, double delta, std::int64_t int_start,
                  std::int64_t int_delta, void* out, std::int64_t count, void* stream);
/// Zeroes the elements outside the kept triangle of each [rows, cols] matrix.
void launch_trilu(std::size_t element, const void* in, void* out, std::int64_t matrices,
                  std::int64_t rows, std::int64_t cols, std::int64_t k, bool upper, void* stream);

enum class reduce_kind : std::uint8_t { sum, mean, max };
/// Reduces operand 0 of `plan` (the reduced dimensions, `reduced` elements
/// per output) for each of `outputs` outputs; `outer` gives each output's
/// first input element (operand 0 strides of the kept dimensions, in plan.stride[1]).
void launch_reduce(reduce_kind kind, dtype type, const void* x, void* y, std::int64_t outputs,
                   const index_plan& kept, const index_plan& reduced, void* stream);
/// Softmax (or log-softmax) along the middle of [outer, n, inner], in float32.
void launch_softmax(dtype type, bool log, const void* x, void* y, std::int64_t outer,
                    std::int64_t n, std::int64_t inner, void* stream);
/// LayerNormalization over the last `n` of each row; scale and bias have n
/// elements (bias may be null); mean and inv_std (float32, may be null).
void launch_layer_norm(dtype type, const void* x, const void* scale, const void* bias, void* y,
                       float* mean, float* inv_std, std::int64_t rows, std::int64_t n,
                       float epsilon, void* stream);
/// Running sums along the middle of [outer, n, inner].
void launch_cumsum(dtype type, const void* x, void* y, std::int64_t outer, std::int64_t n,
                   std::int64_t inner, bool exclusive, bool reverse, void* stream);

/// Conv (and its pools) over [N, C, the geometry's three spatial axes].
struct conv_plan {
  window_geometry geometry;
  std::int64_t batch = 0, channels = 0, maps = 0, group = 1;
  std::int64_t in_count = 0, out_count = 0, kernel_count = 0;  ///< per plane
};
/// y[N, M, out] = sum over the group's channels and the kernel taps of x * w,
/// plus bias[m] (may be null), accumulated in float32.
void launch_conv(dtype type, const void* x, const void* w, const void* bias, void* y,
                 const conv_plan& plan, void* stream);
/// The columns of `images` images of X ([images, C, in...], from the first image to unfold) for
/// Conv as a product: col[i][c * taps + tap][pos] at `pitch` elements a row, 0 where the tap
/// reads the padding (conv_gemm.hpp's im2col_source).
void launch_im2col(dtype type, const void* x, void* col, const conv_plan& plan, std::int64_t pitch,
                   std::int64_t images, void* stream);
/// MaxPool or AveragePool of each of the batch * channels planes.
void launch_pool(dtype type, bool max, bool count_include_pad, const void* x, void* y,
                 const conv_plan& plan, void* stream);
/// The mean or maximum of each of `planes` rows of `length` elements.
void launch_global_pool(dtype type, bool max, const void* x, void* y, std::int64_t planes,
                        std::int64_t length, void* stream);
/// y = (x - mean[c]) * scale[c] / sqrt(var[c] + epsilon) + bias[c] over
/// [outer, channels, inner]; the four parameters in float32.
void launch_batch_norm(dtype type, const void* x, const float* scale, const float* bias,
                       const float* mean, const float* var, void* y, std::int64_t count,
                       std::int64_t channels, std::int64_t inner, float epsilon, void* stream);

/// The edges of a product written in row phases (gemm_choice.hpp, plan_row_phases): in each of
/// Y's `m` rows (dense, `n` wide, 16-byte aligned) the columns before its first 16-byte step and
/// after its last whole one, Y[r, c] = alpha x sum over k of A[r, k] B[c, k]; A dense [m, k], B
/// [N, k] with rows `ldb` apart, both with 16-byte aligned rows and addresses. float32 sums.
void launch_row_phase_edges(dtype type, const void* a, const void* b, std::int64_t ldb, void* y,
                            std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                            void* stream);

}  // namespace coolbench::engine::cuda
