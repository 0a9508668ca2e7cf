// run_product: the chosen algorithm's launch (cuBLASLt's, or the skinny
// kernel's where gemm_tuning chose it), and a product whose Y rows break
// cuBLASLt's 16-byte alignment (the lm_head's N = 50257 in fp16) while A's
// and B's keep it. Two ways: where COOLBENCH_GEMM_ROW_PHASES asks for it and
// B is read as [N, K], in place, one product for each phase of rows that
// start alike within 16 bytes and a kernel for the columns at the rows' ends
// (gemm_choice.hpp, plan_row_phases); else into a scratch tensor of aligned
// rows (over all its columns where B is a zero-padded weight), then copied
// into Y by one 2-D copy (a memcpy node when captured).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdlib>
#include <string>

#include "core/cublas_check.hpp"
#include "core/cuda_check.hpp"
#include "engine/backends/cuda/gemm_choice.hpp"
#include "engine/backends/cuda/gemm_tuning.hpp"
#include "engine/backends/cuda/kernels.hpp"

namespace coolbench::engine::cuda {
namespace {

bool tf32_allowed(const product& p) {
  const char* tf32 = std::getenv("COOLBENCH_ALLOW_TF32");
  return p.type == dtype::float32 && tf32 != nullptr && std::string(tf32) == "1";
}

// Queues the product with its signature's algorithm; `note` is added to
// what the node records.
void launch(const op_call& call, const product& p, const std::string& note) {
  blas_state& blas = call.backend.blas();
  std::unique_ptr<gemm_entry> uncached;
  const gemm_entry& entry =
      gemm_entry_for(call, blas, p, tf32_allowed(p), call.backend.product_tuning(), uncached);
  call.backend.note_detail(entry.detail + note);
  if (!entry.runnable()) {
    if (p.no_algorithm != nullptr) {
      *p.no_algorithm = true;
      return;
    }
    call.fail("cuBLASLt has no algorithm for this product");
  }
  if (entry.skinny) {
    const gemm_key key = key_of(p, false, blas.workspace.size());  // its ldb and ldy
    launch_skinny(*entry.skinny, skinny_operands_of(p, key, p.c != nullptr ? p.c : p.y, p.y),
                  static_cast<float*>(blas.workspace.get()),
                  static_cast<unsigned*>(blas.skinny_counters.get()), call.stream);
    return;
  }
  set_bias_pointer(entry, p.bias);
  COOLBENCH_CUBLAS_CALL(
      cublasLtMatmul(static_cast<cublasLtHandle_t>(blas.handle), entry.desc.get(), &p.alpha, p.b,
                     entry.la.get(), p.a, entry.lb.get(), &p.beta, p.c != nullptr ? p.c : p.y,
                     entry.ly.get(), p.y, entry.ly.get(), &*entry.algo, blas.workspace.get(),
                     blas.workspace.size(), static_cast<cudaStream_t>(call.stream)));
}

void copy_rows(void* to, std::size_t to_pitch, const void* from, std::size_t from_pitch,
               std::size_t row_bytes, std::int64_t rows, void* stream) {
  COOLBENCH_CUDA_CALL(cudaMemcpy2DAsync(to, to_pitch, from, from_pitch, row_bytes,
                                        static_cast<std::size_t>(rows), cudaMemcpyDeviceToDevice,
                                        static_cast<cudaStream_t>(stream)));
}

const std::byte* at_element(const void* base, std::int64_t index, std::size_t element) {
  return static_cast<const std::byte*>(base) + static_cast<std::size_t>(index) * element;
}
std::byte* at_element(void* base, std::int64_t index, std::size_t element) {
  return static_cast<std::byte*>(base) + static_cast<std::size_t>(index) * element;
}

// Y written in place by row phases where the product takes them: B read as [N, K] (a column
// offset keeps its rows aligned), A dense and not transposed, no C, bias or activation (the
// edges' kernel computes alpha AB alone), dense batches over one B (flattened into rows), and
// 16-byte aligned addresses. False, queueing nothing, where it does not.
bool run_in_row_phases(const op_call& call, const product& p, std::int64_t ldb) {
  if (!p.trans_b || p.trans_a || p.lda != 0 || p.beta != 0.0F || p.bias != nullptr ||
      p.activation != blas_activation::none) {
    return false;
  }
  if (p.batch > 1 && (p.stride_b != 0 || p.stride_a != p.m * p.k || p.stride_y != p.m * p.n)) {
    return false;
  }
  if (address_alignment(p.a) < k_row_alignment || address_alignment(p.b) < k_row_alignment ||
      address_alignment(p.y) < k_row_alignment) {
    return false;
  }
  const std::size_t element = size_of(p.type);
  const std::int64_t rows = p.batch * p.m;
  const auto plan = plan_row_phases(rows, p.n, element);
  const row_phase_mode mode = row_phase_mode_from(std::getenv("COOLBENCH_GEMM_ROW_PHASES"));
  if (!plan || !row_phases_wanted(mode, rows, plan->phases)) return false;
  const std::string note = "; Y written in place in " + std::to_string(plan->phases) +
                           " row phases (a product each, rows " + std::to_string(plan->phases) +
                           " apart; the rows' edge columns by a kernel of their own)";
  for (const row_phase& part : plan->parts) {
    const row_phase_product where = phase_product(*plan, part, p.n, p.k, ldb);
    product phase = p;
    phase.batch = 1;
    phase.stride_a = phase.stride_b = phase.stride_y = 0;
    phase.m = where.rows;
    phase.n = where.columns;
    phase.a = at_element(p.a, where.a_offset, element);
    phase.lda = where.lda;
    phase.b = at_element(p.b, where.b_offset, element);
    phase.ldb = ldb;
    phase.b_columns_readable = 0;
    phase.y = at_element(p.y, where.y_offset, element);
    phase.ldy = where.ldy;
    phase.c = nullptr;
    launch(call, phase, note);
    if (p.no_algorithm != nullptr && *p.no_algorithm) return true;
  }
  launch_row_phase_edges(p.type, p.a, p.b, ldb, p.y, rows, p.n, p.k, p.alpha, call.stream);
  return true;
}

}  // namespace

bool cuda_backend::product_tuning() const noexcept {
  const char* env = std::getenv("COOLBENCH_GEMM_AUTOTUNE");
  return m_product_tuning && (env == nullptr || std::string(env) != "0");
}

void cuda_backend::note_detail(const std::string& detail) {
  if (m_running != nullptr) m_node_details.insert_or_assign(m_running->name, detail);
}

std::string cuda_backend::node_detail(const node& n) const {
  const auto it = m_node_details.find(n.name);
  return it == m_node_details.end() ? std::string() : it->second;
}

void cuda_backend::note_fallback(const std::string& why) {
  if (m_running == nullptr) return;
  if (why.empty()) {
    m_fallbacks.erase(m_running->name);
  } else {
    m_fallbacks.insert_or_assign(m_running->name, why);
  }
}

std::string cuda_backend::fallback(const node& n) const {
  const auto it = m_fallbacks.find(n.name);
  return it == m_fallbacks.end() ? std::string() : it->second;
}

void run_product(const op_call& call, const product& p) {
  if (p.m == 0 || p.n == 0 || p.batch == 0) return;
  const std::size_t element = size_of(p.type);
  const std::int64_t lda = p.lda != 0 ? p.lda : (p.trans_a ? p.m : p.k);
  const std::int64_t ldb = p.ldb != 0 ? p.ldb : (p.trans_b ? p.k : p.n);
  const std::int64_t ldy = p.ldy != 0 ? p.ldy : p.n;
  const std::int64_t padded =
      padded_output_columns(lda, ldb, ldy, p.n, p.m, p.batch, p.stride_y, element);
  if (padded == 0) return launch(call, p, {});
  if (run_in_row_phases(call, p, ldb)) return;
  // Every run allocates it the same way, so a planned run takes it from the arena.
  const tensor scratch = call.allocate(p.type, {p.batch, p.m, padded});
  const std::size_t row = static_cast<std::size_t>(p.n) * element;
  const std::size_t pitch = static_cast<std::size_t>(padded) * element;
  if (p.beta != 0.0F) {
    copy_rows(scratch.device_data(), pitch, p.c != nullptr ? p.c : p.y, row, row, p.batch * p.m,
              call.stream);
  }
  product aligned = p;
  aligned.y = scratch.device_data();
  aligned.c = nullptr;
  aligned.ldb = ldb;
  aligned.ldy = padded;
  aligned.stride_y = p.m * padded;
  aligned.n = computed_columns(p.n, padded, p.b_columns_readable, p.bias != nullptr);
  std::string note =
      "; Y's rows padded from " + std::to_string(p.n) + " to " + std::to_string(padded);
  if (aligned.n != p.n) note += ", all " + std::to_string(aligned.n) + " computed (B padded)";
  launch(call, aligned, note);
  if (p.no_algorithm != nullptr && *p.no_algorithm) return;
  copy_rows(p.y, row, scratch.device_data(), pitch, row, p.batch * p.m, call.stream);
}

}  // namespace coolbench::engine::cuda
