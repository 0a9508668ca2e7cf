// What the telemetry sampler costs: CPU time of its thread at several
// periods, and its effect on a GPU loop's latency, A/B in one run.
//   telemetry_overhead [SECONDS_PER_PERIOD] [ROUNDS] [DEVICE] [protocol]
// With `protocol`, only the setting the protocol runs (measure/environment.cpp): every 20 ms,
// the HW thermal / power-brake counters every 200 ms, the energy counter every 1000 ms, after a
// start-up probe of the energy counter's period (in the latency table each round's sampler runs
// the probe again: the protocol runs it once per GPU and process).
// Prints markdown tables (docs/perf/telemetry.md records them).
#include <cuda_runtime.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "coolbench/core/clock.hpp"
#include "coolbench/telemetry.hpp"

namespace {

using namespace std::chrono_literals;
using coolbench::telemetry::sampler;

void check(cudaError_t result, const char* what) {
  if (result != cudaSuccess) {
    std::fprintf(stderr, "telemetry_overhead: %s failed: %s\n", what, cudaGetErrorString(result));
    std::exit(1);
  }
}

double process_cpu_s() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// A latency-bound GPU loop body: dependent FMAs over 1 Mi floats, ~1 ms.
__global__ void work(float* data, int n, int rounds) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = data[i];
  for (int r = 0; r < rounds; ++r) x = x * 0.9999f + 0.0001f;
  data[i] = x;
}

struct gpu_loop {
  float* data = nullptr;
  int n = 1 << 20;
  int rounds = 4096;
  cudaEvent_t start{};
  cudaEvent_t stop{};

  explicit gpu_loop(int device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaMalloc(&data, sizeof(float) * static_cast<size_t>(n)), "cudaMalloc");
    // Random-ish data, not zeros.
    std::vector<float> host(static_cast<size_t>(n));
    unsigned state = 12345;
    for (auto& v : host)
      v = static_cast<float>((state = state * 1664525U + 1013904223U) >> 8) / 16777216.0f;
    check(cudaMemcpy(data, host.data(), sizeof(float) * host.size(), cudaMemcpyHostToDevice),
          "cudaMemcpy");
    check(cudaEventCreate(&start), "cudaEventCreate");
    check(cudaEventCreate(&stop), "cudaEventCreate");
  }
  ~gpu_loop() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cudaFree(data);
  }

  /// One timed iteration, in ms.
  double once() {
    check(cudaEventRecord(start), "cudaEventRecord");
    work<<<n / 256, 256>>>(data, n, rounds);
    check(cudaGetLastError(), "work launch");
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    return ms;
  }

  std::vector<double> for_seconds(double seconds) {
    std::vector<double> ms;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) ms.push_back(once());
    return ms;
  }
};

/// A sampler setting: its period, the periods of the two costly tiers, and whether it starts
/// with the energy-period probe.
struct setting {
  int period_ms;
  int slow_ms;    ///< HW thermal / power-brake counters
  int energy_ms;  ///< energy counter
  bool probe = false;
};

coolbench::telemetry::sampler_options options_of(const setting& s) {
  coolbench::telemetry::sampler_options o;
  o.period = std::chrono::milliseconds(s.period_ms);
  o.slow_period = std::chrono::milliseconds(s.slow_ms);
  o.energy_period = std::chrono::milliseconds(s.energy_ms);
  if (s.probe) o.energy_probe = coolbench::telemetry::energy_probe_options{};
  return o;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void print_read_costs(int device) {
  coolbench::telemetry::gpu_telemetry gpu(device);
  std::printf("GPU %d: %s, driver %s\n\n", device, gpu.identity().name.c_str(),
              gpu.identity().driver_version.c_str());
  const auto per_read_us = [&](coolbench::telemetry::read_scope scope, int reads) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reads; ++i) (void)gpu.read(scope);
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
               .count() /
           reads;
  };
  const double fast_us = per_read_us(coolbench::telemetry::read_scope::fast, 1000);
  const double counters_us = per_read_us(coolbench::telemetry::read_scope::counters, 100);
  const double all_us = per_read_us(coolbench::telemetry::read_scope::all, 50);
  std::printf("| read | wall time per read |\n|---|---|\n");
  std::printf(
      "| fast (every tick) | %.1f us |\n| counters (fast + HW thermal and power-brake "
      "counters) | %.1f us |\n| all (counters + energy) | %.1f us |\n\n",
      fast_us, counters_us, all_us);
}

/// The sampler thread's CPU: the main thread sleeps, so the process's CPU time is the sampler's.
/// A setting with the probe is timed in two parts: from its start until the probe is done, then
/// SECONDS of the steady state (the figure "CPU of one core" is that steady state's).
void cpu_table(int device, double seconds, const std::vector<setting>& settings) {
  std::printf("Sampler thread:\n\n");
  std::printf(
      "| period | counters every | energy every | samples | failed | late ticks | CPU time | CPU "
      "of one core | the sampler's thread alone | start-up probe |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<std::string> splits;
  for (const auto& setting : settings) {
    sampler s(coolbench::telemetry::make_gpu_source(device), options_of(setting));
    double cpu0 = process_cpu_s();
    auto wall0 = std::chrono::steady_clock::now();
    s.start();
    std::string probe = "none";
    if (setting.probe) {
      const auto learned = s.energy_probe(std::chrono::seconds(5));
      const double probe_cpu = process_cpu_s() - cpu0;
      const double probe_wall = seconds_since(wall0);
      char text[512];
      std::snprintf(text, sizeof text, "%.1f ms CPU in %.2f s: %s", probe_cpu * 1e3, probe_wall,
                    learned ? learned->note.c_str() : "did not finish in 5 s");
      probe = text;
      cpu0 = process_cpu_s();
      wall0 = std::chrono::steady_clock::now();
    }
    const auto stats0 = s.stats();
    const auto samples0 = stats0.samples;
    const auto thread0 = stats0.thread_cpu_ns;
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    s.stop();
    const double wall = seconds_since(wall0);
    const double cpu = process_cpu_s() - cpu0;
    const auto stats = s.stats();
    // The process's CPU counts every thread (the driver's too); the sampler's own clock only
    // its thread: the difference is what the sampler does not cost.
    const double thread_cpu = static_cast<double>(stats.thread_cpu_ns - thread0) / 1e9;
    std::printf(
        "| %d ms | %d ms | %d ms | %llu | %llu | %llu | %.1f ms | %.3f%% | %.1f ms, %.3f%% | %s "
        "|\n",
        setting.period_ms, setting.slow_ms, setting.energy_ms,
        static_cast<unsigned long long>(stats.samples - samples0),
        static_cast<unsigned long long>(stats.failed_reads),
        static_cast<unsigned long long>(stats.late_ticks), cpu * 1e3, 100.0 * cpu / wall,
        thread_cpu * 1e3, 100.0 * thread_cpu / wall, probe.c_str());
    char split[512];
    int at = std::snprintf(split, sizeof split, "| %d ms | %d ms | %d ms |", setting.period_ms,
                           setting.slow_ms, setting.energy_ms);
    std::uint64_t in_reads = 0;
    for (auto scope :
         {coolbench::telemetry::read_scope::fast, coolbench::telemetry::read_scope::counters,
          coolbench::telemetry::read_scope::all}) {
      const auto i = static_cast<std::size_t>(scope);
      const auto n = stats.reads[i] - stats0.reads[i];
      const auto ns = stats.read_cpu_ns[i] - stats0.read_cpu_ns[i];
      in_reads += ns;
      at += std::snprintf(split + at, sizeof split - static_cast<std::size_t>(at),
                          " %llu, %.1f us each, %.2f%% |", static_cast<unsigned long long>(n),
                          n > 0 ? static_cast<double>(ns) / 1e3 / static_cast<double>(n) : 0.0,
                          100.0 * static_cast<double>(ns) / 1e9 / wall);
    }
    const double rest_ns =
        static_cast<double>(stats.thread_cpu_ns - thread0) - static_cast<double>(in_reads);
    const auto ticks = static_cast<double>(stats.samples - samples0);
    std::snprintf(split + at, sizeof split - static_cast<std::size_t>(at),
                  " %.1f us a tick, %.2f%% |", ticks > 0 ? rest_ns / 1e3 / ticks : 0.0,
                  100.0 * rest_ns / 1e9 / wall);
    splits.emplace_back(split);
  }
  // Where the thread's CPU went: each tier's reads as the sampler made them (between sleeps,
  // not in a loop), and the rest of the thread's time (its wake-ups and bookkeeping).
  std::printf(
      "\nThe sampler thread's CPU by read scope (reads, mean CPU a read, share of one core):\n\n"
      "| period | counters every | energy every | fast reads | counters reads | full reads | "
      "outside reads |\n|---|---|---|---|---|---|---|\n");
  for (const auto& line : splits) std::printf("%s\n", line.c_str());
}

/// GPU loop latency without and with the sampler, alternating, so drift between the two
/// conditions cancels.
void latency_table(int device, double seconds, int rounds, const std::vector<setting>& settings) {
  gpu_loop loop(device);
  (void)loop.for_seconds(2.0);  // warm-up
  std::printf(
      "\nGPU loop: %d rounds of %.1f s off / %.1f s on, alternating; kernel on random data\n\n",
      rounds, seconds / 2, seconds / 2);
  std::printf(
      "| sampler period | counters every | energy every | median off | median on | on/off - 1 | "
      "round-by-round median of (on/off - 1) |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (const auto& setting : settings) {
    std::vector<double> off_all;
    std::vector<double> on_all;
    std::vector<double> round_ratio;
    for (int r = 0; r < rounds; ++r) {
      const auto off = loop.for_seconds(seconds / 2);
      sampler s(coolbench::telemetry::make_gpu_source(device), options_of(setting));
      s.start();
      const auto on = loop.for_seconds(seconds / 2);
      s.stop();
      off_all.insert(off_all.end(), off.begin(), off.end());
      on_all.insert(on_all.end(), on.begin(), on.end());
      round_ratio.push_back(median(on) / median(off) - 1.0);
    }
    const double off_ms = median(off_all);
    const double on_ms = median(on_all);
    std::printf("| %d ms | %d ms | %d ms | %.4f ms | %.4f ms | %+.3f%% | %+.3f%% |\n",
                setting.period_ms, setting.slow_ms, setting.energy_ms, off_ms, on_ms,
                100.0 * (on_ms / off_ms - 1.0), 100.0 * median(round_ratio));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 10.0;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 6;
  const int device = argc > 3 ? std::atoi(argv[3]) : 0;
  const bool protocol_only = argc > 4 && std::string(argv[4]) == "protocol";
  // The protocol's setting (protocol_sampler_options in measure/environment.cpp); the rest: the
  // sampler's default (1 s for both costly tiers) and the protocol's setting before energy had its
  // own period.
  const setting protocol{20, 1000, 1000, true};
  // Before 2026-12-06 the protocol read the HW counters every 200 ms: timed beside it.
  const setting protocol_counters_200{20, 200, 1000, true};
  const std::vector<setting> cpu_settings =
      protocol_only
          ? std::vector<setting>{protocol_counters_200, protocol}
          : std::vector<setting>{
                {10, 1000, 1000}, {50, 1000, 1000}, {200, 1000, 1000}, {20, 200, 200}, protocol};
  const std::vector<setting> loop_settings =
      protocol_only ? std::vector<setting>{protocol}
                    : std::vector<setting>{{10, 1000, 1000}, {50, 1000, 1000}, protocol};
  print_read_costs(device);
  cpu_table(device, seconds, cpu_settings);
  latency_table(device, seconds, rounds, loop_settings);
  return 0;
}
