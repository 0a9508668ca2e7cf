#include "measure/detail/sentinel.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <vector>

#include "coolbench/core/error.hpp"
#include "coolbench/device/device.hpp"
#include "coolbench/measure/hidden_state.hpp"
#include "coolbench/measure/workload.hpp"
#include "core/cuda_check.hpp"
#include "measure/detail/gemm_chain.hpp"
#include "measure/detail/sentinel_kernel.hpp"

namespace coolbench::measure::detail {
namespace {

constexpr int timed_runs = 30;        // one check
constexpr int batch = 10;             // warm-up passes between looks
constexpr int max_batches = 100;      // at most 1000 warm-up passes
constexpr double settled = 0.01;      // two batches this close: the clock is up
constexpr int walk_steps = 2000;      // ~35 us a pass at 1980 MHz with the table in L1
constexpr int chain_timed_runs = 20;  // replays of ~0.25 ms on an H100 or H200: ~5 ms
constexpr std::chrono::milliseconds min_warmup{20};

/// Warm-up batches until two medians agree within `settled`, after at least `min_warmup` (an
/// idle GPU's clock takes some milliseconds to come up, and two batches can agree on the way),
/// then the median of `runs`.
template <class Median>
double settled_median(Median&& median_of, int runs) {
  const auto start = std::chrono::steady_clock::now();
  std::optional<double> previous;
  for (int b = 0; b < max_batches; ++b) {
    const double m = median_of(batch);
    const bool long_enough = std::chrono::steady_clock::now() - start >= min_warmup;
    if (previous && std::abs(m / *previous - 1) < settled && b >= 2 && long_enough) break;
    previous = m;
  }
  return median_of(runs);
}

}  // namespace

struct sentinel::walk_resources {
  std::uint64_t generation = 0;
  // A stream that synchronises with the legacy default stream, as most code's
  // streams do (cudaStreamCreate, a framework's default stream).
  CUstream_st* stream = nullptr;
  device::owned_resource stream_owner;
  device::buffer table;
  device::buffer sink;
  std::vector<CUevent_st*> events;
  int blocks = 0;
};

struct sentinel::chain_resources {
  // The chain keeps its lease only between prepare() and release(): each check releases it.
  std::unique_ptr<workload> chain;
};

sentinel::sentinel(int ordinal, sentinel_kind kind) : m_ordinal(ordinal), m_kind(kind) {
  if (kind == sentinel_kind::none)
    throw invalid_argument("a sentinel needs a kind other than none");
}
sentinel::~sentinel() = default;

sentinel_reading sentinel::check() {
  return m_kind == sentinel_kind::gemm_chain ? check_chain() : check_walk();
}

sentinel_reading sentinel::check_chain() {
  if (!m_chain) {
    m_chain = std::make_unique<chain_resources>();
    m_chain->chain = make_gemm_chain(parse_gemm_chain("gemm:fp16:gpt2-small"), m_ordinal);
  }
  workload& chain = *m_chain->chain;
  sentinel_reading r;
  try {
    chain.prepare();
    r.context = device::device::get(m_ordinal).status().generation;  // the chain's, prepared
    const double ms = settled_median(
        [&](int runs) { return sentinel_median(replay_gemm_chain_graph(chain, runs)); },
        chain_timed_runs);
    r.median_ms = ms;
  } catch (...) {
    chain.release();
    throw;
  }
  chain.release();  // its lease goes: a release is never refused on the sentinel's account
  return r;
}

sentinel_reading sentinel::check_walk() {
  auto lease = device::device::get(m_ordinal).acquire();
  if (!m_walk || m_walk->generation != lease.generation()) {
    auto r = std::make_unique<walk_resources>();
    r->generation = lease.generation();
    COOLBENCH_CUDA_CALL(
        cudaDeviceGetAttribute(&r->blocks, cudaDevAttrMultiProcessorCount, m_ordinal));
    r->table = lease.allocate(sentinel_table_bytes);
    r->sink = lease.allocate(static_cast<std::size_t>(r->blocks) * 256 * sizeof(std::uint32_t));
    for (int i = 0; i <= timed_runs; ++i) r->events.push_back(lease.create_event());
    cudaStream_t stream = nullptr;
    COOLBENCH_CUDA_CALL(cudaStreamCreate(&stream));
    r->stream = stream;
    r->stream_owner = lease.adopt(device::resource_kind::stream, [stream] {
      COOLBENCH_CUDA_CALL_NOEXCEPT(cudaStreamDestroy(stream));
    });
    fill_sentinel_table(static_cast<std::uint32_t*>(r->table.get()), sentinel_table_bytes,
                        r->stream);
    m_walk = std::move(r);
  }
  const walk_resources& r = *m_walk;
  const auto* table = static_cast<const std::uint32_t*>(r.table.get());
  auto* sink = static_cast<std::uint32_t*>(r.sink.get());
  const double ms = settled_median(
      [&](int runs) {
        return sentinel_median(time_sentinel(table, sentinel_table_bytes, sink, r.blocks,
                                             walk_steps, 0, runs, r.stream, r.events));
      },
      timed_runs);
  return {ms, r.generation};
}

}  // namespace coolbench::measure::detail
