#include "engine/backends/cpu/matmul.hpp"

#include "engine/backends/cpu/blas.hpp"
#include "engine/backends/cpu/float_io.hpp"
#include "engine/backends/cpu/kernel_args.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace coolbench::engine::cpu {
namespace {

void require_same_type(const node& n, const tensor& a, const tensor& b, const char* what) {
  if (a.type() != b.type()) {
    throw invalid_argument(n.describe() + ": expected " + what + " of dtype " +
                           std::string(to_string(a.type())) + ", got " +
                           std::string(to_string(b.type())));
  }
}

/// BLAS takes int dimensions; a larger one would silently wrap.
int blas_dim(const node& n, std::int64_t value) {
  if (value > INT_MAX) {
    throw invalid_argument(n.describe() + ": expected matrix dimensions of at most " +
                           std::to_string(INT_MAX) + ", got " + std::to_string(value));
  }
  return static_cast<int>(value);
}

/// C = alpha * op(A) * op(B) + beta * C for row-major matrices, skipping BLAS
/// for empty matrices (sgemm rejects a leading dimension of 0).
void sgemm(const node& n, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n_cols,
           std::int64_t k, float alpha, const float* a, const float* b, float beta, float* c) {
  if (m == 0 || n_cols == 0) return;
  if (k == 0) {
    std::for_each(c, c + m * n_cols, [beta](float& v) { v = beta == 0.0F ? 0.0F : beta * v; });
    return;
  }
  const int lda = blas_dim(n, trans_a ? m : k);
  const int ldb = blas_dim(n, trans_b ? k : n_cols);
  blas_sgemm(trans_a, trans_b, blas_dim(n, m), blas_dim(n, n_cols), blas_dim(n, k), alpha, a, lda,
             b, ldb, beta, c, blas_dim(n, n_cols));
}

void run_matmul(const node& n, std::span<const tensor* const> inputs, std::span<tensor> outputs) {
  const tensor& a = require_input(n, inputs, 0, "A");
  const tensor& b = require_input(n, inputs, 1, "B");
  require_float(n, a, "A");
  require_same_type(n, a, b, "B");
  if (a.rank() == 0 || b.rank() == 0) {
    throw invalid_argument(n.describe() + ": expected inputs of rank >= 1, got shapes " +
                           to_string(a.shape()) + " and " + to_string(b.shape()));
  }
  // numpy promotes a 1-D A to a row and a 1-D B to a column, then drops the
  // added dimension from the result.
  shape_t a_shape = a.shape();
  shape_t b_shape = b.shape();
  if (a.rank() == 1) a_shape.insert(a_shape.begin(), 1);
  if (b.rank() == 1) b_shape.push_back(1);
  const std::int64_t m = a_shape[a_shape.size() - 2];
  const std::int64_t k = a_shape.back();
  const std::int64_t n_cols = b_shape.back();
  if (b_shape[b_shape.size() - 2] != k) {
    throw invalid_argument(n.describe() + ": expected A's last dimension (" + std::to_string(k) +
                           ") to equal B's " + (b.rank() == 1 ? "only" : "second-to-last") +
                           " dimension, got shapes " + to_string(a.shape()) + " and " +
                           to_string(b.shape()));
  }

  // Broadcast the batch dimensions, right-aligned.
  const std::size_t a_batch_rank = a_shape.size() - 2;
  const std::size_t b_batch_rank = b_shape.size() - 2;
  const std::size_t batch_rank = std::max(a_batch_rank, b_batch_rank);
  shape_t batch(batch_rank, 1);
  for (std::size_t i = 0; i < batch_rank; ++i) {
    const std::int64_t da =
        i + a_batch_rank >= batch_rank ? a_shape[i + a_batch_rank - batch_rank] : 1;
    const std::int64_t db =
        i + b_batch_rank >= batch_rank ? b_shape[i + b_batch_rank - batch_rank] : 1;
    if (da != db && da != 1 && db != 1) {
      throw invalid_argument(n.describe() +
                             ": expected broadcastable batch dimensions, got shapes " +
                             to_string(a.shape()) + " and " + to_string(b.shape()));
    }
    batch[i] = da == 1 ? db : da;
  }

  shape_t out_shape = batch;
  if (a.rank() != 1) out_shape.push_back(m);
  if (b.rank() != 1) out_shape.push_back(n_cols);
  const std::int64_t batch_count = element_count(batch);
  std::vector<float> result(static_cast<std::size_t>(element_count(out_shape)));

  // Element strides of each batch dimension in A and B; 0 where broadcast.
  std::vector<std::int64_t> a_stride(batch_rank, 0);
  std::vector<std::int64_t> b_stride(batch_rank, 0);
  std::int64_t a_step = m * k;
  std::int64_t b_step = k * n_cols;
  for (std::size_t i = batch_rank; i-- > 0;) {
    if (i + a_batch_rank >= batch_rank) {
      const std::int64_t d = a_shape[i + a_batch_rank - batch_rank];
      a_stride[i] = d == 1 ? 0 : a_step;
      a_step *= d;
    }
    if (i + b_batch_rank >= batch_rank) {
      const std::int64_t d = b_shape[i + b_batch_rank - batch_rank];
      b_stride[i] = d == 1 ? 0 : b_step;
      b_step *= d;
    }
  }

  const float_values av = read_floats(a);
  const float_values bv = read_floats(b);
  std::vector<std::int64_t> index(batch_rank, 0);
  for (std::int64_t item = 0; item < batch_count; ++item) {
    std::int64_t a_offset = 0;
    std::int64_t b_offset = 0;
    for (std::size_t i = 0; i < batch_rank; ++i) {
      a_offset += index[i] * a_stride[i];
      b_offset += index[i] * b_stride[i];
    }
    sgemm(n, false, false, m, n_cols, k, 1.0F, av.values.data() + a_offset,
          bv.values.data() + b_offset, 0.0F, result.data() + item * m * n_cols);
    for (std::size_t i = batch_rank; i-- > 0;) {
      if (++index[i] < batch[i]) break;
      index[i] = 0;
    }
  }
  outputs[0] = make_output(a.type(), std::move(out_shape), result);
}

void run_gemm(const node& n, std::span<const tensor* const> inputs, std::span<tensor> outputs) {
  const tensor& a = require_input(n, inputs, 0, "A");
  const tensor& b = require_input(n, inputs, 1, "B");
  const tensor* c = optional_input(inputs, 2);
  require_float(n, a, "A");
  require_same_type(n, a, b, "B");
  if (c != nullptr) require_same_type(n, a, *c, "C");
  if (a.rank() != 2 || b.rank() != 2) {
    throw invalid_argument(n.describe() + ": expected A and B of rank 2, got shapes " +
                           to_string(a.shape()) + " and " + to_string(b.shape()));
  }
  const bool trans_a = n.get<std::int64_t>("transA", 0) != 0;
  const bool trans_b = n.get<std::int64_t>("transB", 0) != 0;
  const float alpha = n.get<float>("alpha", 1.0F);
  const float beta = n.get<float>("beta", 1.0F);
  const std::int64_t m = a.shape()[trans_a ? 1 : 0];
  const std::int64_t k = a.shape()[trans_a ? 0 : 1];
  const std::int64_t kb = b.shape()[trans_b ? 1 : 0];
  const std::int64_t n_cols = b.shape()[trans_b ? 0 : 1];
  if (k != kb) {
    throw invalid_argument(n.describe() + ": expected op(A)'s columns (" + std::to_string(k) +
                           ") to equal op(B)'s rows, got " + std::to_string(kb) + " (shapes " +
                           to_string(a.shape()) + " and " + to_string(b.shape()) + ")");
  }

  std::vector<float> result(static_cast<std::size_t>(m * n_cols), 0.0F);
  float gemm_beta = 0.0F;
  if (c != nullptr) {
    // Unidirectional broadcast of C to [M, N]: right-aligned, each dimension
    // equal or 1. The product is then accumulated onto it.
    const shape_t& cs = c->shape();
    const std::array<std::int64_t, 2> target{m, n_cols};
    bool fits = cs.size() <= 2;
    std::array<std::int64_t, 2> c_dims{1, 1};
    for (std::size_t i = 0; fits && i < cs.size(); ++i) {
      const std::size_t t = 2 - cs.size() + i;
      c_dims[t] = cs[i];
      fits = cs[i] == 1 || cs[i] == target[t];
    }
    if (!fits) {
      throw invalid_argument(n.describe() + ": expected C broadcastable to [" + std::to_string(m) +
                             ", " + std::to_string(n_cols) + "], got " + to_string(cs));
    }
    const float_values cv = read_floats(*c);
    for (std::int64_t i = 0; beta != 0.0F && i < m; ++i) {
      for (std::int64_t j = 0; j < n_cols; ++j) {
        const std::int64_t ci = (c_dims[0] == 1 ? 0 : i) * c_dims[1] + (c_dims[1] == 1 ? 0 : j);
        result[i * n_cols + j] = cv.values[ci];
      }
    }
    gemm_beta = beta;
  }
  const float_values av = read_floats(a);
  const float_values bv = read_floats(b);
  sgemm(n, trans_a, trans_b, m, n_cols, k, alpha, av.values.data(), bv.values.data(), gemm_beta,
        result.data());
  outputs[0] = make_output(a.type(), shape_t{m, n_cols}, result);
}

constexpr std::array<kernel_entry, 2> k_kernels{{
    {"MatMul", run_matmul},
    {"Gemm", run_gemm},
}};

}  // namespace

std::span<const kernel_entry> matmul_kernels() { return k_kernels; }

}  // namespace coolbench::engine::cpu
