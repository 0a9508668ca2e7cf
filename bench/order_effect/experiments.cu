#include "experiments.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <optional>

#include "coolbench/measure/hidden_state.hpp"
#include "coolbench/telemetry.hpp"
#include "core/cuda_check.hpp"
#include "measure/detail/sentinel.hpp"
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
void disturb(dev::lease& lease, disturbance d, disturb_stream where) {
  if (d == disturbance::gemms) disturb_with_gemms(lease, where);
  if (d == disturbance::shared_200) disturb_with_shared_memory(lease, 200, where);
  if (d == disturbance::shared_100) disturb_with_shared_memory(lease, 100, where);
  if (d == disturbance::shared_48) disturb_with_shared_memory(lease, 48, where);
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
  using s = victim_stream;
  using d = disturb_stream;
  // Run on the GPU, 2026-12-04 (docs/perf/hidden-state.md): fp16/fp32 GEMMs, each cuBLAS
  // workspace, the lease's or a blocking stream, disturbed on the lease's or the legacy stream,
  // with and without max-L1 hints: none slowed. Left here: the disturbance done as the
  // reference program does it (raw), against the lease's.
  const std::pair<victim_config, disturb_stream> configs[] = {
      {{g::fp16, h::none, w::lease, s::blocking, {}}, d::raw},
      {{g::fp16, h::none, w::library, s::blocking, {}}, d::raw},
      {{g::fp16, h::none, w::lease, s::lease, {}}, d::raw},
      {{g::fp16, h::none, w::lease, s::blocking, {}}, d::legacy}};
  std::vector<figure> out;
  for (int r = 0; r < b.repeats; ++r) {
    for (const auto& [c, where] : configs) {
      (void)release_device(b);
      auto lease = b.gpu.acquire();
      victim v(lease, c);
      if (r == 0 && c.compute == g::fp32) print_kernels(c, v.kernels());
      const std::string row =
          describe(c) + (where == d::legacy ? ", disturbed on the legacy stream"
                         : where == d::raw  ? ", disturbed as the reference does"
                                            : ", disturbed on the lease's stream");
      add(out, "victims", row, "clean", v.median_ms(b.warmups, b.replays));
      disturb_with_gemms(lease, where);
      add(out, "victims", row, "after the bf16 GEMMs", v.median_ms(b.warmups, b.replays));
      (void)dev::touch_from_another_process(lease.ordinal());
      add(out, "victims", row, "after a touch", v.median_ms(b.warmups, b.replays));
      disturb_with_shared_memory(lease, 200, where);
      add(out, "victims", row, "after 200 KB", v.median_ms(b.warmups, b.replays));
    }
  }
  (void)release_device(b);
  return out;
}

namespace {

constexpr int knobs = 6;

/// Moves knob `knob` (0 input copy, 1 data range, 2 data flow, 3 replays per event, 4 a
/// host wait per interval, 5 cudaMalloc'd memory) of `f` to the reference program's side, or
/// back to this victim's.
void set_knob(victim_form& f, int knob, bool reference_side) {
  switch (knob) {
    case 0: f.input_copy = !reference_side; break;
    case 1: f.wide_data = reference_side; break;
    case 2: f.in_place = reference_side; break;
    case 3: f.launches_per_event = reference_side ? 10 : 1; break;
    case 4: f.sync_each = reference_side; break;
    default: f.raw_memory = reference_side; break;
  }
}

/// The forms the bisection measures: this victim's, each knob alone, the reference's, and
/// the reference's less each knob.
std::vector<victim_form> forms_to_bisect() {
  victim_form reference{};
  for (int knob = 0; knob < knobs; ++knob) set_knob(reference, knob, true);
  std::vector<victim_form> forms{victim_form{}};
  for (int knob = 0; knob < knobs; ++knob) {
    victim_form one{};
    set_knob(one, knob, true);
    victim_form all_but = reference;
    set_knob(all_but, knob, false);
    forms.push_back(one);
    forms.push_back(all_but);
  }
  forms.push_back(reference);
  return forms;
}

/// NVML as the protocol uses it: a full sample (energy and the throttle counters included)
/// and the process list. If a driver call of this kind clears the state as another
/// process's context does, the protocol's own sampler would hide the effect.
void read_nvml(const coolbench::telemetry::gpu_telemetry& telemetry) {
  (void)telemetry.read(coolbench::telemetry::read_scope::all);
  (void)telemetry.processes();
}

}  // namespace

std::vector<figure> bisect_forms(bench_context& b, const victim_config& config) {
  const coolbench::telemetry::gpu_telemetry telemetry(b.gpu.ordinal());
  std::vector<figure> out;
  const auto forms = forms_to_bisect();
  for (int r = 0; r < b.repeats; ++r) {
    for (const victim_form& form : forms) {
      victim_config c = config;
      c.form = form;
      (void)release_device(b);
      auto lease = b.gpu.acquire();
      victim v(lease, c);
      const std::string row = to_spec(c);
      auto measure = [&](const char* column) {
        add(out, "victim forms", row, column, v.median_ms(b.warmups, b.replays));
      };
      measure("clean");
      disturb_with_shared_memory(lease, 200, b.disturb_on);
      measure("after 200 KB");
      read_nvml(telemetry);
      measure("after NVML reads");
      disturb_with_gemms(lease, b.disturb_on);
      measure("after the bf16 GEMMs");
      (void)dev::touch_from_another_process(lease.ordinal());
      measure("after a touch");
    }
  }
  (void)release_device(b);
  return out;
}

std::vector<figure> per_kernel(bench_context& b, const victim_config& config) {
  std::vector<figure> out;
  victim_config lease_workspace = config;
  lease_workspace.workspace = blas_workspace::lease;
  std::vector<victim_config> configs{config};
  if (config.workspace != blas_workspace::lease) configs.push_back(lease_workspace);
  for (const victim_config& c : configs) {
    const std::string table = "per-kernel, " + describe(c);
    for (int r = 0; r < b.repeats; ++r) {
      (void)release_device(b);
      auto lease = b.gpu.acquire();
      victim v(lease, c);
      const std::string graphs = "per-operation graphs, " + describe(c);
      for (const auto& [label, ms] : v.per_kernel_ms(50)) add(out, table, label, "clean", ms);
      for (const auto& [label, ms] : v.per_op_graph_ms(b.warmups, b.replays))
        add(out, graphs, label, "clean", ms);
      disturb_with_shared_memory(lease, 200, b.disturb_on);
      for (const auto& [label, ms] : v.per_op_graph_ms(b.warmups, b.replays))
        add(out, graphs, label, "after 200 KB", ms);
      disturb_with_gemms(lease, b.disturb_on);
      for (const auto& [label, ms] : v.per_kernel_ms(50)) add(out, table, label, "disturbed", ms);
      for (const auto& [label, ms] : v.per_op_graph_ms(b.warmups, b.replays))
        add(out, graphs, label, "after the bf16 GEMMs as well", ms);
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
      disturb_with_gemms(lease, b.disturb_on);
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
    disturb(lease, d, b.disturb_on);
    measure("none");
    if (control) return;
    add(out, "cost", "touch", "s", dev::touch_from_another_process(lease.ordinal()), "s");
    measure("touch");
    disturb(lease, d, b.disturb_on);
    (void)run_command(b.self + " --ordinal " + std::to_string(b.gpu.ordinal()) +
                      " --child-driver-only");
    measure("driver-only child");
    disturb(lease, d, b.disturb_on);
    run_max_l1_kernel(lease);
    measure("max-L1 kernel");
    disturb(lease, d, b.disturb_on);
    v.reset();
    v.emplace(lease, c);
    measure("rebuilt, same context");
    disturb(lease, d, b.disturb_on);
  }
  const auto start = steady::now();
  (void)release_device(b);
  {
    auto lease = b.gpu.acquire();
    victim v(lease, c);
    add(out, "cost", "release + re-acquire + rebuild", "s", seconds_since(start), "s");
    add(out, table, row, "release", v.median_ms(b.warmups, b.replays));
    disturb(lease, d, b.disturb_on);
  }
  const auto spawned = steady::now();
  // The child builds the same victim: the whole specification, not only its GEMMs (the
  // first isolation run passed "fp16" alone, and its child measured another victim).
  const std::string answer =
      run_command(b.self + " --ordinal " + std::to_string(b.gpu.ordinal()) + " --replays " +
                  std::to_string(b.replays) + " --child-measure " + to_spec(c));
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

std::vector<figure> detection_trials(bench_context& b, const victim_config& config, int trials) {
  namespace cm = coolbench::measure;
  const coolbench::telemetry::gpu_telemetry telemetry(b.gpu.ordinal());
  auto sensors = [&] {
    const auto s = telemetry.read(coolbench::telemetry::read_scope::fast);
    cm::sensor_reading r;
    if (s.temp_gpu_c.ok()) r.temp_c = s.temp_gpu_c.value;
    if (s.clock_sm_mhz.ok()) r.sm_clock_mhz = s.clock_sm_mhz.value;
    if (s.clock_reasons.ok()) r.clock_reasons = s.clock_reasons.value;
    return r;
  };
  std::vector<figure> out;
  // The two sentinels, then the victim itself checked the same way (held in its context for
  // the trial): the victim is known to move (on the H100), so its row says whether a sentinel
  // that stays flat missed the state or the state was not there.
  enum class checker { gemm_chain, l1_walk, victim };
  for (const auto who : {checker::gemm_chain, checker::l1_walk, checker::victim}) {
    const bool is_victim = who == checker::victim;
    const auto kind =
        who == checker::l1_walk ? cm::sentinel_kind::l1_walk : cm::sentinel_kind::gemm_chain;
    const std::string table = is_victim ? "detection, the victim " + describe(config)
                                        : "detection, " + cm::to_string(kind) + " sentinel";
    std::optional<cm::detail::sentinel> sentinel;
    if (!is_victim) sentinel.emplace(b.gpu.ordinal(), kind);
    for (int t = 0; t < trials; ++t) {
      (void)release_device(b);
      std::optional<dev::lease> victim_lease;
      std::optional<victim> v;
      if (is_victim) {
        victim_lease.emplace(b.gpu.acquire());
        v.emplace(*victim_lease, config);
        if (t == 0) print_kernels(config, v->kernels());
      }
      auto check_ms = [&] {
        return is_victim ? v->median_ms(b.warmups, b.replays / 2) : sentinel->check_ms();
      };
      std::vector<double> medians;
      for (int i = 0; i < 5; ++i) medians.push_back(check_ms());
      const auto calibration = cm::calibrate_sentinel(medians, sensors());
      add(out, table, "calibration", "sentinel", calibration.median_ms);
      add(out, table, "calibration", "noise", calibration.noise, "");
      auto trial = [&](const char* row) {
        const auto c = cm::judge_sentinel(calibration, check_ms(), sensors(), row);
        std::printf("%s, trial %d, %s: %s\n", table.c_str(), t + 1, row, c.summary().c_str());
        std::fflush(stdout);
        add(out, table, row, "sentinel", c.median_ms);
        add(out, table, row, "shift", c.shift, "");
        add(out, table, row, "flagged", c.hidden_state() ? 1 : 0, "");
      };
      trial("clean");
      {
        auto lease = b.gpu.acquire();
        disturb_with_shared_memory(lease, 200, b.disturb_on);
      }
      trial("after the 200 KB kernel");
      {
        auto lease = b.gpu.acquire();
        disturb_with_gemms(lease, b.disturb_on);
      }
      trial("after the bf16 GEMMs as well");
      (void)dev::touch_from_another_process(b.gpu.ordinal());
      trial("after a touch");
      v.reset();  // before its lease, and the lease before the next release
      victim_lease.reset();
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
  disturb_with_gemms(lease, b.disturb_on);
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

int child_disturb(int ordinal, const std::string& what) {
  auto& gpu = dev::device::get(ordinal);
  auto lease = gpu.acquire();
  if (what == "smem100" || what == "smem200")
    disturb_with_shared_memory(lease, what == "smem100" ? 100 : 200, disturb_stream::raw);
  else if (what == "gemms")
    disturb_with_gemms(lease, disturb_stream::raw);
  else
    throw coolbench::error("--child-disturb takes smem100, smem200 or gemms, not '" + what + "'");
  return 0;
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
