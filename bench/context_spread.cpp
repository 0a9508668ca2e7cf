// Does a GEMM chain's figure depend on the CUDA context it runs in? The same
// chain in CONTEXTS fresh contexts of one process, each made by a device
// release (context reset) and re-acquire: warm-up, RUNS timed runs, the
// median per context. Run it in several processes to compare those too.
//   context_spread [SPEC] [CONTEXTS] [RUNS] [DEVICE]
//   (default gemm:fp16:gpt2-small 8 300 0)
// Prints a markdown table; docs/perf/thermal.md records what it found.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
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
  const std::string spec = argc > 1 ? argv[1] : "gemm:fp16:gpt2-small";
  const int contexts = argc > 2 ? whole(argv[2], "CONTEXTS", 1) : 8;
  const int runs = argc > 3 ? whole(argv[3], "RUNS", 1) : 300;
  const int device = argc > 4 ? whole(argv[4], "DEVICE", 0) : 0;
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
        "per context after 20 warm-up runs\n\n",
        device, id.name.c_str(), id.uuid.c_str(), id.driver_version.c_str(), date,
        w->describe().c_str(), runs);
    std::printf(
        "| context | median | min | p90 | vs context 1 | °C after | SM MHz after |\n"
        "|---|---|---|---|---|---|---|\n");
    double first = 0;
    for (int c = 1; c <= contexts; ++c) {
      w->prepare();
      for (int i = 0; i < 20; ++i) (void)w->run();
      std::vector<double> ms;
      ms.reserve(static_cast<std::size_t>(runs));
      for (int i = 0; i < runs; ++i) ms.push_back(w->run().latency_ms);
      const auto state = telemetry.read();
      w->release();
      (void)coolbench::device::device::get(device).release();
      const double median = coolbench::stats::median(ms);
      const double p90 = coolbench::stats::quantile(ms, 0.9);
      if (c == 1) first = median;
      std::printf("| %d | %.5f ms | %.5f ms | %.5f ms | %+.2f%% | %s | %s |\n", c, median,
                  *std::min_element(ms.begin(), ms.end()), p90, 100 * (median / first - 1),
                  state.temp_gpu_c.ok() ? std::to_string(state.temp_gpu_c.value).c_str() : "?",
                  state.clock_sm_mhz.ok() ? std::to_string(state.clock_sm_mhz.value).c_str() : "?");
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "context_spread: %s\n", e.what());
    return 1;
  }
  return 0;
}
