// Where a context's level comes from (issue "Honest uncertainty" §1; docs/perf/ci.md, "The
// lottery"). A latency-bound GEMM chain's figure is drawn when its CUDA context is made:
// discrete levels up to 3 % apart, kept for the context's life, not re-drawn by new memory
// (docs/perf/thermal.md). In each of N fresh contexts this program measures the chain as the
// protocol does (the level) beside probes that each isolate one candidate cause:
//   chain as a graph  the same chain replayed as one CUDA graph (the hidden-state sentinel's form);
//   gemm S    each of the chain's four GEMM shapes alone (cuBLASLt, the same heuristic), and
//             which algorithm cuBLASLt chose in this context (id, tile, split-K, stages, ...);
//   fma       a clock-bound kernel, no memory: one block per SM of dependent FMAs;
//   l2 walk   one warp's dependent loads through 8 MiB (L2-resident): L2 latency;
//   hbm walk  the same through 512 MiB: DRAM latency;
//   copy      a 512 MiB device-to-device copy: bandwidth;
//   placement which SM each block of the first wave ran on (1024-thread blocks that stay
//             a few microseconds; a hash per launch; whether three launches agree).
// Every timing is GPU time between CUDA events with the stream held until the work is queued,
// the median of the runs. Then, per probe, its spread over the contexts and its correlation
// with the chain's level: a probe that follows the level names the part of the GPU the level
// lives in, one that does not rules it out.
//   lottery [--contexts N] [--runs R] [--device D] [--json PATH]
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "coolbench/core/error.hpp"
#include "coolbench/device.hpp"
#include "coolbench/measure.hpp"
#include "coolbench/stats.hpp"
#include "coolbench/telemetry.hpp"
#include "core/cublas_check.hpp"
#include "core/cuda_check.hpp"
#include "measure/detail/fill_random.hpp"
#include "measure/detail/gemm_chain.hpp"
#include "measure/detail/stream_hold.hpp"

namespace {

namespace dev = coolbench::device;
namespace md = coolbench::measure::detail;

constexpr std::size_t workspace_bytes = std::size_t{32} << 20U;
constexpr std::uint64_t hold_ns = 50'000'000;  // 50 ms: every probe's launches queue within it
constexpr int warmups = 20;
constexpr int short_per_event = 10;  // launches per event pair for the few-microsecond probes
// Launches a held probe may queue: a stream takes about a thousand before the host blocks until
// the GPU drains some, which outlasts any hold (all 3000 of a 300-run probe did, on the H200
// on 2026-12-06: their figures held the host's gaps). The short probes take fewer runs.
constexpr int max_held_launches = 800;
/// Runs of a short probe whose call launches up to `kernels` kernels (a split-K product: 2).
int short_runs(int runs, int kernels) {
  return std::max(10, std::min(runs, max_held_launches / (short_per_event * kernels)));
}

struct shape {
  int m, n, k;
};
// GPT-2 small at sequence 128 (gemm:fp16:gpt2-small's shapes).
constexpr shape gpt2_shapes[] = {
    {128, 2304, 768}, {128, 768, 768}, {128, 3072, 768}, {128, 768, 3072}};

// Dependent FMAs: the time is clock cycles and nothing else.
__global__ void fma_kernel(float* sink, int steps) {
  float a = 1.0f + threadIdx.x * 1e-7f, b = 0.999999f, c = 1e-7f;
  for (int i = 0; i < steps; ++i) a = fmaf(a, b, c);
  if (a == 12345.0f) sink[blockIdx.x] = a;  // never true; keeps the loop
}

// An odd multiplier modulo a power of two is a bijection: every entry is on a walk.
__global__ void fill_walk(std::uint32_t* table, std::uint32_t entries) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < entries;
       i += stride) {
    table[i] = static_cast<std::uint32_t>((i * 2654435761ULL + 40503ULL) & (entries - 1));
  }
}

// One warp's dependent loads, 32 lanes on 32 walks: the time is the latency of wherever the
// table lives (L2 or DRAM; .cg skips L1). Each lane goes on from where the previous launch
// left it (`position`), so a walk through a table larger than L2 never revisits a line: a
// walk restarted from the same entries would run in L2 after its first launch.
__global__ void walk_kernel(const std::uint32_t* table, std::uint32_t* position, int steps) {
  std::uint32_t i = position[threadIdx.x];
  for (int s = 0; s < steps; ++s) i = __ldcg(&table[i]);
  position[threadIdx.x] = i;
}

__global__ void start_walks(std::uint32_t* position, std::uint32_t entries) {
  position[threadIdx.x] = (threadIdx.x * 7919U) & (entries - 1);
}

// Which SM each block ran on. Each block stays about `spin_ns` so that the grid fills the SMs
// in waves and the first wave's assignment is the scheduler's, not the order blocks finished.
__global__ void __launch_bounds__(1024) smid_kernel(std::uint32_t* where, std::uint64_t spin_ns) {
  std::uint32_t smid = 0;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  if (threadIdx.x == 0) where[blockIdx.x] = smid;
  std::uint64_t start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < spin_ns);
}

std::string algo_text(const cublasLtMatmulAlgo_t& algo) {
  const auto get = [&](cublasLtMatmulAlgoConfigAttributes_t what) {
    // The size must be the attribute's own (4 bytes, 2 for the shape ids; any other size is
    // refused): ask for it first, then read exactly that into a zeroed int64.
    std::size_t size = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&algo, what, nullptr, 0, &size) !=
            CUBLAS_STATUS_SUCCESS ||
        size == 0 || size > sizeof(std::int64_t)) {
      return std::string("?");
    }
    std::int64_t value = 0;
    std::size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&algo, what, &value, size, &written) !=
        CUBLAS_STATUS_SUCCESS) {
      return std::string("?");
    }
    if (written == 4) value = static_cast<std::int32_t>(value & 0xFFFFFFFF);
    return std::to_string(value);
  };
  return "id " + get(CUBLASLT_ALGO_CONFIG_ID) + " tile " + get(CUBLASLT_ALGO_CONFIG_TILE_ID) +
         " splitk " + get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM) + " stages " +
         get(CUBLASLT_ALGO_CONFIG_STAGES_ID) + " swizzle " +
         get(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING) + " reduction " +
         get(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME) + " custom " +
         get(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION) + " inner " +
         get(CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID) + " cluster " +
         get(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID);
}

/// `runs` timings of `launch` on a held stream, the median; `per_event` launches share each
/// pair of events (the event clock ticks every 32 ns or so: a 5 us launch alone would move in
/// steps of half a percent).
template <class Launch>
double median_of(dev::lease& lease, std::vector<CUevent_st*>& events, int runs, Launch&& launch,
                 int per_event = 1) {
  cudaStream_t stream = lease.stream();
  while (static_cast<int>(events.size()) < runs + 1) events.push_back(lease.create_event());
  for (int i = 0; i < warmups; ++i) launch(stream);
  COOLBENCH_CUDA_CALL(cudaStreamSynchronize(stream));
  md::hold_stream(stream, hold_ns);
  COOLBENCH_CUDA_CALL(cudaEventRecord(events[0], stream));
  for (int i = 1; i <= runs; ++i) {
    for (int l = 0; l < per_event; ++l) launch(stream);
    COOLBENCH_CUDA_CALL(cudaEventRecord(events[static_cast<std::size_t>(i)], stream));
  }
  const bool held = cudaEventQuery(events[0]) == cudaErrorNotReady;
  COOLBENCH_CUDA_CALL(cudaStreamSynchronize(stream));
  std::vector<double> ms;
  for (int i = 1; i <= runs; ++i) {
    float e = 0;
    COOLBENCH_CUDA_CALL(cudaEventElapsedTime(&e, events[static_cast<std::size_t>(i - 1)],
                                             events[static_cast<std::size_t>(i)]));
    ms.push_back(e / static_cast<float>(per_event));
  }
  if (!held) {
    std::fprintf(stderr,
                 "lottery: the hold ended before a probe's %d runs were queued: its figure "
                 "includes the host's gaps (fewer --runs)\n",
                 runs);
  }
  return coolbench::stats::median(ms);
}

struct context_row {
  double chain_ms = 0;
  std::map<std::string, double> probes;  // ms
  std::vector<std::string> algos;        // per GEMM shape
  std::string placement;                 // hash of the first launch, "(varies)" when not stable
  int temp_c = -1;
  unsigned sm_mhz = 0;
};

std::uint64_t fnv1a(const std::vector<std::uint32_t>& v) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const auto x : v) {
    h ^= x;
    h *= 1099511628211ULL;
  }
  return h;
}

context_row measure_context(int ordinal, coolbench::measure::workload& chain, int runs,
                            const coolbench::telemetry::gpu_telemetry& telemetry) {
  context_row row;
  // The level, as the protocol measures it.
  chain.prepare();
  for (int i = 0; i < warmups; ++i) (void)chain.run();
  std::vector<double> chain_ms;
  for (int i = 0; i < runs; ++i) chain_ms.push_back(chain.run().latency_ms);
  row.chain_ms = coolbench::stats::median(chain_ms);
  // The same chain replayed as one CUDA graph (the sentinel's form).
  (void)md::replay_gemm_chain_graph(chain, warmups);
  row.probes["chain as a graph"] =
      coolbench::stats::median(md::replay_gemm_chain_graph(chain, runs));
  chain.release();

  auto& gpu = dev::device::get(ordinal);
  auto lease = gpu.acquire();
  std::vector<CUevent_st*> events;
  int sms = 0;
  COOLBENCH_CUDA_CALL(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ordinal));
  cudaStream_t stream = lease.stream();

  // Each GEMM shape alone.
  cublasLtHandle_t lt = nullptr;
  COOLBENCH_CUBLAS_CALL(cublasLtCreate(&lt));
  auto lt_owner = lease.adopt(dev::resource_kind::blas_handle, [lt] { cublasLtDestroy(lt); });
  auto workspace = lease.allocate(workspace_bytes);
  std::uint64_t seed = 101;
  for (const shape& s : gpt2_shapes) {
    const auto m = static_cast<std::size_t>(s.m), n = static_cast<std::size_t>(s.n),
               k = static_cast<std::size_t>(s.k);
    auto a = lease.allocate(m * k * 2), b = lease.allocate(k * n * 2),
         c = lease.allocate(m * n * 2);
    md::fill_uniform(a.get(), m * k, coolbench::measure::gemm_dtype::fp16, seed++, stream);
    md::fill_uniform(b.get(), k * n, coolbench::measure::gemm_dtype::fp16, seed++, stream);
    cublasLtMatmulDesc_t op = nullptr;
    COOLBENCH_CUBLAS_CALL(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasLtMatrixLayout_t lb = nullptr, la = nullptr, lc = nullptr;
    // Row-major C = A·B is column-major C^T = B^T·A^T (as gemm_chain.cpp).
    COOLBENCH_CUBLAS_CALL(
        cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, n, k, static_cast<std::int64_t>(n)));
    COOLBENCH_CUBLAS_CALL(
        cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, k, m, static_cast<std::int64_t>(k)));
    COOLBENCH_CUBLAS_CALL(
        cublasLtMatrixLayoutCreate(&lc, CUDA_R_16F, n, m, static_cast<std::int64_t>(n)));
    cublasLtMatmulPreference_t preference = nullptr;
    COOLBENCH_CUBLAS_CALL(cublasLtMatmulPreferenceCreate(&preference));
    const std::uint64_t limit = workspace_bytes;
    COOLBENCH_CUBLAS_CALL(cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &limit, sizeof limit));
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    COOLBENCH_CUBLAS_CALL(
        cublasLtMatmulAlgoGetHeuristic(lt, op, lb, la, lc, lc, preference, 1, &result, &returned));
    cublasLtMatmulPreferenceDestroy(preference);
    if (returned == 0)
      throw coolbench::not_available("cuBLASLt has no algorithm for a GPT-2 shape");
    row.algos.push_back(algo_text(result.algo));
    const float alpha = 1, beta = 0;
    const std::string name =
        "gemm " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
    row.probes[name] = median_of(
        lease, events, short_runs(runs, 2),  // with split-K, a reduction kernel too
        [&](cudaStream_t st) {
          COOLBENCH_CUBLAS_CALL(cublasLtMatmul(lt, op, &alpha, b.get(), lb, a.get(), la, &beta,
                                               c.get(), lc, c.get(), lc, &result.algo,
                                               workspace.get(), workspace_bytes, st));
        },
        short_per_event);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(op);
  }

  // Clock-bound.
  auto sink = lease.allocate(std::size_t{4} << 20U);
  row.probes["fma"] = median_of(
      lease, events, short_runs(runs, 1),
      [&](cudaStream_t st) {
        fma_kernel<<<sms, 128, 0, st>>>(static_cast<float*>(sink.get()), 4096);
        COOLBENCH_CUDA_CALL(cudaGetLastError());
      },
      short_per_event);

  // Latency of L2 and of DRAM.
  struct walk {
    const char* name;
    std::size_t bytes;
    int runs;
  };
  for (const walk w : {walk{"l2 walk", std::size_t{8} << 20U, std::max(runs / 6, 10)},
                       walk{"hbm walk", std::size_t{512} << 20U, std::max(runs / 10, 10)}}) {
    const auto entries = static_cast<std::uint32_t>(w.bytes / 4);
    auto table = lease.allocate(w.bytes);
    const auto* walked = static_cast<const std::uint32_t*>(table.get());
    auto* position = static_cast<std::uint32_t*>(sink.get());
    fill_walk<<<1024, 256, 0, stream>>>(static_cast<std::uint32_t*>(table.get()), entries);
    start_walks<<<1, 32, 0, stream>>>(position, entries);
    COOLBENCH_CUDA_CALL(cudaGetLastError());
    row.probes[w.name] = median_of(lease, events, w.runs, [&](cudaStream_t st) {
      walk_kernel<<<1, 32, 0, st>>>(walked, position, 1000);
      COOLBENCH_CUDA_CALL(cudaGetLastError());
    });
  }

  // Bandwidth.
  {
    const std::size_t bytes = std::size_t{512} << 20U;
    auto from = lease.allocate(bytes), to = lease.allocate(bytes);
    md::fill_uniform(from.get(), bytes / 2, coolbench::measure::gemm_dtype::fp16, seed++, stream);
    row.probes["copy 512 MiB"] =
        median_of(lease, events, std::max(runs / 30, 5), [&](cudaStream_t st) {
          COOLBENCH_CUDA_CALL(
              cudaMemcpyAsync(to.get(), from.get(), bytes, cudaMemcpyDeviceToDevice, st));
        });
  }

  // Block placement: three launches of a 4-wave grid (1024 threads: two blocks an SM at once).
  {
    const int blocks = 8 * sms;
    auto where = lease.allocate(static_cast<std::size_t>(blocks) * 4);
    std::vector<std::uint64_t> hashes;
    for (int launch = 0; launch < 3; ++launch) {
      smid_kernel<<<blocks, 1024, 0, stream>>>(static_cast<std::uint32_t*>(where.get()), 5000);
      COOLBENCH_CUDA_CALL(cudaGetLastError());
      // The first wave: which SM the scheduler gave each of the first blocks.
      std::vector<std::uint32_t> host(static_cast<std::size_t>(2 * sms));
      COOLBENCH_CUDA_CALL(cudaMemcpyAsync(host.data(), where.get(), host.size() * 4,
                                          cudaMemcpyDeviceToHost, stream));
      COOLBENCH_CUDA_CALL(cudaStreamSynchronize(stream));
      hashes.push_back(fnv1a(host));
    }
    char text[32];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hashes[0]));
    row.placement = hashes[0] == hashes[1] && hashes[1] == hashes[2] ? text : "(varies)";
  }
  const auto state = telemetry.read(coolbench::telemetry::read_scope::fast);
  if (state.temp_gpu_c.ok()) row.temp_c = state.temp_gpu_c.value;
  if (state.clock_sm_mhz.ok()) row.sm_mhz = state.clock_sm_mhz.value;
  return row;
}

/// A device release, forced (and said) when memory the library did not allocate is live: each
/// context must be a fresh one.
void release(int ordinal) {
  try {
    (void)dev::device::get(ordinal).release();
  } catch (const dev::release_refused& e) {
    std::printf("> release refused (%s); forced\n", e.what());
    dev::release_options force;
    force.force = true;
    (void)dev::device::get(ordinal).release(force);
  }
}

/// Pearson correlation of a probe with the chain's level (stats::fit_line's r); 0 where the
/// chain drew one level in every context, and there is nothing to follow.
double correlation(const std::vector<double>& probe, const std::vector<double>& level) {
  if (std::all_of(level.begin(), level.end(), [&](double v) { return v == level.front(); }))
    return 0;
  return coolbench::stats::fit_line(level, probe).r;
}

int whole(const std::string& text, const char* flag, int least) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < least || v > 100000) {
    std::fprintf(stderr, "lottery: %s takes a whole number >= %d; got '%s'\n", flag, least,
                 text.c_str());
    std::exit(2);
  }
  return static_cast<int>(v);
}

}  // namespace

int main(int argc, char** argv) {
  int contexts = 12, runs = 300, ordinal = 0;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--contexts" && has_value) {
      contexts = whole(argv[++i], "--contexts", 3);  // a correlation needs 3
    } else if (a == "--runs" && has_value) {
      runs = whole(argv[++i], "--runs", 30);
    } else if (a == "--device" && has_value) {
      ordinal = whole(argv[++i], "--device", 0);
    } else if (a == "--json" && has_value) {
      json_path = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: lottery [--contexts N (12)] [--runs R (300)] [--device D] [--json "
                   "PATH]\n(bench/lottery.cu says what it measures)\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  try {
    const coolbench::telemetry::gpu_telemetry telemetry(ordinal);
    const auto& id = telemetry.identity();
    char date[32] = {};
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    (void)std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", &utc);
    std::printf(
        "# lottery\n\n- GPU %d: %s (%s), driver %s\n- date: %s\n- %d contexts, %d runs "
        "per probe (walks, copy and the short probes fewer), each context made by a device "
        "release\n\n",
        ordinal, id.name.c_str(), id.uuid.c_str(), id.driver_version.c_str(), date, contexts, runs);
    auto chain = coolbench::measure::make_workload("gemm:fp16:gpt2-small", ordinal);
    std::vector<context_row> rows;
    for (int c = 0; c < contexts; ++c) {
      rows.push_back(measure_context(ordinal, *chain, runs, telemetry));
      release(ordinal);
      const auto& r = rows.back();
      std::printf("context %d: chain %.5f ms, %d C, %u MHz, placement %s\n", c + 1, r.chain_ms,
                  r.temp_c, r.sm_mhz, r.placement.c_str());
      std::fflush(stdout);
    }
    std::vector<std::string> names;
    for (const auto& [name, ms] : rows[0].probes) names.push_back(name);
    std::printf("\n| context | chain |");
    for (const auto& n : names) std::printf(" %s |", n.c_str());
    std::printf(" placement | °C | SM MHz |\n|---|---|");
    for (std::size_t i = 0; i < names.size(); ++i) std::printf("---|");
    std::printf("---|---|---|\n");
    for (std::size_t c = 0; c < rows.size(); ++c) {
      std::printf("| %zu | %.5f ms |", c + 1, rows[c].chain_ms);
      for (const auto& n : names) std::printf(" %.5f ms |", rows[c].probes.at(n));
      std::printf(" %s | %d | %u |\n", rows[c].placement.c_str(), rows[c].temp_c, rows[c].sm_mhz);
    }
    std::vector<double> level;
    for (const auto& r : rows) level.push_back(r.chain_ms);
    const auto spread = [](const std::vector<double>& v) {
      return *std::max_element(v.begin(), v.end()) / *std::min_element(v.begin(), v.end()) - 1;
    };
    std::printf("\n| probe | spread over contexts | correlation with the chain |\n|---|---|---|\n");
    std::printf("| chain | %.2f %% | 1 |\n", 100 * spread(level));
    nlohmann::json summary = nlohmann::json::array();
    for (const auto& n : names) {
      std::vector<double> v;
      for (const auto& r : rows) v.push_back(r.probes.at(n));
      std::printf("| %s | %.2f %% | %+.2f |\n", n.c_str(), 100 * spread(v), correlation(v, level));
      summary.push_back(
          {{"probe", n}, {"spread", spread(v)}, {"correlation", correlation(v, level)}});
    }
    std::printf("\ncuBLASLt's choice per GEMM shape (the same in every context unless listed):\n");
    for (std::size_t s = 0; s < rows[0].algos.size(); ++s) {
      std::map<std::string, int> seen;
      for (const auto& r : rows) ++seen[r.algos[s]];
      for (const auto& [text, count] : seen) {
        std::printf("- %dx%dx%d: %s (%d of %zu contexts)\n", gpt2_shapes[s].m, gpt2_shapes[s].n,
                    gpt2_shapes[s].k, text.c_str(), count, rows.size());
      }
    }
    if (!json_path.empty()) {
      nlohmann::json out;
      out["gpu"] = id.name;
      out["uuid"] = id.uuid;
      out["driver"] = id.driver_version;
      out["date"] = date;
      out["runs"] = runs;
      out["summary"] = summary;
      for (const auto& r : rows) {
        out["contexts"].push_back({{"chain_ms", r.chain_ms},
                                   {"probes_ms", r.probes},
                                   {"algorithms", r.algos},
                                   {"placement", r.placement},
                                   {"temp_c", r.temp_c},
                                   {"sm_mhz", r.sm_mhz}});
      }
      std::ofstream file(json_path);
      file << out.dump(2) << "\n";
      if (!file.flush()) {
        std::fprintf(stderr, "lottery: cannot write %s\n", json_path.c_str());
        return 1;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lottery: %s\n", e.what());
    return 1;
  }
  return 0;
}
