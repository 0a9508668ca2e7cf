#include "engine/backends/cuda/gemm_tuning.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>

#include "coolbench/core/error.hpp"
#include "core/cublas_check.hpp"
#include "core/cuda_check.hpp"
#include "engine/backends/cuda/gemm_choice.hpp"

namespace coolbench::engine::cuda {

void gemm_cache_deleter::operator()(gemm_cache* cache) const noexcept { delete cache; }

namespace {

cudaDataType_t cuda_type(dtype type) {
  switch (type) {
    case dtype::float16: return CUDA_R_16F;
    case dtype::bfloat16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

cublasLtEpilogue_t epilogue_of(const product& p) {
  const bool bias = p.bias != nullptr;
  if (p.activation == blas_activation::relu) {
    return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  }
  if (p.activation == blas_activation::gelu_tanh) {
    return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  }
  return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

// A column-major rows x cols layout `ld` apart, `batch` of them `stride` apart.
lt_layout make_layout(cudaDataType_t type, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                      std::int64_t batch, std::int64_t stride) {
  cublasLtMatrixLayout_t made = nullptr;
  COOLBENCH_CUBLAS_CALL(cublasLtMatrixLayoutCreate(&made, type, static_cast<std::uint64_t>(rows),
                                                   static_cast<std::uint64_t>(cols), ld));
  lt_layout layout(made);
  const auto count = static_cast<std::int32_t>(batch);
  COOLBENCH_CUBLAS_CALL(cublasLtMatrixLayoutSetAttribute(made, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                         &count, sizeof count));
  COOLBENCH_CUBLAS_CALL(cublasLtMatrixLayoutSetAttribute(
      made, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  return layout;
}

// Descriptors of the column-major transpose Y^T[N,M] = op(B)^T op(A)^T: B's
// buffer is cuBLAS's A.
std::unique_ptr<gemm_entry> describe(const gemm_key& key, const product& p) {
  auto entry = std::make_unique<gemm_entry>();
  cublasLtMatmulDesc_t desc = nullptr;
  COOLBENCH_CUBLAS_CALL(cublasLtMatmulDescCreate(
      &desc, key.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F));
  entry->desc.reset(desc);
  const cublasOperation_t op_a = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  COOLBENCH_CUBLAS_CALL(
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a));
  COOLBENCH_CUBLAS_CALL(
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b));
  const auto epilogue = static_cast<cublasLtEpilogue_t>(key.epilogue);
  if (epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    COOLBENCH_CUBLAS_CALL(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                         &epilogue, sizeof epilogue));
  }
  const cudaDataType_t type = cuda_type(p.type);
  entry->la =
      make_layout(type, p.trans_b ? p.k : p.n, p.trans_b ? p.n : p.k, key.ldb, p.batch, p.stride_b);
  entry->lb =
      make_layout(type, p.trans_a ? p.m : p.k, p.trans_a ? p.k : p.m, key.lda, p.batch, p.stride_a);
  entry->ly = make_layout(type, p.n, p.m, key.ldy, p.batch, p.stride_y);
  return entry;
}

// An algorithm to time: one the heuristic offered (`split` 0), or a split-K
// variant of the heuristic's #`rank` made here.
struct candidate {
  cublasLtMatmulAlgo_t algo;
  int rank = 0;  // 1-based, among the heuristic's
  int split = 0;
};
using candidate_list = std::vector<candidate>;

int config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attribute) {
  std::uint32_t value = 0;  // the attributes read here are 32-bit
  std::size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attribute, &value, sizeof value, &written) !=
      CUBLAS_STATUS_SUCCESS) {
    return -1;
  }
  return static_cast<int>(value);
}

// The heuristic's first few that support split-K, each with every count of
// split_k_counts that cuBLASLt accepts for these descriptors within the
// workspace. The heuristic rarely offers splits for a small output (an M of
// 128), and its tiles then leave most multiprocessors idle.
void add_split_k_variants(cublasLtHandle_t handle, const gemm_key& key, const gemm_entry& entry,
                          int multiprocessors, candidate_list& candidates) {
  // Timing writes a scratch Y where C is Y (needs_scratch_target), so a
  // split there would run in the model as it was never timed: none.
  if (!key.beta_zero && !key.separate_c) return;
  const std::vector<int> counts = split_k_counts(key.m, key.n, key.k, key.batch, multiprocessors);
  if (counts.empty()) return;
  constexpr int k_split_bases = 3;  // heuristic candidates varied
  const std::size_t offered = candidates.size();
  int bases = 0;
  for (std::size_t i = 0; i < offered && bases < k_split_bases; ++i) {
    const cublasLtMatmulAlgo_t base = candidates[i].algo;
    std::int32_t supported = 0;
    std::uint32_t schemes = 0;
    std::size_t written = 0;
    if (config(base, CUBLASLT_ALGO_CONFIG_SPLITK_NUM) > 1 ||
        cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &supported,
                                          sizeof supported, &written) != CUBLAS_STATUS_SUCCESS ||
        supported == 0 ||
        cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &schemes,
                                          sizeof schemes, &written) != CUBLAS_STATUS_SUCCESS) {
      continue;
    }
    // Partial sums reduced in float32 in the workspace only: the other
    // schemes add them in the output's type, rounding a 16-bit product at
    // every step (the same for float32 output).
    std::uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_NONE;
    if ((schemes & CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE) != 0U) {
      scheme = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    } else if (key.type == static_cast<int>(dtype::float32) &&
               (schemes & CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE) != 0U) {
      scheme = CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE;
    }
    if (scheme == CUBLASLT_REDUCTION_SCHEME_NONE) continue;
    ++bases;
    for (const int count : counts) {
      cublasLtMatmulAlgo_t algo = base;
      const auto splits = static_cast<std::int32_t>(count);
      cublasLtMatmulHeuristicResult_t checked{};
      if (cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits,
                                               sizeof splits) != CUBLAS_STATUS_SUCCESS ||
          cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                                               &scheme, sizeof scheme) != CUBLAS_STATUS_SUCCESS ||
          cublasLtMatmulAlgoCheck(handle, entry.desc.get(), entry.la.get(), entry.lb.get(),
                                  entry.ly.get(), entry.ly.get(), &algo,
                                  &checked) != CUBLAS_STATUS_SUCCESS ||
          checked.workspaceSize > key.workspace) {
        continue;
      }
      candidates.push_back({algo, candidates[i].rank, count});
    }
  }
}

// The heuristic's candidates for the key's alignments that fit the workspace.
candidate_list find_candidates(cublasLtHandle_t handle, const gemm_key& key,
                               const gemm_entry& entry, int multiprocessors) {
  cublasLtMatmulPreference_t made = nullptr;
  COOLBENCH_CUBLAS_CALL(cublasLtMatmulPreferenceCreate(&made));
  const std::unique_ptr<cublasLtMatmulPreferenceOpaque_t,
                        cublasStatus_t (*)(cublasLtMatmulPreference_t)>
      preference(made, cublasLtMatmulPreferenceDestroy);
  const std::uint64_t workspace = key.workspace;
  COOLBENCH_CUBLAS_CALL(cublasLtMatmulPreferenceSetAttribute(
      made, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace));
  // cuBLAS's A is our B. Without these it assumes 256-byte aligned buffers.
  const std::pair<cublasLtMatmulPreferenceAttributes_t, std::uint32_t> alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_b},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_a},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_c},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_y}};
  for (const auto& [attribute, bytes] : alignments) {
    COOLBENCH_CUBLAS_CALL(
        cublasLtMatmulPreferenceSetAttribute(made, attribute, &bytes, sizeof bytes));
  }
  std::vector<cublasLtMatmulHeuristicResult_t> results(k_candidates);
  int found = 0;
  const cublasStatus_t asked = cublasLtMatmulAlgoGetHeuristic(
      handle, entry.desc.get(), entry.la.get(), entry.lb.get(), entry.ly.get(), entry.ly.get(),
      made, k_candidates, results.data(), &found);
  // Where cuBLASLt has no algorithm for the layouts, alignments and epilogue
  // it answers NOT_SUPPORTED rather than none found: no candidates, so the
  // caller's fallback (the epilogue as a program) applies instead of a throw.
  if (asked == CUBLAS_STATUS_NOT_SUPPORTED) return {};
  COOLBENCH_CUBLAS_CALL(asked);
  results.resize(static_cast<std::size_t>(std::max(found, 0)));
  candidate_list candidates;
  for (int i = 0; i < found; ++i) {
    const auto& r = results[static_cast<std::size_t>(i)];
    if (r.state == CUBLAS_STATUS_SUCCESS && r.workspaceSize <= key.workspace) {
      candidates.push_back({r.algo, i + 1, 0});
    }
  }
  add_split_k_variants(handle, key, entry, multiprocessors, candidates);
  return candidates;
}

std::string describe_algo(const cublasLtMatmulAlgo_t& algo) {
  return "cuBLASLt algo " + std::to_string(config(algo, CUBLASLT_ALGO_CONFIG_ID)) + " tile " +
         std::to_string(config(algo, CUBLASLT_ALGO_CONFIG_TILE_ID)) + " stages " +
         std::to_string(config(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID)) + " split-K " +
         std::to_string(config(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM)) + " swizzle " +
         std::to_string(config(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING));
}

std::string microseconds(const std::vector<double>& samples_ms) {
  if (samples_ms.empty()) return "not run";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f us", 1000.0 * median_of(samples_ms));
  return text;
}

// What one timed launch needs besides the algorithm.
struct launch_args {
  cublasLtHandle_t handle;
  const gemm_entry& entry;
  const product& p;
  const gemm_key& key;
  const void* c;
  void* d;
  void* workspace;
  std::size_t workspace_bytes;
  cudaStream_t stream;
  cublasStatus_t operator()(const cublasLtMatmulAlgo_t& algo) const {
    return cublasLtMatmul(handle, entry.desc.get(), &p.alpha, p.b, entry.la.get(), p.a,
                          entry.lb.get(), &p.beta, c, entry.ly.get(), d, entry.ly.get(), &algo,
                          workspace, workspace_bytes, stream);
  }
};

// `bytes` of device memory for timing, or none where the device is out of
// memory: timing is worth no failed run, so the product goes untimed then.
std::optional<device::buffer> timing_memory(cuda_backend& backend, std::size_t bytes) {
  try {
    return backend.lease().allocate(bytes);
  } catch (const ::coolbench::cuda_error& e) {
    if (e.code() != 2 /* cudaErrorMemoryAllocation */) throw;
    return std::nullopt;
  }
}

// Each candidate's timed launches (ms); empty for one whose launch failed.
// Writing `flush` evicts the L2 cache before each timed launch. The
// candidates are cuBLASLt's, then the skinny kernel's plan where given.
std::vector<std::vector<double>> time_candidates(cuda_backend& backend, blas_state& blas,
                                                 const launch_args& launch,
                                                 const candidate_list& candidates,
                                                 const skinny_plan* skinny,
                                                 const device::buffer& flush) {
  gemm_cache& cache = *blas.gemms;
  const std::size_t count = candidates.size() + (skinny != nullptr ? 1 : 0);
  const std::size_t flush_bytes = flush.size();
  const std::size_t needed = count * 2 * k_repetitions;
  while (cache.events.size() < needed) cache.events.push_back(backend.lease().create_event());
  const auto run = [&](std::size_t c) {
    if (c < candidates.size()) return launch(candidates[c].algo) == CUBLAS_STATUS_SUCCESS;
    try {
      launch_skinny(*skinny, skinny_operands_of(launch.p, launch.key, launch.c, launch.d),
                    static_cast<float*>(launch.workspace),
                    static_cast<unsigned*>(blas.skinny_counters.get()), launch.stream);
      return true;
    } catch (const ::coolbench::cuda_error&) {  // a launch refused: not a candidate
      return false;
    }
  };
  std::vector<bool> ran(count, true);
  for (std::size_t c = 0; c < count; ++c) {
    for (int w = 0; w < k_warmups && ran[c]; ++w) ran[c] = run(c);
    for (int r = 0; r < k_repetitions && ran[c]; ++r) {
      // The weights come from memory in a model's run: evict them first.
      COOLBENCH_CUDA_CALL(cudaMemsetAsync(flush.get(), r, flush_bytes, launch.stream));
      auto* const start = static_cast<cudaEvent_t>(cache.events[(c * k_repetitions + r) * 2]);
      auto* const stop = static_cast<cudaEvent_t>(cache.events[(c * k_repetitions + r) * 2 + 1]);
      COOLBENCH_CUDA_CALL(cudaEventRecord(start, launch.stream));
      ran[c] = run(c);
      COOLBENCH_CUDA_CALL(cudaEventRecord(stop, launch.stream));
    }
  }
  COOLBENCH_CUDA_CALL(cudaStreamSynchronize(launch.stream));
  std::vector<std::vector<double>> samples(count);
  for (std::size_t c = 0; c < count; ++c) {
    for (int r = 0; r < k_repetitions && ran[c]; ++r) {
      float ms = 0.0F;
      COOLBENCH_CUDA_CALL(cudaEventElapsedTime(
          &ms, static_cast<cudaEvent_t>(cache.events[(c * k_repetitions + r) * 2]),
          static_cast<cudaEvent_t>(cache.events[(c * k_repetitions + r) * 2 + 1])));
      samples[c].push_back(static_cast<double>(ms));
    }
  }
  return samples;
}

// Whether timing must write a scratch block rather than Y: repeating the
// product into Y would change what it reads.
bool needs_scratch_target(const product& p, const gemm_key& key) {
  const std::size_t element = size_of(p.type);
  if (p.beta != 0.0F && (p.c == nullptr || p.c == p.y)) return true;
  const byte_range y = matrix_bytes(p.y, p.m, p.n, key.ldy, p.batch, p.stride_y, element);
  const byte_range a = matrix_bytes(p.a, p.trans_a ? p.k : p.m, p.trans_a ? p.m : p.k, key.lda,
                                    p.batch, p.stride_a, element);
  const byte_range b = matrix_bytes(p.b, p.trans_b ? p.n : p.k, p.trans_b ? p.k : p.n, key.ldb,
                                    p.batch, p.stride_b, element);
  const byte_range c = matrix_bytes(p.c, p.m, p.n, key.ldy, p.batch, p.stride_y, element);
  const byte_range bias = matrix_bytes(p.bias, 1, p.n, p.n, 1, 0, element);
  return overlaps(y, a) || overlaps(y, b) || overlaps(y, c) || overlaps(y, bias);
}

std::string describe_skinny(const skinny_plan& plan) {
  return "skinny kernel, " + std::to_string(plan.tiles) + " x " + std::to_string(plan.splits) +
         " blocks, split K " + std::to_string(plan.splits) + " (" + std::to_string(plan.depth) +
         " deep)";
}

// Times the candidates (and the skinny kernel's plan where given) and chooses
// the fastest; says what it found. False, with `entry` unchanged, where the
// device has no memory for the timing.
bool tune(const op_call& call, blas_state& blas, const product& p, const gemm_key& key,
          gemm_entry& entry, const candidate_list& candidates, const skinny_plan* skinny) {
  auto* const stream = static_cast<cudaStream_t>(call.stream);
  int l2_bytes = 0;
  COOLBENCH_CUDA_CALL(
      cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, call.backend.lease().ordinal()));
  const auto flush = timing_memory(call.backend, static_cast<std::size_t>(std::max(l2_bytes, 1)));
  if (!flush) return false;
  std::optional<device::buffer> target;
  if (needs_scratch_target(p, key)) {
    const std::size_t bytes =
        static_cast<std::size_t>((p.batch - 1) * p.stride_y + (p.m - 1) * key.ldy + p.n) *
        size_of(p.type);
    target = timing_memory(call.backend, bytes);
    if (!target) return false;
  }
  const launch_args launch{static_cast<cublasLtHandle_t>(blas.handle),
                           entry,
                           p,
                           key,
                           p.c != nullptr ? p.c : p.y,
                           target ? target->get() : p.y,
                           blas.workspace.get(),
                           key.workspace,
                           stream};
  set_bias_pointer(entry, p.bias);
  const auto samples = time_candidates(call.backend, blas, launch, candidates, skinny, *flush);
  const auto best = fastest_candidate(samples);
  if (!best) {
    call.fail("no cuBLASLt algorithm of the " + std::to_string(candidates.size()) +
              " timed (the heuristic's and their split-K variants) could be launched");
  }
  const auto offered = static_cast<std::size_t>(std::count_if(
      candidates.begin(), candidates.end(), [](const candidate& c) { return c.split == 0; }));
  const std::string tally = std::to_string(offered) + " offered, " +
                            std::to_string(candidates.size() - offered) + " split-K variants";
  if (*best == candidates.size()) {  // the skinny kernel
    const auto cublas = fastest_candidate(std::span(samples).first(candidates.size()));
    entry.algo.reset();
    entry.skinny = *skinny;
    entry.detail = describe_skinny(*skinny) + " (timed: " + microseconds(samples[*best]) +
                   "; cuBLASLt's fastest of " + tally + " " +
                   (cublas ? microseconds(samples[*cublas]) : std::string("none ran")) +
                   ", the heuristic's first " + microseconds(samples[0]) + ")";
    return true;
  }
  const candidate& chosen = candidates[*best];
  const std::string which = chosen.split == 0
                                ? "the heuristic's #" + std::to_string(chosen.rank)
                                : "the heuristic's #" + std::to_string(chosen.rank) + " split " +
                                      std::to_string(chosen.split) + " ways here";
  entry.algo = chosen.algo;
  entry.skinny.reset();
  entry.detail =
      describe_algo(*entry.algo) + " (timed: " + which + "; " + tally + "; " +
      microseconds(samples[*best]) + ", the heuristic's first " + microseconds(samples[0]) +
      (skinny != nullptr ? ", the skinny kernel " + microseconds(samples.back()) : "") + ")";
  return true;
}

// The timed choices of this process, per device and signature.
struct kept_choice {
  std::optional<cublasLtMatmulAlgo_t> algo;
  std::optional<skinny_plan> skinny;
  std::string detail;
};
std::mutex g_choices_mutex;
std::map<std::pair<int, gemm_key>, kept_choice> g_choices;

std::optional<kept_choice> find_kept(int device, const gemm_key& key) {
  const std::lock_guard lock(g_choices_mutex);
  const auto it = g_choices.find({device, key});
  return it == g_choices.end() ? std::nullopt : std::optional<kept_choice>(it->second);
}

void keep(int device, const gemm_key& key, const gemm_entry& entry) {
  const std::lock_guard lock(g_choices_mutex);
  g_choices.insert_or_assign({device, key}, kept_choice{entry.algo, entry.skinny, entry.detail});
}

bool capturing(void* stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  COOLBENCH_CUDA_CALL(cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &status));
  return status != cudaStreamCaptureStatusNone;
}

}  // namespace

gemm_key key_of(const product& p, bool tf32, std::size_t workspace, skinny_mode skinny) {
  gemm_key key;
  key.type = static_cast<int>(p.type);
  key.trans_a = p.trans_a;
  key.trans_b = p.trans_b;
  key.m = p.m;
  key.n = p.n;
  key.k = p.k;
  key.batch = p.batch;
  key.stride_a = p.stride_a;
  key.stride_b = p.stride_b;
  key.stride_y = p.stride_y;
  key.lda = p.lda != 0 ? p.lda : (p.trans_a ? p.m : p.k);
  key.ldb = p.ldb != 0 ? p.ldb : (p.trans_b ? p.k : p.n);
  key.ldy = p.ldy != 0 ? p.ldy : p.n;
  key.epilogue = static_cast<int>(epilogue_of(p));
  key.separate_c = p.c != nullptr && p.c != p.y;
  key.beta_zero = p.beta == 0.0F;
  key.tf32 = tf32;
  key.align_a = address_alignment(p.a);
  key.align_b = address_alignment(p.b);
  key.align_y = address_alignment(p.y);
  key.align_c = p.c != nullptr ? address_alignment(p.c) : key.align_y;
  key.align_bias = p.bias != nullptr ? address_alignment(p.bias) : 0;
  key.workspace = workspace;
  key.skinny = skinny;
  return key;
}

skinny_problem skinny_problem_of(const gemm_key& key) {
  return skinny_problem{.type = static_cast<dtype>(key.type),
                        .trans_a = key.trans_a,
                        .trans_b = key.trans_b,
                        .m = key.m,
                        .n = key.n,
                        .k = key.k,
                        .batch = key.batch,
                        .lda = key.lda,
                        .ldb = key.ldb,
                        .align_b = key.align_b,
                        .workspace = key.workspace};
}

skinny_operands skinny_operands_of(const product& p, const gemm_key& key, const void* c, void* y) {
  // blas_activation's values are the kernel's activation codes.
  static_assert(static_cast<int>(blas_activation::none) == 0 &&
                static_cast<int>(blas_activation::relu) == 1 &&
                static_cast<int>(blas_activation::gelu_tanh) == 2);
  return skinny_operands{.type = p.type,
                         .m = p.m,
                         .n = p.n,
                         .k = p.k,
                         .ldb = key.ldb,
                         .ldy = key.ldy,
                         .x = p.a,
                         .w = p.b,
                         .y = y,
                         .c = c,
                         .bias = p.bias,
                         .alpha = p.alpha,
                         .beta = p.beta,
                         .activation = static_cast<int>(p.activation)};
}

void set_bias_pointer(const gemm_entry& entry, const void* bias) {
  if (bias == nullptr) return;
  COOLBENCH_CUBLAS_CALL(cublasLtMatmulDescSetAttribute(
      entry.desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
}

const gemm_entry& gemm_entry_for(const op_call& call, blas_state& blas, const product& p, bool tf32,
                                 bool tune_it, std::unique_ptr<gemm_entry>& scratch) {
  if (!blas.gemms) blas.gemms.reset(new gemm_cache());
  const skinny_mode mode = skinny_mode_from(std::getenv("COOLBENCH_GEMM_SKINNY"));
  const gemm_key key = key_of(p, tf32, blas.workspace.size(), mode);
  if (const auto it = blas.gemms->entries.find(key); it != blas.gemms->entries.end()) {
    return *it->second;
  }
  std::unique_ptr<gemm_entry> entry = describe(key, p);
  const int device = call.backend.lease().ordinal();
  int sms = 0;
  COOLBENCH_CUDA_CALL(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::optional<skinny_plan> skinny =
      mode == skinny_mode::off ? std::nullopt : plan_skinny(skinny_problem_of(key), sms);
  if (mode == skinny_mode::forced && skinny) {
    entry->skinny = skinny;
    entry->detail = describe_skinny(*skinny) + " (forced: COOLBENCH_GEMM_SKINNY=force)";
    return *blas.gemms->entries.emplace(key, std::move(entry)).first->second;
  }
  if (const auto kept = tune_it ? find_kept(device, key) : std::nullopt) {
    entry->algo = kept->algo;  // timed before: in another session, or before a release
    entry->skinny = kept->skinny;
    entry->detail = kept->detail;
    return *blas.gemms->entries.emplace(key, std::move(entry)).first->second;
  }
  const bool recording = capturing(call.stream);
  // Split-K variants only where they will be timed: untimed, the
  // heuristic's first is taken.
  const int multiprocessors = tune_it && !recording ? sms : 0;
  const candidate_list candidates =
      find_candidates(static_cast<cublasLtHandle_t>(blas.handle), key, *entry, multiprocessors);
  // The skinny kernel beside cuBLASLt's candidates, never in their place: where
  // cuBLASLt has none (an epilogue it lacks) the caller's fallback applies as before.
  const skinny_plan* skinny_candidate =
      mode == skinny_mode::timed && skinny && !candidates.empty() ? &*skinny : nullptr;
  const std::size_t timeable = candidates.size() + (skinny_candidate != nullptr ? 1 : 0);
  const bool timed = tune_it && !recording && timeable > 1;
  if (candidates.empty()) {
    entry->detail = "cuBLASLt has no algorithm";
  } else if (timed && tune(call, blas, p, key, *entry, candidates, skinny_candidate)) {
    keep(device, key, *entry);
  } else {
    entry->algo = candidates.front().algo;
    const char* why = !tune_it       ? "gemm_autotune off"
                      : recording    ? "not timed: the stream was being captured"
                      : timeable > 1 ? "not timed: no device memory left for timing"
                                     : "the only candidate";
    entry->detail = describe_algo(*entry->algo) + " (the heuristic's first of " +
                    std::to_string(candidates.size()) + "; " + why + ")";
  }
  if (recording && tune_it && timeable > 1) {
    scratch = std::move(entry);  // the next uncaptured run times this signature
    return *scratch;
  }
  return *blas.gemms->entries.emplace(key, std::move(entry)).first->second;
}

}  // namespace coolbench::engine::cuda
