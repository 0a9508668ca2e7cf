// A simulated GPU for the protocol's tests, on a virtual clock: it heats while
// work runs and cools while idle (first-order, toward ambient), a
// power-bound workload hits the power cap after 60 ms of continuous running
// (docs/facts-h200.md §2) and the clock falls, and past a temperature the clock
// derates. Latency follows the clock. Telemetry is read on a fixed grid like
// the sampler's. Everything is deterministic.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "coolbench/core/error.hpp"
#include "coolbench/measure/protocol.hpp"
#include "coolbench/telemetry/clock_reasons.hpp"

namespace coolbench::measure::sim {

struct gpu_model {
  double ambient_c = 35;      ///< where it cools to
  double start_c = 38;        ///< temperature at t = 0
  double heat_c_per_s = 0;    ///< rise while running (latency-bound: ~0)
  double steady_c = 80;       ///< running does not heat beyond this
  double cool_tau_s = 4;      ///< time constant of cooling while idle
  double base_ms = 0.4;       ///< latency at the maximum clock, cold
  unsigned max_clock = 1980;  ///< MHz
  bool power_bound = false;   ///< the cap bites after cap_after_ms of running
  double cap_after_ms = 60;
  double cap_clock_fraction = 0.85;
  double derate_from_c = 60;    ///< thermal derating of the clock starts here
  double derate_per_c = 0.004;  ///< fraction of the clock lost per °C above
  double host_gap_ms = 0.01;    ///< host time between runs
  double jitter_ms = 0;         ///< each run takes up to this much longer (fixed sequence)
  double tick_ms = 0;           ///< the timer reports multiples of this (0: exact)
  std::int64_t period_ns = 20'000'000;
  /// NVML reports the state this late (the H200's power cap showed 8 to
  /// 60 ms after the latency rose).
  std::int64_t report_lag_ns = 0;
  double idle_w = 80, busy_w = 400;
  /// The energy counter moves only every this long (NVML's counter has an update period of
  /// its own); 0: it is exact at every reading.
  std::int64_t energy_update_ns = 0;
  /// Telemetry reads the energy counter only at multiples of this (the protocol reads it about
  /// once a second); 0: at every sample.
  std::int64_t energy_read_every_ns = 0;
  /// Reads on odd ticks of the grid see the energy counter this much after their time stamp
  /// (an NVML call that waited behind another GPU's); 0: every read sees it at its stamp.
  std::int64_t energy_late_on_odd_ticks_ns = 0;
  /// The HW thermal and power-brake counters are read only at multiples of this (the
  /// protocol's slowest tier, every second); the other samples leave them unread. 0: not
  /// read at all (unsupported).
  std::int64_t hw_counters_every_ns = 0;
  /// The HW power brake engages for 1 ms once every this long, from hw_brake_offset_ns on,
  /// which only its time counter shows; 0: never. A run that starts while it is engaged
  /// takes hw_brake_slowdown times as long.
  std::int64_t hw_brake_every_ns = 0;
  std::int64_t hw_brake_offset_ns = 0;
  double hw_brake_slowdown = 1.0;
  /// Latency factor of each CUDA context, in turn (context k after k device
  /// releases gets entry k mod size): the H200's per-context levels, which
  /// no sensor shows. Empty: 1.
  std::vector<double> context_levels;
};

/// The simulated GPU and its clock; the workload and the environment share it.
class gpu {
 public:
  explicit gpu(gpu_model model) : m(model), m_temp(model.start_c) { snapshot(); }

  gpu_model m;

  [[nodiscard]] std::int64_t now() const { return m_now; }
  [[nodiscard]] double temp() const { return m_temp; }
  int prepares = 0;
  int releases = 0;
  int device_releases = 0;
  /// Hidden state (docs/measure.md): set by a workload whose runs leave it, or by a test; a
  /// release or an isolation clears it. The workload's own latency does not see it.
  bool hidden_state = false;
  bool runs_leave_hidden_state = false;

  [[nodiscard]] unsigned clock() const {
    double c = m.max_clock;
    if (m.power_bound && m_running_ms >= m.cap_after_ms) c *= m.cap_clock_fraction;
    if (m_temp > m.derate_from_c)
      c *= std::max(0.5, 1 - m.derate_per_c * (m_temp - m.derate_from_c));
    return static_cast<unsigned>(c);
  }

  [[nodiscard]] std::uint64_t reasons() const {
    std::uint64_t r = 0;
    if (m.power_bound && m_running_ms >= m.cap_after_ms) {
      r |= static_cast<std::uint64_t>(telemetry::clock_reason::sw_power_cap);
    }
    if (m_temp > m.derate_from_c)
      r |= static_cast<std::uint64_t>(telemetry::clock_reason::sw_thermal);
    return r;
  }

  /// One run: latency from the clock at its start; heats; returns the timing.
  timing run() {
    idle_for(m.host_gap_ms);
    timing t;
    t.start_ns = m_now;
    // Jitter from a fixed sequence (a Weyl sequence: uniform, repeatable).
    m_jitter_phase = std::fmod(m_jitter_phase + 0.6180339887498949, 1.0);
    const double level =
        m.context_levels.empty()
            ? 1.0
            : m.context_levels[static_cast<std::size_t>(device_releases) % m.context_levels.size()];
    const bool braked = m.hw_brake_every_ns > 0 && m_now >= m.hw_brake_offset_ns &&
                        (m_now - m.hw_brake_offset_ns) % m.hw_brake_every_ns < 1'000'000;
    const double ms =
        (braked ? m.hw_brake_slowdown : 1.0) * level * m.base_ms * m.max_clock / clock() +
        m.jitter_ms * m_jitter_phase;
    advance(ms, true);
    t.end_ns = m_now;
    t.latency_ms = m.tick_ms > 0 ? std::round(ms / m.tick_ms) * m.tick_ms : ms;
    return t;
  }

  void idle_for(double ms) { advance(ms, false); }

  /// Telemetry on the grid k * period_ns within [from, to] (and <= now).
  [[nodiscard]] std::vector<telemetry::gpu_sample> between(std::int64_t from,
                                                           std::int64_t to) const {
    std::vector<telemetry::gpu_sample> out;
    const std::int64_t last = std::min(to, m_now);
    for (std::int64_t t =
             std::max<std::int64_t>(0, (from + m.period_ns - 1) / m.period_ns) * m.period_ns;
         t <= last; t += m.period_ns) {
      out.push_back(at(t));
    }
    return out;
  }

  [[nodiscard]] telemetry::gpu_sample latest() const {
    return at(m_now / m.period_ns * m.period_ns);
  }

  /// The energy counter as a read at t sees it.
  [[nodiscard]] telemetry::reading<std::uint64_t> energy_at(std::int64_t t) const {
    const std::int64_t seen = t - m.report_lag_ns;
    const std::int64_t moved =
        m.energy_update_ns > 0 ? seen / m.energy_update_ns * m.energy_update_ns : seen;
    return telemetry::reading<std::uint64_t>::of(
        static_cast<std::uint64_t>(state_at(moved).energy_mj));
  }

 private:
  struct state {
    std::int64_t time;
    double temp;
    unsigned clock;
    std::uint64_t reasons;
    double power;
    double energy_mj;
    double cap_ns;
  };

  void advance(double ms, bool running) {
    // In small steps so the cap and the temperature change inside long idles.
    while (ms > 0) {
      const double step = std::min(ms, 5.0);
      if (running) {
        m_running_ms += step;
        m_temp = std::min(m.steady_c, m_temp + m.heat_c_per_s * step / 1000);
        if (reasons() & static_cast<std::uint64_t>(telemetry::clock_reason::sw_power_cap)) {
          m_cap_ns += step * 1e6;
        }
      } else {
        if (step > 1) m_running_ms = 0;  // an idle gap resets the power average
        m_temp = m.ambient_c + (m_temp - m.ambient_c) * std::exp(-step / 1000 / m.cool_tau_s);
      }
      m_energy_mj += (running ? m.busy_w : m.idle_w) * step;  // W * ms = mJ
      m_now += static_cast<std::int64_t>(step * 1e6);
      ms -= step;
      snapshot(running);
    }
  }

  void snapshot(bool running = false) {
    m_history.push_back(
        {m_now, m_temp, clock(), reasons(), running ? m.busy_w : m.idle_w, m_energy_mj, m_cap_ns});
  }

  [[nodiscard]] const state& state_at(std::int64_t t) const {
    auto it = std::upper_bound(m_history.begin(), m_history.end(), t,
                               [](std::int64_t x, const state& s) { return x < s.time; });
    return it == m_history.begin() ? m_history.front() : *std::prev(it);
  }

  [[nodiscard]] telemetry::gpu_sample at(std::int64_t t) const {
    // The last state at or before t, as reported report_lag_ns late.
    const std::int64_t seen = t - m.report_lag_ns;
    const state& s = state_at(seen);
    telemetry::gpu_sample g;
    g.time_ns = t;
    g.temp_gpu_c = telemetry::reading<int>::of(static_cast<int>(std::lround(s.temp)));
    g.clock_sm_mhz = telemetry::reading<unsigned>::of(s.clock);
    g.clock_reasons = telemetry::reading<std::uint64_t>::of(s.reasons);
    g.power_w = telemetry::reading<double>::of(s.power);
    const bool energy_read = m.energy_read_every_ns == 0 || t % m.energy_read_every_ns == 0;
    const std::int64_t late = (t / m.period_ns) % 2 != 0 ? m.energy_late_on_odd_ticks_ns : 0;
    g.energy_mj = energy_read ? energy_at(t + late) : telemetry::reading<std::uint64_t>::skipped();
    g.reason_counters.sw_power_cap_ns =
        telemetry::reading<std::uint64_t>::of(static_cast<std::uint64_t>(s.cap_ns));
    g.reason_counters.sw_thermal_ns = telemetry::reading<std::uint64_t>::of(0);
    if (m.hw_counters_every_ns > 0) {
      using counter = telemetry::reading<std::uint64_t>;
      const bool read = t % m.hw_counters_every_ns == 0;
      const std::int64_t brakes = m.hw_brake_every_ns > 0 && seen >= m.hw_brake_offset_ns
                                      ? (seen - m.hw_brake_offset_ns) / m.hw_brake_every_ns + 1
                                      : 0;
      g.reason_counters.hw_thermal_ns = read ? counter::of(0) : counter::skipped();
      g.reason_counters.hw_power_brake_ns =
          read ? counter::of(static_cast<std::uint64_t>(brakes) * 1'000'000) : counter::skipped();
    }
    return g;
  }

  std::int64_t m_now = 0;
  double m_temp;
  double m_running_ms = 0;
  double m_jitter_phase = 0;
  double m_energy_mj = 0;
  double m_cap_ns = 0;
  std::vector<state> m_history;
};

class workload final : public measure::workload {
 public:
  explicit workload(gpu& g) : m_gpu(g) {}
  std::string describe() const override { return "simulated"; }
  std::optional<int> device() const override { return 0; }
  void prepare() override {
    if (!m_prepared) {
      if (refuse_prepare) throw invalid_argument("input 'x': dimension 0 is the symbol 'batch'");
      if (fail_prepare_at > 0 && m_gpu.prepares + 1 >= fail_prepare_at) {
        throw cuda_error("cudaMalloc of 1.00 GiB failed: cudaErrorMemoryAllocation (out of memory)",
                         2);
      }
      ++m_gpu.prepares;
    }
    m_prepared = true;
  }
  timing run() override {
    prepare();
    if (fail_run_after >= 0 && m_runs >= fail_run_after) {
      throw cuda_error(
          "cudaStreamSynchronize failed: cudaErrorDevicesUnavailable (the GPU fell "
          "off the bus)",
          46);
    }
    ++m_runs;
    if (m_gpu.runs_leave_hidden_state) m_gpu.hidden_state = true;
    return m_gpu.run();
  }

  /// Failure injection: every run after this many throws (the GPU is gone);
  /// -1 never.
  int fail_run_after = -1;
  /// The n-th acquisition (1 = the first prepare) runs out of memory; 0 never.
  int fail_prepare_at = 0;
  /// prepare() refuses what it was given (an unbound model dimension).
  bool refuse_prepare = false;
  /// What warnings() says while prepared (a model's nodes on a slower path); as a
  /// session's, gone once released.
  std::vector<std::string> own_warnings;
  std::vector<std::string> warnings() const override {
    return m_prepared ? own_warnings : std::vector<std::string>{};
  }
  void release() override {
    if (m_prepared) ++m_gpu.releases;
    m_prepared = false;
  }

 private:
  gpu& m_gpu;
  bool m_prepared = false;
  int m_runs = 0;
};

class environment final : public measure::environment {
 public:
  explicit environment(gpu& g) : m_gpu(g) {
    m_identity.name = "Simulated H200";
    m_identity.clock_sm_max_mhz = telemetry::reading<unsigned>::of(g.m.max_clock);
    m_identity.temp_slowdown_c = telemetry::reading<int>::of(89);
  }
  std::int64_t now_ns() override { return m_gpu.now(); }
  void sleep_for(std::chrono::nanoseconds d) override {
    m_gpu.idle_for(static_cast<double>(d.count()) / 1e6);
  }
  run_conditions conditions() override {
    run_conditions c;
    if (!host_only) c.gpu = m_identity;
    return c;
  }
  std::optional<telemetry::gpu_sample> latest() override { return m_gpu.latest(); }
  std::vector<telemetry::gpu_sample> between(std::int64_t from, std::int64_t to) override {
    return m_gpu.between(from, to);
  }
  std::chrono::nanoseconds telemetry_period() const override {
    return std::chrono::nanoseconds(m_gpu.m.period_ns);
  }
  bool resets_context() const override { return !keep_context; }
  std::string release_device() override {
    if (keep_context) return "release: none, the context is kept";
    if (releases_before_failing >= 0 && m_gpu.device_releases >= releases_before_failing) {
      throw cuda_error("cuDevicePrimaryCtxReset failed: CUDA_ERROR_UNKNOWN", 999);
    }
    ++m_gpu.device_releases;
    m_gpu.hidden_state = false;
    m_gpu.idle_for(80);  // a release costs about 80 ms (docs/perf/release.md)
    return "release: simulated";
  }
  /// The sentinel: its clean figure, 9.3 % more in hidden state, a ±0.1 % wobble; with
  /// `sentinel_lottery`, each context draws a level of its own as a latency-bound chain does
  /// (docs/perf/thermal.md): 0, +2.5 % or -1.5 % in turn, one per release.
  std::optional<sentinel_reading> check_sentinel(sentinel_kind kind) override {
    if (!sentinel_clean_ms || kind == sentinel_kind::none) return std::nullopt;
    ++sentinel_checks;
    const double wobble = 1 + 0.001 * ((sentinel_checks % 3) - 1);
    const auto context = static_cast<std::uint64_t>(m_gpu.device_releases + isolation_releases);
    const double levels[] = {0, 0.025, -0.015};
    const double level = sentinel_lottery ? levels[context % 3] : 0;
    m_gpu.idle_for(2);
    return sentinel_reading{
        *sentinel_clean_ms * (m_gpu.hidden_state ? 1.093 : 1.0) * (1 + level) * wobble, context};
  }
  bool sentinel_lottery = false;
  /// The sampler's start-up probe (energy_probe_options), run over this GPU's counter read at
  /// every telemetry tick from t = 0; or `probe_result` as given.
  std::optional<telemetry::energy_probe_result> energy_counter_probe() override {
    if (probe_result || !probe) return probe_result;
    telemetry::energy_period_probe p(*probe);
    for (std::int64_t t = 0; t <= m_gpu.now() && !p.done(); t += m_gpu.m.period_ns) {
      (void)p.add(
          t, probe_reads_fail ? telemetry::reading<std::uint64_t>::failed() : m_gpu.energy_at(t));
    }
    return p.result();
  }
  std::optional<telemetry::energy_probe_options> probe;
  std::optional<telemetry::energy_probe_result> probe_result;
  bool probe_reads_fail = false;

  std::string isolate(isolation how) override {
    if (how == isolation::none || how == isolation::process) return {};
    if (how == isolation::release && keep_context) return {};
    isolations.push_back(to_string(how));
    if (!isolation_fails) m_gpu.hidden_state = false;
    if (how == isolation::release) ++isolation_releases;  // a new context, as a device release
    m_gpu.idle_for(how == isolation::touch ? 220 : 80);
    return "isolation " + to_string(how) + ": simulated";
  }

  /// The sentinel's clean figure; empty: the environment has no sentinel (the default).
  std::optional<double> sentinel_clean_ms;
  int sentinel_checks = 0;
  int isolation_releases = 0;           ///< contexts made anew by isolation::release
  std::vector<std::string> isolations;  ///< the isolations done, in order
  bool isolation_fails = false;         ///< an isolation that leaves the state
  bool interrupted() override { return interrupt_after >= 0 && ++m_polls > interrupt_after; }

  /// Report no GPU, as for a workload on the host (the CPU backend).
  bool host_only = false;
  /// Never reset the context, as for code whose framework holds it
  /// (context_release::keep).
  bool keep_context = false;
  int interrupt_after = -1;  ///< polls before interrupted() turns true; -1 never
  /// Releases that work before every later one throws (the GPU is gone); -1 never.
  int releases_before_failing = -1;

 private:
  gpu& m_gpu;
  telemetry::gpu_identity m_identity;
  int m_polls = 0;
};

}  // namespace coolbench::measure::sim
