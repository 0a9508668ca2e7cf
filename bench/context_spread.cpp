// Does a GEMM chain's figure depend on the CUDA context it runs in? The same
// chain in CONTEXTS fresh contexts of one process, each made by a device
// release (context reset) and re-acquire: warm-up, RUNS timed runs, the
// median per context. Run it in several processes to compare those too.
// RENEW says what changes between two groups of runs: `context` (default) a
// device release, `workload` the workload released and prepared again in the
// same context (the cache hands back the same blocks), `memory` the same but
// on new blocks at other addresses: does the figure follow the context or the
// memory? Each row also gives what the renewal and warm-up cost.
//   context_spread [SPEC] [CONTEXTS] [RUNS] [DEVICE] [RENEW]
//   (default gemm:fp16:gpt2-small 8 300 0 context)
// Prints a markdown table; docs/perf/thermal.md records what it found.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "coolbench/device.hpp"
#include "coolbench/measure.hpp"
#include "coolbench/stats.hpp"
#include "coolbench/telemetry.hpp"

namespace {

int whole(const char* text, const char* name, long least) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < least || value > 1'000'000) {
    std::fprintf(stderr, "context_spread: %s '%s' is not a whole number in %ld..1000000\n", name,
                 text, least);
    std::exit(2);
  }
  return static_cast<int>(value);
}

}  // namespace

int main(int argc, char** argv) {
  namespace measure = coolbench::measure;
  namespace dev = coolbench::device;
  using clock = std::chrono::steady_clock;
  const std::string spec = argc > 1 ? argv[1] : "gemm:fp16:gpt2-small";
  const int contexts = argc > 2 ? whole(argv[2], "CONTEXTS", 1) : 8;
  const int runs = argc > 3 ? whole(argv[3], "RUNS", 1) : 300;
  const int device = argc > 4 ? whole(argv[4], "DEVICE", 0) : 0;
  const std::string renew = argc > 5 ? argv[5] : "context";
  const char* between = nullptr;
  if (renew == "context") {
    between = "workload released, device released (context reset)";
  } else if (renew == "workload") {
    between =
        "workload released and prepared again in the same context (the cache gives it "
        "the same blocks back)";
  } else if (renew == "memory") {
    between =
        "workload released, cache emptied, a spacer of a different size kept live, "
        "workload prepared again in the same context (new blocks)";
  } else {
    std::fprintf(stderr,
                 "context_spread: RENEW '%s' is not one of 'context', 'workload', 'memory'\n",
                 renew.c_str());
    return 2;
  }
  try {
    auto w = measure::make_workload(spec, device);
    // NVML only: no CUDA context before the first prepare().
    const coolbench::telemetry::gpu_telemetry telemetry(device);
    const auto& id = telemetry.identity();
    char date[32] = {};
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    (void)std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", &utc);
    std::printf(
        "# context_spread\n\n- GPU %d: %s (%s), driver %s\n- date: %s\n- %s, %d runs "
        "per context after 20 warm-up runs\n- between contexts: %s\n\n",
        device, id.name.c_str(), id.uuid.c_str(), id.driver_version.c_str(), date,
        w->describe().c_str(), runs, between);
    std::printf(
        "| context | median | min | p90 | vs context 1 | °C after | SM MHz after | prepare + "
        "warm-up | release |\n"
        "|---|---|---|---|---|---|---|---|---|\n");
    double first = 0;
    // Spacers move the next allocations to other addresses; they live until the end.
    std::optional<dev::lease> spacer_lease;
    std::vector<dev::buffer> spacers;
    for (int c = 1; c <= contexts; ++c) {
      const auto t0 = clock::now();
      w->prepare();
      for (int i = 0; i < 20; ++i) (void)w->run();
      const auto t1 = clock::now();
      std::vector<double> ms;
      ms.reserve(static_cast<std::size_t>(runs));
      for (int i = 0; i < runs; ++i) ms.push_back(w->run().latency_ms);
      const auto state = telemetry.read();
      const auto t2 = clock::now();
      w->release();
      if (renew == "context") {
        spacers.clear();
        spacer_lease.reset();
        (void)dev::device::get(device).release();
      } else if (renew == "memory") {
        dev::device::get(device).empty_cache();
        if (!spacer_lease) spacer_lease.emplace(dev::device::get(device).acquire());
        spacers.push_back(spacer_lease->allocate((static_cast<std::size_t>(c) * 6 + 2) << 20U));
      }
      const auto t3 = clock::now();
      const double median = coolbench::stats::median(ms);
      const double p90 = coolbench::stats::quantile(ms, 0.9);
      if (c == 1) first = median;
      const auto ms_of = [](clock::duration d) {
        return std::chrono::duration<double, std::milli>(d).count();
      };
      std::printf("| %d | %.5f ms | %.5f ms | %.5f ms | %+.2f%% | %s | %s | %.0f ms | %.0f ms |\n",
                  c, median, *std::min_element(ms.begin(), ms.end()), p90,
                  100 * (median / first - 1),
                  state.temp_gpu_c.ok() ? std::to_string(state.temp_gpu_c.value).c_str() : "?",
                  state.clock_sm_mhz.ok() ? std::to_string(state.clock_sm_mhz.value).c_str() : "?",
                  ms_of(t1 - t0), ms_of(t3 - t2));
      std::fflush(stdout);
    }
    spacers.clear();
    spacer_lease.reset();
    (void)dev::device::get(device).release();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "context_spread: %s\n", e.what());
    return 1;
  }
  return 0;
}
