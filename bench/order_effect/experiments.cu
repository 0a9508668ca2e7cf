#include "experiments.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <optional>

#include "core/cuda_check.hpp"
#include "measure/detail/sentinel_kernel.hpp"

namespace order_effect {
namespace {

using steady = std::chrono::steady_clock;
double seconds_since(steady::time_point t) {
  return std::chrono::duration<double>(steady::now() - t).count();
}

enum class disturbance { gemms, shared_200, shared_100, shared_48 };
const char* name_of(disturbance d) {
  switch (d) {
    case disturbance::gemms: return "3 bf16 8192^3 GEMMs";
    case disturbance::shared_200: return "200 KB shared-memory kernel";
    case disturbance::shared_100: return "100 KB shared-memory kernel (control)";
    case disturbance::shared_48: return "48 KB shared-memory kernel (control)";
  }
  return "?";
}
void disturb(dev::lease& lease, disturbance d) {
  if (d == disturbance::gemms) disturb_with_gemms(lease);
  if (d == disturbance::shared_200) disturb_with_shared_memory(lease, 200);
  if (d == disturbance::shared_100) disturb_with_shared_memory(lease, 100);
  if (d == disturbance::shared_48) disturb_with_shared_memory(lease, 48);
}

/// Adds `value` to the figure (table, row, column), creating it on first use.
void add(std::vector<figure>& out, const std::string& table, const std::string& row,
         const std::string& column, double value, const std::string& unit = "ms") {
  for (auto& f : out) {
    if (f.table == table && f.row == row && f.column == column) {
      f.values.push_back(value);
      return;
    }
  }
  out.push_back({table, row, column, {value}, unit});
}

void print_kernels(const victim_config& config, const std::vector<kernel_info>& kernels) {
  std::printf("Kernels of the victim with %s:\n\n", describe(config).c_str());
  std::printf(
      "| kernel | nodes | static smem | dynamic smem | carveout attr |\n|---|---|---|---|---|\n");
  for (const auto& k : kernels) {
    std::printf("| `%.90s` | %d | %d | %u | %d |\n", k.name.c_str(), k.count, k.static_shared_bytes,
                k.dynamic_shared_bytes, k.carveout);
  }
  std::printf("\n");
}

}  // namespace

double release_device(bench_context& b) {
  const auto start = steady::now();
  if (!b.forced) {
    try {
      (void)b.gpu.release();
      return seconds_since(start);
    } catch (const dev::release_refused& e) {
      b.forced = true;
      b.refusal = e.what();
      std::printf("> release refused (%s); forcing from here on\n\n", e.what());
    }
  }
  dev::release_options force;
  force.force = true;
  (void)b.gpu.release(force);
  return seconds_since(start);
}

std::vector<figure> survey_victims(bench_context& b) {
  using g = gemm_compute;
  using h = carveout_hint;
  using w = blas_workspace;
  const victim_config configs[] = {
      {g::fp16, h::none, w::lease},        {g::fp32, h::none, w::lease},
      {g::fp16, h::none, w::none},         {g::fp32, h::none, w::none},
      {g::fp16, h::none, w::library},      {g::fp16, h::own_kernels, w::none},
      {g::fp16, h::all_kernels, w::none},  {g::fp16, h::all_kernels, w::lease}};
  std::vector<figure> out;
  for (int r = 0; r < b.repeats; ++r) {
    for (const auto& c : configs) {
      (void)release_device(b);
      auto lease = b.gpu.acquire();
      victim v(lease, c);
      if (r == 0) print_kernels(c, v.kernels());
      add(out, "victims", describe(c), "clean", v.median_ms(b.warmups, b.replays));
      disturb_with_gemms(lease);
      add(out, "victims", describe(c), "after the bf16 GEMMs", v.median_ms(b.warmups, b.replays));
      disturb_with_shared_memory(lease, 200);
      add(out, "victims", describe(c), "after GEMMs + 200 KB", v.median_ms(b.warmups, b.replays));
    }
  }
  (void)release_device(b);
  return out;
}

std::vector<figure> per_kernel(bench_context& b, const victim_config& config) {
  std::vector<figure> out;
  victim_config lease_workspace = config;
  lease_workspace.workspace = blas_workspace::lease;
  for (const victim_config& c : {config, lease_workspace}) {
    const std::string table = "per-kernel, " + describe(c);
    for (int r = 0; r < b.repeats; ++r) {
      (void)release_device(b);
      auto lease = b.gpu.acquire();
      victim v(lease, c);
      for (const auto& [label, ms] : v.per_kernel_ms(50)) add(out, table, label, "clean", ms);
      disturb_with_gemms(lease);
      for (const auto& [label, ms] : v.per_kernel_ms(50)) add(out, table, label, "disturbed", ms);
    }
  }
  (void)release_device(b);
  return out;
}

std::vector<figure> sentinel_sizes(bench_context& b) {
  namespace md = coolbench::measure::detail;
  std::vector<figure> out;
  constexpr int steps = 2000;
  for (int r = 0; r < b.repeats; ++r) {
    for (const std::size_t kib : {16, 32, 64, 128, 256}) {
      (void)release_device(b);
      auto lease = b.gpu.acquire();
      int sms = 0;
      COOLBENCH_CUDA_CALL(
          cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, lease.ordinal()));
      const std::size_t bytes = kib * 1024;
      auto table = lease.allocate(bytes);
      auto sink = lease.allocate(static_cast<std::size_t>(sms) * 256 * 4);
      std::vector<CUevent_st*> events;
      for (int i = 0; i <= 50; ++i) events.push_back(lease.create_event());
      auto* t = static_cast<std::uint32_t*>(table.get());
      auto* s = static_cast<std::uint32_t*>(sink.get());
      md::fill_sentinel_table(t, bytes, lease.stream());
      auto median = [&] {
        auto ms = md::time_sentinel(t, bytes, s, sms, steps, 5, 50, lease.stream(), events);
        std::nth_element(ms.begin(), ms.begin() + 25, ms.end());
        return ms[25];
      };
      const std::string row = std::to_string(kib) + " KiB table";
      add(out, "sentinel table size", row, "clean", median());
      disturb_with_gemms(lease);
      add(out, "sentinel table size", row, "after the bf16 GEMMs", median());
      (void)dev::touch_from_another_process(lease.ordinal());
      add(out, "sentinel table size", row, "after a touch", median());
    }
  }
  (void)release_device(b);
  return out;
}

namespace {

/// One repeat of the isolations after disturbance `d`, each measured on a victim
/// disturbed again first; the costs in seconds.
void isolation_repeat(bench_context& b, const victim_config& c, disturbance d,
                      std::vector<figure>& out) {
  const std::string table = "isolation";
  const std::string row = name_of(d);
  const bool control = d == disturbance::shared_100 || d == disturbance::shared_48;
  (void)release_device(b);
  {
    auto lease = b.gpu.acquire();
    std::optional<victim> v;
    v.emplace(lease, c);
    auto measure = [&](const char* column) {
      add(out, table, row, column, v->median_ms(b.warmups, b.replays));
    };
    measure("clean");
    disturb(lease, d);
    measure("none");
    if (control) return;
    add(out, "cost", "touch", "s", dev::touch_from_another_process(lease.ordinal()), "s");
    measure("touch");
    disturb(lease, d);
    (void)run_command(b.self + " --child-driver-only");
    measure("driver-only child");
    disturb(lease, d);
    run_max_l1_kernel(lease);
    measure("max-L1 kernel");
    disturb(lease, d);
    v.reset();
    v.emplace(lease, c);
    measure("rebuilt, same context");
    disturb(lease, d);
  }
  const auto start = steady::now();
  (void)release_device(b);
  {
    auto lease = b.gpu.acquire();
    victim v(lease, c);
    add(out, "cost", "release + re-acquire + rebuild", "s", seconds_since(start), "s");
    add(out, table, row, "release", v.median_ms(b.warmups, b.replays));
    disturb(lease, d);
  }
  const auto spawned = steady::now();
  const std::string answer = run_command(b.self + " --child-measure " +
                                         (c.compute == gemm_compute::fp16 ? "fp16" : "fp32"));
  add(out, "cost", "fresh process (build + measure)", "s", seconds_since(spawned), "s");
  add(out, table, row, "process", std::stod(answer));
}

}  // namespace

std::vector<figure> isolation_table(bench_context& b, const victim_config& c) {
  std::vector<figure> out;
  for (int r = 0; r < b.repeats; ++r) {
    for (const disturbance d : {disturbance::gemms, disturbance::shared_200,
                                disturbance::shared_100, disturbance::shared_48}) {
      isolation_repeat(b, c, d, out);
    }
  }
  (void)release_device(b);
  return out;
}

void profile_passes(bench_context& b, const victim_config& c) {
  (void)release_device(b);
  auto lease = b.gpu.acquire();
  victim v(lease, c);
  (void)v.per_kernel_ms(1);
  disturb_with_gemms(lease);
  (void)v.per_kernel_ms(1);
}

int child_measure(int ordinal, const victim_config& config, int warmups, int replays) {
  auto& gpu = dev::device::get(ordinal);
  double ms = 0;
  {
    auto lease = gpu.acquire();
    victim v(lease, config);
    ms = v.median_ms(warmups, replays);
  }
  std::printf("%.6f\n", ms);
  return 0;
}

int child_driver_only() {
  // cuInit and a device query: the driver is loaded, no context is made.
  if (cuInit(0) != CUDA_SUCCESS) return 1;
  int count = 0;
  return cuDeviceGetCount(&count) == CUDA_SUCCESS && count > 0 ? 0 : 1;
}

std::string run_command(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) throw coolbench::error("cannot run " + command);
  std::string out;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
  if (pclose(pipe) != 0) throw coolbench::error(command + " failed: " + out);
  return out;
}

}  // namespace order_effect
