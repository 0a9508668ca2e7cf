// MatMul and Gemm through cuBLASLt (run_product: gemm_product.cpp, the
// algorithm choice: gemm_tuning.cpp), float32 accumulation for every dtype
// and no TF32 unless COOLBENCH_ALLOW_TF32=1 asks for it. Row-major products
// are computed as their column-major transposes (Y^T = B^T A^T), so no copy
// is needed. The handle and workspace are adopted by the device layer: a
// release destroys them and the next product makes them again.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/cublas_check.hpp"
#include "core/cuda_check.hpp"
#include "engine/backends/cuda/backend.hpp"
#include "engine/backends/cuda/fused_blas.hpp"
#include "engine/backends/cuda/gemm_tuning.hpp"
#include "engine/backends/cuda/kernels.hpp"
#include "engine/backends/cuda/skinny_gemm.hpp"

namespace coolbench::engine::cuda {

// cuBLAS recommends 32 MiB of workspace on Hopper.
constexpr std::size_t k_workspace_bytes = std::size_t{32} << 20U;

blas_state& cuda_backend::blas() {
  if (m_blas && m_blas->valid()) return *m_blas;
  m_blas.reset();  // a release destroyed the handle: owner's destroy already ran
  auto state = std::make_unique<blas_state>();
  // The lease first: it makes this backend's GPU current in this thread (a worker of a
  // multi-GPU run may have another one current), so the handle is made on the right GPU and
  // inside the device layer's accounting.
  device::lease& held = lease();
  cublasLtHandle_t handle = nullptr;
  COOLBENCH_CUBLAS_CALL(cublasLtCreate(&handle));
  state->handle = handle;
  try {
    state->owner =
        held.adopt(device::resource_kind::blas_handle, [handle] { cublasLtDestroy(handle); });
  } catch (...) {
    cublasLtDestroy(handle);
    throw;
  }
  state->workspace = held.allocate(k_workspace_bytes);
  // Made before any capture (prepare_recording makes this state), so the
  // zeroing runs eagerly; the kernel's last block of a tile zeroes its counter again.
  const std::size_t counter_bytes = k_skinny_counters * sizeof(unsigned);
  state->skinny_counters = held.allocate(counter_bytes);
  COOLBENCH_CUDA_CALL(cudaMemsetAsync(state->skinny_counters.get(), 0, counter_bytes,
                                      static_cast<cudaStream_t>(held.stream())));
  state->gemms.reset(new gemm_cache());
  m_blas = std::move(state);
  return *m_blas;
}

cuda_backend::~cuda_backend() { release(); }

void cuda_backend::release() noexcept {
  m_blas.reset();
  m_error_flag = device::buffer();
  m_error_messages.clear();
  m_lease.reset();
}

namespace {

void require_float(const op_call& call, const tensor& t) {
  if (!is_float(t.type())) call.fail("unsupported dtype " + std::string(to_string(t.type())));
}

// Batch strides of an operand whose batch dims broadcast to `batch_shape`:
// the elements between consecutive matrices, 0 when it is one matrix, or
// nullopt when it repeats along some dims only (then one call per matrix).
std::optional<std::int64_t> batch_stride(const shape_t& batch, const shape_t& out_batch,
                                         std::int64_t matrix) {
  std::int64_t count = 1;
  for (const auto d : batch) count *= d;
  if (count == 1) return 0;
  shape_t padded(out_batch.size() - batch.size(), 1);
  padded.insert(padded.end(), batch.begin(), batch.end());
  return padded == out_batch ? std::optional<std::int64_t>(matrix) : std::nullopt;
}

void run_matmul(const op_call& call) {
  const tensor& a = call.in(0);
  const tensor& b = call.in(1);
  require_float(call, a);
  if (b.type() != a.type()) call.fail("expected A and B of one dtype");
  if (a.rank() == 0 || b.rank() == 0) call.fail("expected inputs of rank >= 1");
  shape_t as = a.shape();
  shape_t bs = b.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const std::int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  if (bs[bs.size() - 2] != k) {
    call.fail("inner dimensions differ: " + to_string(a.shape()) + " and " + to_string(b.shape()));
  }
  const shape_t a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  shape_t out_batch(std::max(a_batch.size(), b_batch.size()), 1);
  for (const shape_t* batch : {&a_batch, &b_batch}) {
    const std::size_t lead = out_batch.size() - batch->size();
    for (std::size_t d = 0; d < batch->size(); ++d) {
      std::int64_t& o = out_batch[lead + d];
      if ((*batch)[d] == o || (*batch)[d] == 1) continue;
      if (o != 1)
        call.fail("batch dimensions do not broadcast: " + to_string(a.shape()) + " and " +
                  to_string(b.shape()));
      o = (*batch)[d];
    }
  }
  shape_t out_shape = out_batch;
  if (a.rank() > 1) out_shape.push_back(m);
  if (b.rank() > 1) out_shape.push_back(n);
  tensor y = call.allocate(a.type(), out_shape);
  std::int64_t batch = 1;
  for (const auto d : out_batch) batch *= d;
  const auto element = static_cast<std::int64_t>(size_of(a.type()));
  product p{.type = a.type(),
            .m = m,
            .n = n,
            .k = k,
            .a = a.device_data(),
            .b = b.device_data(),
            .y = y.device_data(),
            .batch = batch,
            .stride_y = m * n};
  if (k == 0 && m * n * batch > 0) {  // nothing to sum: zeros
    const std::uint64_t zero = 0;
    launch_fill(static_cast<std::size_t>(element), &zero, y.device_data(), m * n * batch,
                call.stream);
  }
  const auto sa = batch_stride(a_batch, out_batch, m * k);
  const auto sb = batch_stride(b_batch, out_batch, k * n);
  if (sa && sb) {
    p.stride_a = *sa;
    p.stride_b = *sb;
    if (k > 0) run_product(call, p);
  } else if (k > 0) {
    // Broadcast along some batch dims only: one product per output matrix.
    p.batch = 1;
    for (std::int64_t i = 0; i < batch; ++i) {
      std::int64_t rest = i, ia = 0, ib = 0, sa_acc = 1, sb_acc = 1;
      for (std::size_t d = out_batch.size(); d-- > 0;) {
        const std::int64_t coordinate = rest % out_batch[d];
        rest /= out_batch[d];
        const std::size_t la = a_batch.size() + d - out_batch.size();
        const std::size_t lb = b_batch.size() + d - out_batch.size();
        if (d + a_batch.size() >= out_batch.size()) {
          if (a_batch[la] != 1) ia += coordinate * sa_acc;
          sa_acc *= a_batch[la];
        }
        if (d + b_batch.size() >= out_batch.size()) {
          if (b_batch[lb] != 1) ib += coordinate * sb_acc;
          sb_acc *= b_batch[lb];
        }
      }
      p.a = static_cast<const std::byte*>(a.device_data()) + ia * m * k * element;
      p.b = static_cast<const std::byte*>(b.device_data()) + ib * k * n * element;
      p.y = static_cast<std::byte*>(y.device_data()) + i * m * n * element;
      run_product(call, p);
    }
  }
  call.outputs[0] = std::move(y);
}

void run_gemm(const op_call& call) {
  const tensor& a = call.in(0);
  const tensor& b = call.in(1);
  require_float(call, a);
  if (b.type() != a.type()) call.fail("expected A and B of one dtype");
  if (a.rank() != 2 || b.rank() != 2) call.fail("expected 2-D A and B");
  const bool ta = call.n.get<std::int64_t>("transA", 0) != 0;
  const bool tb = call.n.get<std::int64_t>("transB", 0) != 0;
  const std::int64_t m = ta ? a.shape()[1] : a.shape()[0];
  const std::int64_t k = ta ? a.shape()[0] : a.shape()[1];
  const std::int64_t kb = tb ? b.shape()[1] : b.shape()[0];
  const std::int64_t n = tb ? b.shape()[0] : b.shape()[1];
  if (k != kb)
    call.fail("inner dimensions differ: " + to_string(a.shape()) + " and " + to_string(b.shape()));
  tensor y = call.allocate(a.type(), {m, n});
  const float alpha = call.n.get<float>("alpha", 1.0F);
  float beta = call.n.get<float>("beta", 1.0F);
  const tensor* c = call.optional_in(2);
  if (c != nullptr && c->type() != a.type()) call.fail("expected C of A's dtype");
  if (c != nullptr && m * n > 0) {
    // Y starts as C broadcast to [M, N]; the product adds to it.
    if (c->rank() > 2) call.fail("expected C of rank <= 2");
    index_plan plan;
    plan.rank = 2;
    plan.count = m * n;
    plan.shape[0] = m;
    plan.shape[1] = n;
    const shape_t& cs = c->shape();
    const std::int64_t c_rows = cs.size() == 2 ? cs[0] : 1;
    const std::int64_t c_cols = cs.empty() ? 1 : cs.back();
    if ((c_rows != 1 && c_rows != m) || (c_cols != 1 && c_cols != n)) {
      call.fail("C of shape " + to_string(cs) + " does not broadcast to [" + std::to_string(m) +
                ", " + std::to_string(n) + "]");
    }
    plan.stride[0][0] = c_rows == 1 ? 0 : c_cols;
    plan.stride[0][1] = c_cols == 1 ? 0 : 1;
    plan.stride[3][0] = n;
    plan.stride[3][1] = 1;
    launch_strided_copy(size_of(a.type()), c->device_data(), y.device_data(), plan, call.stream);
  } else {
    beta = 0;
  }
  if (k == 0 || alpha == 0.0F) {
    if (c == nullptr && m * n > 0) {
      const std::uint64_t zero = 0;
      launch_fill(size_of(a.type()), &zero, y.device_data(), m * n, call.stream);
    } else if (beta != 1.0F && m * n > 0) {
      call.fail("Gemm with an empty inner dimension and beta != 1 is not supported on CUDA");
    }
  } else {
    run_product(call, product{.type = a.type(),
                              .trans_a = ta,
                              .trans_b = tb,
                              .m = m,
                              .n = n,
                              .k = k,
                              .a = a.device_data(),
                              .b = b.device_data(),
                              .y = y.device_data(),
                              .alpha = alpha,
                              .beta = beta});
  }
  call.outputs[0] = std::move(y);
}

constexpr op_entry k_ops[] = {
    {"Gemm", run_gemm, type_rule::floats},
    {"MatMul", run_matmul, type_rule::floats},
};

}  // namespace

std::span<const op_entry> matmul_ops() { return k_ops; }

}  // namespace coolbench::engine::cuda
