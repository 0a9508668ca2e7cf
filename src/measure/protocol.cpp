// The measurement protocol: gate, warm up, sample with telemetry, detect
// throttling, stop on a confidence interval; the cold, sustained and profile
// modes and the three baseline policies (docs/measure.md).
#include "coolbench/measure/protocol.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <span>
#include <sstream>
#include <stdexcept>

#include "coolbench/stats.hpp"
#include "coolbench/telemetry/clock_reasons.hpp"

namespace coolbench::measure {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

constexpr std::int64_t k_ns_per_ms = 1'000'000;
constexpr std::int64_t k_ns_per_s = 1'000'000'000;

double seconds_between(std::int64_t from_ns, std::int64_t to_ns) {
  return static_cast<double>(to_ns - from_ns) / static_cast<double>(k_ns_per_s);
}

std::int64_t to_ns(milliseconds d) { return d.count() * k_ns_per_ms; }

/// The run stopped for a reason the result reports (interrupt, gate time-out);
/// not an error of the caller.
struct stop_run {
  std::string reason;
  std::string error;
};

latency_summary summarize_latencies(const std::vector<double>& values) {
  latency_summary out;
  if (values.empty()) return out;
  const stats::summary s = stats::summarize(values);
  out.count = static_cast<int>(s.count);
  out.median_ms = s.median;
  out.mean_ms = s.mean;
  out.min_ms = s.min;
  out.max_ms = s.max;
  out.p90_ms = s.p90;
  out.p99_ms = s.p99;
  out.cv = s.cv;
  return out;
}

bool counters_moved(const telemetry::clock_reason_counters& before,
                    const telemetry::clock_reason_counters& after) {
  const auto moved = [](const telemetry::reading<std::uint64_t>& a,
                        const telemetry::reading<std::uint64_t>& b) {
    return a.ok() && b.ok() && b.value > a.value;
  };
  return moved(before.sw_power_cap_ns, after.sw_power_cap_ns) ||
         moved(before.sw_thermal_ns, after.sw_thermal_ns) ||
         moved(before.hw_thermal_ns, after.hw_thermal_ns) ||
         moved(before.hw_power_brake_ns, after.hw_power_brake_ns);
}

class runner {
 public:
  runner(workload& w, environment& env, const protocol_options& options,
         const progress_fn& progress)
      : m_w(w), m_env(env), m_o(options), m_progress(progress) {}

  run_result run() {
    m_start_ns = m_env.now_ns();
    m_r.workload = m_w.describe();
    m_r.options = m_o;
    // Baselines label only (nvbench's own rule discards); the protocol's
    // default depends on the mode: throttling is what sustained and profile
    // runs are about.
    m_action = m_o.policy != sampling_policy::coolbench
                   ? throttle_action::label
                   : m_o.on_throttle.value_or(m_o.mode == run_mode::cold ? throttle_action::discard
                                                                         : throttle_action::label);
    m_r.options.on_throttle = m_action;
    m_r.conditions = m_env.conditions();
    for (const auto& warning : m_r.conditions.warnings) say("warning: " + warning);
    if (m_r.conditions.gpu) {
      const auto& id = *m_r.conditions.gpu;
      if (id.clock_sm_max_mhz.ok()) m_max_clock = id.clock_sm_max_mhz.value;
      m_max_temp = m_o.max_temp_c.value_or(
          id.temp_slowdown_c.ok() ? static_cast<double>(id.temp_slowdown_c.value) - 10.0 : 80.0);
      if (!m_env.resets_context()) {
        // One context throughout: the configuration records what applied.
        m_r.options.contexts = 1;
        m_r.warnings.emplace_back(
            "the CUDA context was kept between bursts (release keep): the GPU cooled with the "
            "context held, and state that no sensor shows was not cleared between bursts; the "
            "figure is one context's (docs/measure.md, \"Contexts\")");
        say("warning: " + m_r.warnings.back());
      }
    } else {
      m_max_temp = m_o.max_temp_c.value_or(80.0);
      // Contexts are a GPU's: a host workload is one "context", and the
      // configuration records what applied, as it does for on_throttle.
      m_r.options.contexts = 1;
    }
    if (const auto s = m_env.latest(); s && s->temp_gpu_c.ok()) {
      m_r.conditions.start_temp_c = s->temp_gpu_c.value;
    }
    try {
      switch (m_o.policy) {
        case sampling_policy::naive:
        case sampling_policy::fixed_sleep:
        case sampling_policy::clock_discard: run_baseline(); break;
        case sampling_policy::coolbench:
          if (!m_r.conditions.gpu) {
            run_plain();  // a CPU workload: no GPU state to gate on
          } else if (m_o.mode == run_mode::cold) {
            run_cold();
          } else if (m_o.mode == run_mode::sustained) {
            run_sustained();
          } else {
            run_profile();
          }
          break;
      }
    } catch (const stop_run& stop) {
      m_r.stop_reason = stop.reason;
      m_r.error = stop.error;
      m_r.complete = false;
    } catch (const invalid_argument& e) {
      // The workload refused what it was given (a model input dimension
      // left unbound): the caller's to fix, not a failure of the run.
      m_r.stop_reason = "invalid input";
      m_r.error = e.what();
      m_r.complete = false;
    } catch (const std::exception& e) {
      m_r.stop_reason = "error";
      m_r.error = e.what();
      m_r.complete = false;
    }
    // Hand the GPU back whatever happened: the last step of every run.
    try {
      m_w.release();
      if (m_r.conditions.gpu) {
        m_r.final_release = m_env.release_device();
        say(m_r.final_release);
        if (m_env.resets_context()) ++m_r.releases;
      }
    } catch (const std::exception& e) {
      m_r.final_release = std::string("release failed: ") + e.what();
      if (m_r.error.empty()) m_r.error = std::string("releasing at the end: ") + e.what();
    }
    finish();
    return std::move(m_r);
  }

 private:
  // --- one sample ----------------------------------------------------------

  sample_conditions join(const timing& t) {
    sample_conditions c;
    if (!m_r.conditions.gpu) return c;
    const std::int64_t period = m_env.telemetry_period().count();
    const auto samples = m_env.between(t.start_ns - period, t.end_ns);
    for (const auto& s : samples) {
      ++c.telemetry_samples;
      if (s.temp_gpu_c.ok())
        c.temp_c = std::max(c.temp_c.value_or(s.temp_gpu_c.value), s.temp_gpu_c.value);
      if (s.clock_sm_mhz.ok()) {
        c.sm_clock_mhz =
            std::min(c.sm_clock_mhz.value_or(s.clock_sm_mhz.value), s.clock_sm_mhz.value);
      }
      if (s.power_w.ok())
        c.power_w = std::max(c.power_w.value_or(s.power_w.value), s.power_w.value);
      if (s.clock_reasons.ok()) c.reasons |= s.clock_reasons.value;
      if (m_last_counters && counters_moved(*m_last_counters, s.reason_counters)) {
        c.throttle_counter_moved = true;
      }
      if (s.reason_counters.sw_power_cap_ns.ok()) m_last_counters = s.reason_counters;
    }
    return c;
  }

  /// Why these conditions count as throttled, or empty.
  std::string throttle_reason(const sample_conditions& c, double clock_fraction) const {
    if (telemetry::is_throttling(c.reasons)) {
      std::string names;
      for (const auto& name :
           telemetry::clock_reason_names(c.reasons & telemetry::throttling_reason_mask())) {
        names += (names.empty() ? "" : ",") + name;
      }
      return names;
    }
    if (c.throttle_counter_moved) return "throttle time counter advanced";
    if (m_max_clock && c.sm_clock_mhz &&
        static_cast<double>(*c.sm_clock_mhz) < clock_fraction * static_cast<double>(*m_max_clock)) {
      std::ostringstream s;
      s << "SM clock " << *c.sm_clock_mhz << " < " << clock_fraction << " x " << *m_max_clock
        << " MHz";
      return s.str();
    }
    return {};
  }

  sample_record& take(sample_phase phase, int burst = 0) {
    if (m_env.interrupted()) throw stop_run{"interrupted", ""};
    sample_record s;
    s.time = m_w.run();
    s.phase = phase;
    s.burst = burst;
    if (m_new_context) {
      ++m_context;
      m_new_context = false;
    }
    s.context = m_context;
    s.conditions = join(s.time);
    s.throttle_reason = throttle_reason(s.conditions, m_o.clock_fraction);
    s.throttled = !s.throttle_reason.empty();
    s.kept = phase == sample_phase::measure && (!s.throttled || m_action == throttle_action::label);
    if (phase == sample_phase::warmup) ++m_r.warmup_runs;
    if (s.kept) {
      m_kept.push_back(s.time.latency_ms);
      m_kept_by_context[s.context].push_back(s.time.latency_ms);
    }
    m_r.samples.push_back(std::move(s));
    return m_r.samples.back();
  }

  /// Takes a sample out of the result after the fact (telemetry read later
  /// showed the state changed while it ran, or a baseline's rule says so).
  void discard(sample_record& s, const std::string& reason) {
    if (!s.throttled) {
      s.throttled = true;
      s.throttle_reason = reason;
    }
    if (!s.kept) return;
    s.kept = false;
    // Equal latencies are interchangeable for the statistics: drop the last.
    const auto drop = [&](std::vector<double>& kept) {
      const auto it = std::find(kept.rbegin(), kept.rend(), s.time.latency_ms);
      if (it != kept.rend()) kept.erase(std::next(it).base());
    };
    drop(m_kept);
    drop(m_kept_by_context[s.context]);
  }

  /// The same, under the policy: discard, or only label.
  void throttled_after_the_fact(sample_record& s, const std::string& reason) {
    if (m_action == throttle_action::discard) {
      discard(s, reason);
    } else if (!s.throttled) {
      s.throttled = true;
      s.throttle_reason = reason;
    }
  }

  // --- stopping ------------------------------------------------------------

  /// True when the run should stop; sets stop_reason. Spread over contexts,
  /// the CI is looked at only at the end of a context (`at_context_end`).
  bool should_stop(bool at_context_end = false) {
    const auto n = static_cast<int>(m_kept.size());
    const std::int64_t now = m_env.now_ns();
    if (n >= m_o.max_samples) return stop_with("max samples");
    if (now - m_start_ns >= to_ns(m_o.max_time)) return stop_with("max time");
    if (n < m_o.min_samples || now - m_measure_start_ns < to_ns(m_o.min_time)) return false;
    if (spread_over_contexts()) {
      if (!at_context_end) return false;
      const auto figures = context_figures();
      if (static_cast<int>(figures.size()) < m_o.contexts) return false;
      if (contexts_ci_met(figures)) {
        m_r.converged = true;
        return stop_with("converged");
      }
      return false;
    }
    // The CI costs a sort: check it on a growing stride, not every sample.
    if (n < m_next_ci_check) return false;
    m_next_ci_check = n + std::max(1, n / 20);
    if (ci_met()) {
      m_r.converged = true;
      return stop_with("converged");
    }
    return false;
  }

  bool ci_met() const { return median_ci_within_rel_ci(m_kept); }

  /// Whether the order-statistic CI of these samples' median is within rel_ci.
  [[nodiscard]] bool median_ci_within_rel_ci(const std::vector<double>& kept) const {
    try {
      const stats::median_interval ci = stats::median_ci_order_statistic(kept, m_o.ci_level);
      const double median = stats::median(kept);
      return median > 0 && (ci.upper - ci.lower) / 2 <= m_o.rel_ci * median;
    } catch (const invalid_argument&) {
      return false;  // too few samples for the level yet
    }
  }

  // --- contexts ----------------------------------------------------------------

  [[nodiscard]] bool spread_over_contexts() const {
    return m_o.contexts > 1 && m_o.policy == sampling_policy::coolbench &&
           m_o.mode == run_mode::cold && m_r.conditions.gpu.has_value() && m_env.resets_context() &&
           !m_bursts_end_by_state;
  }

  /// A burst ended because the GPU's state changed (a power-bound chain
  /// reaches the cap within ~60 ms): every burst then ends with a release
  /// anyway, so the samples already come from many contexts, and a burst is
  /// too short to give its context a figure of its own (on the H200 such
  /// burst medians spread 8.7 %, docs/perf/thermal.md). From here on the
  /// figure is the median of all kept samples, as with one context, and each
  /// gate re-warms with a few runs, not a full warm-up that would spend the
  /// cold state.
  void bursts_end_by_state_change() {
    if (m_bursts_end_by_state) return;
    m_bursts_end_by_state = true;
    say("bursts end when the GPU's state changes: each is a fresh context already; the figure "
        "is the median of all bursts' samples");
  }

  /// The contexts with at least context_min_samples kept samples, in order.
  [[nodiscard]] std::vector<context_figure> context_figures() const {
    std::vector<context_figure> out;
    for (const auto& [context, kept] : m_kept_by_context) {
      if (static_cast<int>(kept.size()) < m_o.context_min_samples) continue;
      out.push_back({context, static_cast<int>(kept.size()), stats::median(kept)});
    }
    return out;
  }

  [[nodiscard]] static std::vector<double> medians_of(const std::vector<context_figure>& figures) {
    std::vector<double> medians;
    medians.reserve(figures.size());
    for (const auto& f : figures) medians.push_back(f.median_ms);
    return medians;
  }

  [[nodiscard]] bool contexts_ci_met(const std::vector<context_figure>& figures) const {
    if (figures.size() < 2) return false;
    const stats::mean_interval ci = stats::mean_ci_student_t(medians_of(figures), m_o.ci_level);
    return ci.mean > 0 && (ci.upper - ci.lower) / 2 <= m_o.rel_ci * ci.mean;
  }

  /// Whether the current context has its share: context_min_samples kept
  /// and its own median's CI within rel_ci (checked on a growing stride).
  bool context_done() {
    const auto it = m_kept_by_context.find(m_context);
    if (it == m_kept_by_context.end()) return false;
    const auto n = static_cast<int>(it->second.size());
    if (n < m_o.context_min_samples || n < m_next_context_check) return false;
    m_next_context_check = n + std::max(1, n / 20);
    return median_ci_within_rel_ci(it->second);
  }

  bool stop_with(std::string reason) {
    m_r.stop_reason = std::move(reason);
    return true;
  }

  // --- gate and warm-up ------------------------------------------------------

  std::optional<int> temperature() {
    const auto s = m_env.latest();
    if (s && s->temp_gpu_c.ok()) return s->temp_gpu_c.value;
    return std::nullopt;
  }

  /// The workload's resources, then the device (a context reset). Nothing
  /// when the context is kept: the workload keeps what it made.
  void release_everything() {
    if (!m_env.resets_context()) return;
    m_w.release();
    say(m_env.release_device());
    ++m_r.releases;
    m_new_context = true;
    m_next_context_check = 0;
  }

  /// Sleeps until sensor_lag has passed since the last sample ended.
  void wait_out_sensor_lag() {
    if (m_r.samples.empty()) return;
    const std::int64_t until = m_r.samples.back().time.end_ns + to_ns(m_o.sensor_lag);
    const std::int64_t now = m_env.now_ns();
    if (until > now) m_env.sleep_for(nanoseconds(until - now));
  }

  /// Releases the device (unless `already_released`: just done), waits until
  /// the GPU is at or below the target, re-acquires and warms up (fully the
  /// first time).
  void gate(bool full_warmup, bool already_released = false) {
    if (!already_released) release_everything();
    const std::int64_t began = m_env.now_ns();
    auto t = temperature();
    if (!t) {
      say("warning: no GPU temperature reading; not gating on temperature");
    } else if (*t > m_o.target_temp_c) {
      say("gating: " + std::to_string(*t) + " C, waiting for " + format_c(m_o.target_temp_c) +
          (m_env.resets_context() ? " with the GPU released" : " with the context kept"));
    }
    while (t && *t > m_o.target_temp_c) {
      if (m_env.interrupted()) throw stop_run{"interrupted", ""};
      if (m_env.now_ns() - began > to_ns(m_o.gate_timeout)) {
        m_r.seconds_gating += seconds_between(began, m_env.now_ns());
        throw stop_run{"gate time-out",
                       "the GPU stayed above " + format_c(m_o.target_temp_c) + " for " +
                           std::to_string(m_o.gate_timeout.count() / 1000) + " s (now at " +
                           std::to_string(*t) +
                           " C): raise --target-temp or --gate-timeout, or let the GPU cool"};
      }
      m_env.sleep_for(milliseconds(200));
      t = temperature();
    }
    // The power controller keeps its average (and the cap bit) for a while
    // after heavy work: a burst started before it clears is capped at once.
    const std::int64_t released = m_env.now_ns();
    for (;;) {
      const auto s = m_env.latest();
      const bool fresh = s && s->time_ns >= released;
      if (!s ||
          (fresh && !(s->clock_reasons.ok() && telemetry::is_throttling(s->clock_reasons.value)))) {
        break;
      }
      if (m_env.interrupted()) throw stop_run{"interrupted", ""};
      if (m_env.now_ns() - began > to_ns(m_o.gate_timeout)) {
        m_r.seconds_gating += seconds_between(began, m_env.now_ns());
        throw stop_run{"gate time-out",
                       "the GPU still reports throttling (" +
                           telemetry::clock_reasons_short(s->clock_reasons.value) +
                           ") with nothing running: raise --gate-timeout, or check `coolbench "
                           "who` for another process"};
      }
      m_env.sleep_for(m_env.telemetry_period().count() > 0 ? m_env.telemetry_period()
                                                           : nanoseconds(milliseconds(20)));
    }
    m_r.seconds_gating += seconds_between(began, m_env.now_ns());
    m_w.prepare();
    m_warmed_in_full = full_warmup;  // a warm-up cut by the cap gates again, re-warming briefly
    if (full_warmup) {
      if (warm_up(true) == warmup_end::throttled) {
        // The state the cold figure is about ended during the warm-up (a
        // power-bound chain reaches the cap in about 60 ms): cool again, so
        // the first burst does not start capped.
        say("warm-up reached " + m_warmup_throttle + " after " + std::to_string(m_r.warmup_runs) +
            " runs; cooling before the first burst");
        gate(false);
      }
    } else {
      for (int i = 0; i < m_o.rewarm_runs; ++i) take(sample_phase::warmup);
    }
  }

  enum class warmup_end : std::uint8_t { settled, time_limit, throttled };

  /// Runs until the median of the last window moves less than the tolerance
  /// against the window before, and the SM clock is at its maximum. With
  /// `stop_at_throttle` (cold mode), returns early once a throttle reason bit
  /// or time counter shows, after warmup_min_runs: warming on would only heat
  /// the GPU in a state that is not measured. The clock alone does not count
  /// here: it ramps up from idle during the first runs.
  warmup_end warm_up(bool stop_at_throttle = false) {
    const std::int64_t began = m_env.now_ns();
    std::vector<double> recent;
    const auto window = static_cast<std::size_t>(std::max(1, m_o.warmup_window));
    for (;;) {
      const auto& s = take(sample_phase::warmup);
      recent.push_back(s.time.latency_ms);
      if (stop_at_throttle && static_cast<int>(recent.size()) >= m_o.warmup_min_runs &&
          (telemetry::is_throttling(s.conditions.reasons) || s.conditions.throttle_counter_moved)) {
        m_warmup_throttle = throttle_reason(s.conditions, m_o.clock_fraction);
        return warmup_end::throttled;
      }
      const bool clock_ok = throttle_reason(s.conditions, m_o.clock_fraction).empty();
      if (static_cast<int>(recent.size()) >= m_o.warmup_min_runs && recent.size() >= 2 * window &&
          clock_ok) {
        const std::span<const double> all(recent);
        const double before = stats::median(all.subspan(all.size() - 2 * window, window));
        const double last = stats::median(all.subspan(all.size() - window, window));
        if (std::abs(last - before) <= m_o.warmup_tolerance * before) return warmup_end::settled;
      }
      if (m_env.now_ns() - began > to_ns(m_o.warmup_max_time)) {
        say("warning: warm-up did not settle within " +
            std::to_string(m_o.warmup_max_time.count()) + " ms" +
            (clock_ok ? "" : " (the SM clock is below its maximum)") + "; measuring anyway");
        return warmup_end::time_limit;
      }
    }
  }

  bool over_ceiling() {
    const auto t = temperature();
    return t && *t > m_max_temp;
  }

  /// Ceiling crossed: release, cool to the target, re-acquire, re-warm.
  void pause_for_ceiling() {
    ++m_r.pauses;
    say("pause: above the ceiling of " + format_c(m_max_temp));
    gate(false);
  }

  // --- policies and modes ----------------------------------------------------

  void run_plain() {
    m_w.prepare();
    warm_up();
    m_measure_start_ns = m_env.now_ns();
    while (!should_stop()) take(sample_phase::measure);
  }

  void run_baseline() {
    m_w.prepare();
    // The peers warm up with a run or a few; one window here.
    for (int i = 0; i < m_o.warmup_min_runs; ++i) take(sample_phase::warmup);
    m_measure_start_ns = m_env.now_ns();
    int since_cooldown = 0;
    while (!should_stop()) {
      // Baselines keep every sample (their throttle labels are evidence only),
      // except what nvbench's clock rule drops.
      auto& s = take(sample_phase::measure);
      if (m_o.policy == sampling_policy::fixed_sleep &&
          ++since_cooldown >= m_o.repeats_to_cooldown) {
        since_cooldown = 0;
        m_env.sleep_for(m_o.cooldown_interval);
      } else if (m_o.policy == sampling_policy::clock_discard) {
        const std::string reason = throttle_reason_clock_only(s.conditions);
        if (!reason.empty()) {
          discard(s, reason);
          m_env.sleep_for(m_o.discard_sleep);
        }
      }
    }
  }

  std::string throttle_reason_clock_only(const sample_conditions& c) const {
    if (m_max_clock && c.sm_clock_mhz &&
        static_cast<double>(*c.sm_clock_mhz) <
            m_o.discard_clock_fraction * static_cast<double>(*m_max_clock)) {
      std::ostringstream s;
      s << "SM clock " << *c.sm_clock_mhz << " < " << m_o.discard_clock_fraction << " x "
        << *m_max_clock << " MHz";
      return s.str();
    }
    return {};
  }

  /// Cold: gated bursts, each ending as soon as telemetry says the state
  /// changed (a reason bit, a reason time counter, the clock, the
  /// temperature); samples the change may have touched are discarded.
  void run_cold() {
    gate(true);
    m_measure_start_ns = m_env.now_ns();
    for (;;) {
      const int burst = ++m_r.bursts;
      const std::int64_t burst_start = m_env.now_ns();
      const std::size_t first = m_r.samples.size();
      std::string ended;
      bool released = false;
      while (ended.empty() && spread_over_contexts()) {
        // A burst is one context here; it also ends once the context has its
        // share, and the CI over contexts is looked at when one ends.
        take(sample_phase::measure, burst);
        if (should_stop()) return;  // a limit
        ended = state_change_since(burst_start, first);
        if (!ended.empty()) {
          bursts_end_by_state_change();
          drop_a_first_burst_after_the_full_warmup(first);
          break;
        }
        if (context_done()) ended = "the context's share";
        if (ended.empty() && m_env.now_ns() - burst_start > to_ns(m_o.max_burst)) {
          ended = "longest burst";
        }
        if (ended.empty()) continue;
        const bool stopping = should_stop(true);
        if (stopping && m_r.stop_reason != "converged") return;
        // NVML reports late (on the H200 a hot GPU reached the cap 30 ms
        // into a context with the power and clock still reading idle): the
        // context's samples are trusted only once the lag is out. When a
        // next context comes, its release counts towards the lag.
        if (!stopping) {
          release_everything();
          released = true;
        }
        wait_out_sensor_lag();
        const std::string late = state_change_since(burst_start, first);
        if (late.empty()) {
          if (stopping) return;
          break;
        }
        if (stopping) {
          m_r.stop_reason.clear();
          m_r.converged = false;
        }
        ended = late;
        bursts_end_by_state_change();
        drop_a_first_burst_after_the_full_warmup(first);
      }
      while (ended.empty()) {
        take(sample_phase::measure, burst);
        if (should_stop()) {
          // NVML reports late: before trusting the last samples, wait out
          // the lag and look at the telemetry once more.
          m_env.sleep_for(m_o.sensor_lag);
          ended = state_change_since(burst_start, first);
          if (ended.empty() || m_r.stop_reason != "converged") return;
          m_r.stop_reason.clear();
          m_r.converged = false;
          m_next_ci_check = 0;
          drop_a_first_burst_after_the_full_warmup(first);
          break;
        }
        ended = state_change_since(burst_start, first);
        if (!ended.empty()) {
          drop_a_first_burst_after_the_full_warmup(first);
        } else if (m_env.now_ns() - burst_start > to_ns(m_o.max_burst)) {
          ended = "longest burst";
        }
      }
      say("burst " + std::to_string(burst) + ": " + std::to_string(m_r.samples.size() - first) +
          " samples, ended by " + ended);
      // A new context is warmed up in full: its first runs load its kernels.
      gate(spread_over_contexts(), released);
    }
  }

  /// The run's first burst, ended by a change of state, when it came straight
  /// after the full warm-up: a power-bound chain spends its cold state (about
  /// 60 ms on the H200) in that warm-up, so the burst began part-spent. On
  /// the H200 such first bursts read 0.2-2 % slower than the later ones, with
  /// no reason bit and no step against the warm-up, which had drifted up
  /// itself (docs/perf/thermal.md, 2026-12-04). Later bursts follow a short
  /// re-warm; this one is discarded so that every kept sample does too. No
  /// gate runs within a burst, so m_warmed_in_full still tells of the one
  /// before this burst (which began at sample `first`).
  void drop_a_first_burst_after_the_full_warmup(std::size_t first) {
    if (m_r.bursts != 1 || !m_warmed_in_full) return;
    int dropped = 0;
    for (std::size_t i = first; i < m_r.samples.size(); ++i) {
      sample_record& s = m_r.samples[i];
      if (s.phase != sample_phase::measure || !s.kept) continue;
      discard(s, "first burst, after the full warm-up");
      ++dropped;
    }
    if (dropped == 0) return;
    m_next_ci_check = 0;
    say("burst 1 came straight after the full warm-up, which spent part of the cold state: its " +
        std::to_string(dropped) +
        " kept samples are discarded; later bursts follow a short re-warm");
  }

  /// Looks at the telemetry read since the burst began; on a change, marks
  /// the samples it may have touched (see first_touched) and returns what
  /// changed.
  std::string state_change_since(std::int64_t burst_start, std::size_t first) {
    for (const auto& t : m_env.between(burst_start, m_env.now_ns())) {
      sample_conditions c;
      if (t.clock_reasons.ok()) c.reasons = t.clock_reasons.value;
      if (t.clock_sm_mhz.ok()) c.sm_clock_mhz = t.clock_sm_mhz.value;
      if (m_burst_counters && counters_moved(*m_burst_counters, t.reason_counters)) {
        c.throttle_counter_moved = true;
      }
      std::string why = throttle_reason(c, m_o.clock_fraction);
      if (why.empty() && t.temp_gpu_c.ok() &&
          t.temp_gpu_c.value > m_o.target_temp_c + m_o.burst_temp_margin_c) {
        why = "temperature " + std::to_string(t.temp_gpu_c.value) + " C";
      }
      if (t.reason_counters.sw_power_cap_ns.ok()) m_burst_counters = t.reason_counters;
      if (!why.empty()) {
        for (std::size_t i = first_touched(first, t.time_ns); i < m_r.samples.size(); ++i) {
          throttled_after_the_fact(m_r.samples[i], why);
        }
        m_burst_counters.reset();
        return why;
      }
    }
    return {};
  }

  /// The first sample of the burst (which began at `first`) that a change
  /// NVML reported at `reported_ns` may have touched. NVML reports late, so
  /// the latency locates the change: the first sample within sensor_lag
  /// before the report that is step_threshold slower than the burst's first
  /// samples. Without such a step, the samples within one telemetry period.
  std::size_t first_touched(std::size_t first, std::int64_t reported_ns) {
    const std::int64_t period = m_env.telemetry_period().count();
    std::size_t by_period = m_r.samples.size();
    for (std::size_t i = first; i < m_r.samples.size(); ++i) {
      if (m_r.samples[i].time.end_ns >= reported_ns - period) {
        by_period = i;
        break;
      }
    }
    // The baseline: the warm-up just before the burst, in the same context
    // (a change can come within the burst's first samples: on the H200 a
    // hot GPU slowed 7 % from the burst's third sample); else the burst's
    // first samples.
    if (first >= m_r.samples.size()) return by_period;
    std::vector<double> head;
    for (std::size_t i = first; i > 0 && head.size() < 8; --i) {
      const auto& before = m_r.samples[i - 1];
      if (before.phase != sample_phase::warmup || before.context != m_r.samples[first].context) {
        break;
      }
      head.push_back(before.time.latency_ms);
    }
    if (head.size() < 3) {
      head.clear();
      for (std::size_t i = first; i < m_r.samples.size() && head.size() < 8; ++i) {
        head.push_back(m_r.samples[i].time.latency_ms);
      }
    }
    if (head.empty()) return by_period;
    const double baseline = stats::median(head);
    for (std::size_t i = first; i < by_period; ++i) {
      const auto& s = m_r.samples[i];
      if (s.time.end_ns < reported_ns - to_ns(m_o.sensor_lag)) continue;
      if (s.time.latency_ms > baseline * (1 + m_o.step_threshold)) return i;
    }
    return by_period;
  }

  /// Sustained: heat-soak until the temperature is steady, then measure at
  /// equilibrium (throttled samples labelled by default).
  void run_sustained() {
    // Not gated (the soak heats anyway), but isolated: a release first, so
    // what ran earlier in this process leaves no state hidden from the
    // sensors (a small L1 after a large shared-memory kernel, FACTS §4).
    release_everything();
    m_w.prepare();
    const std::int64_t began = m_env.now_ns();
    say("heat-soak: until the temperature moves less than " + format_c(m_o.soak_steady_c) +
        " over " + std::to_string(m_o.soak_window.count() / 1000) + " s");
    while (!steady(began)) {
      take(sample_phase::soak);
      if (m_env.now_ns() - began > to_ns(m_o.soak_max_time)) {
        say("warning: not steady after the soak limit; measuring anyway");
        break;
      }
      if (over_ceiling()) pause_for_ceiling();
    }
    m_measure_start_ns = m_env.now_ns();
    while (!should_stop()) {
      take(sample_phase::measure);
      if (over_ceiling()) pause_for_ceiling();
    }
  }

  /// Whether the temperature moved at most soak_steady_c over the last
  /// soak_window (and that much time has passed since `since`).
  bool steady(std::int64_t since) {
    const std::int64_t now = m_env.now_ns();
    if (now - since < to_ns(m_o.soak_window)) return false;
    int low = 1000;
    int high = -1000;
    for (const auto& t : m_env.between(now - to_ns(m_o.soak_window), now)) {
      if (!t.temp_gpu_c.ok()) continue;
      low = std::min(low, t.temp_gpu_c.value);
      high = std::max(high, t.temp_gpu_c.value);
    }
    return high >= low && high - low <= m_o.soak_steady_c;
  }

  /// Profile: from a cool GPU, run without pause and keep every sample with
  /// its temperature and clock; stop after profile_time, when steady, or at
  /// the ceiling.
  void run_profile() {
    gate(true);
    const std::int64_t began = m_env.now_ns();
    m_measure_start_ns = began;
    for (;;) {
      take(sample_phase::measure);
      const std::int64_t now = m_env.now_ns();
      if (now - began >= to_ns(m_o.profile_time)) return void(stop_with("profile time"));
      if (now - began >= 3 * to_ns(m_o.soak_window) && steady(began)) {
        return void(stop_with("steady temperature"));
      }
      if (over_ceiling()) return void(stop_with("ceiling"));
      if (now - m_start_ns >= to_ns(m_o.max_time)) return void(stop_with("max time"));
      if (static_cast<int>(m_kept.size()) >= m_o.max_samples) {
        return void(stop_with("max samples"));
      }
    }
  }

  // --- result ----------------------------------------------------------------

  void finish() {
    m_r.seconds_total = seconds_between(m_start_ns, m_env.now_ns());
    std::vector<double> kept;
    std::vector<double> throttled_kept;
    std::map<std::string, int> discarded;
    for (const auto& s : m_r.samples) {
      if (s.phase != sample_phase::measure) continue;
      if (!s.kept) {
        ++m_r.discarded;
        ++discarded[s.throttle_reason.empty() ? "unknown" : s.throttle_reason];
        continue;
      }
      kept.push_back(s.time.latency_ms);
      if (s.throttled) throttled_kept.push_back(s.time.latency_ms);
      if (s.conditions.temp_c) {
        auto& r = m_r.temp_range_c;
        r = r ? std::pair{std::min(r->first, *s.conditions.temp_c),
                          std::max(r->second, *s.conditions.temp_c)}
              : std::pair{*s.conditions.temp_c, *s.conditions.temp_c};
      }
      if (s.conditions.sm_clock_mhz) {
        auto& r = m_r.clock_range_mhz;
        r = r ? std::pair{std::min(r->first, *s.conditions.sm_clock_mhz),
                          std::max(r->second, *s.conditions.sm_clock_mhz)}
              : std::pair{*s.conditions.sm_clock_mhz, *s.conditions.sm_clock_mhz};
      }
    }
    m_r.discarded_by_reason.assign(discarded.begin(), discarded.end());
    m_r.summary = summarize_latencies(kept);
    if (!throttled_kept.empty()) m_r.throttled_summary = summarize_latencies(throttled_kept);
    if (!kept.empty()) {
      try {
        const stats::median_interval ci = stats::median_ci_order_statistic(kept, m_o.ci_level);
        m_r.median_ci = std::pair{ci.lower, ci.upper};
      } catch (const invalid_argument&) {
        // Too few samples for a CI at this level: the summary says so.
      }
    }
    if (kept.size() > 1) {
      const double step = stats::smallest_step(kept);
      if (step > 0) m_r.timer_step_ms = step;
      const double median = m_r.summary.median_ms;
      // A step as large as the CI asked for: the median moves in whole ticks,
      // and differences of a tick or two are the timer, not the GPU.
      if (step > 0 && median > 0 && step >= m_o.rel_ci * median) {
        std::ostringstream w;
        w << std::fixed << std::setprecision(6) << "the timer's step, " << step << " ms, is "
          << std::setprecision(2) << 100 * step / median
          << "% of the median, not finer than --rel-ci (" << 100 * m_o.rel_ci
          << "%): the figure moves in steps of that size; a longer workload resolves more";
        m_r.warnings.push_back(w.str());
        say("warning: " + m_r.warnings.back());
      }
    }
    if (m_r.stop_reason.empty()) m_r.stop_reason = "stopped";
    if (spread_over_contexts()) summarize_contexts();
    energy();
    if (m_o.policy == sampling_policy::coolbench && m_o.mode == run_mode::profile) profile();
  }

  void summarize_contexts() {
    context_summary c;
    c.per_context = context_figures();
    if (c.per_context.empty()) return;
    const std::vector<double> medians = medians_of(c.per_context);
    const auto [low, high] = std::minmax_element(medians.begin(), medians.end());
    c.spread = *high / *low - 1;
    const latency_summary s = summarize_latencies(medians);
    c.mean_ms = s.mean_ms;
    c.cv = s.cv;
    if (medians.size() >= 2) {
      const stats::mean_interval ci = stats::mean_ci_student_t(medians, m_o.ci_level);
      c.ci = std::pair{ci.lower, ci.upper};
    }
    if (static_cast<int>(c.per_context.size()) < m_o.contexts) {
      m_r.warnings.push_back("only " + std::to_string(c.per_context.size()) + " of the " +
                             std::to_string(m_o.contexts) + " contexts asked for got " +
                             std::to_string(m_o.context_min_samples) +
                             " samples before the run stopped (" + m_r.stop_reason +
                             "): raise --max-time, or ask for fewer --contexts");
      say("warning: " + m_r.warnings.back());
    }
    m_r.contexts = std::move(c);
  }

  /// Energy per run from the energy counter: over each pair of readings
  /// between which measurement runs filled at least 90 % of the time, the
  /// energy divided by the runs' worth of time in that span (a run that
  /// straddles a reading counts by the fraction of it inside).
  void energy() {
    if (!m_r.conditions.gpu || m_r.samples.empty()) return;
    const auto readings =
        m_env.between(m_r.samples.front().time.start_ns, m_r.samples.back().time.end_ns);
    double joules = 0;
    double runs = 0;
    const telemetry::gpu_sample* previous = nullptr;
    std::size_t first = 0;  // first sample that may overlap the current span
    for (const auto& t : readings) {
      if (!t.energy_mj.ok()) continue;
      if (previous != nullptr) {
        const std::int64_t from = previous->time_ns;
        const std::int64_t to = t.time_ns;
        double worth = 0;
        std::int64_t covered = 0;  // run time inside the span
        bool steady = true;        // a warm-up between: not steady running
        while (first < m_r.samples.size() && m_r.samples[first].time.end_ns <= from) ++first;
        for (std::size_t i = first; i < m_r.samples.size(); ++i) {
          const timing& run = m_r.samples[i].time;
          if (run.start_ns >= to) break;
          if (m_r.samples[i].phase != sample_phase::measure) steady = false;
          const std::int64_t inside = std::min(run.end_ns, to) - std::max(run.start_ns, from);
          if (run.end_ns > run.start_ns && inside > 0) {
            worth += static_cast<double>(inside) / static_cast<double>(run.end_ns - run.start_ns);
            covered += inside;
          }
        }
        // A release, a gate or a sleep inside the span leaves it mostly
        // idle: its energy is not the runs'.
        steady = steady && static_cast<double>(covered) >= 0.9 * static_cast<double>(to - from);
        if (steady && worth > 0 && t.energy_mj.value >= previous->energy_mj.value) {
          joules += static_cast<double>(t.energy_mj.value - previous->energy_mj.value) / 1000.0;
          runs += worth;
        }
      }
      previous = &t;
    }
    if (runs > 0) m_r.energy_per_run_j = joules / runs;
  }

  void profile() {
    profile_result p;
    std::vector<double> temps;
    std::vector<double> clocks;
    std::vector<double> latencies_t;
    std::vector<double> latencies_c;
    for (const auto& s : m_r.samples) {
      if (s.phase != sample_phase::measure || !s.kept) continue;
      if (s.conditions.temp_c) {
        temps.push_back(*s.conditions.temp_c);
        latencies_t.push_back(s.time.latency_ms);
      }
      if (s.conditions.sm_clock_mhz) {
        clocks.push_back(*s.conditions.sm_clock_mhz);
        latencies_c.push_back(s.time.latency_ms);
      }
    }
    p.by_temperature = buckets(temps, latencies_t, m_o.profile_temp_bucket_c, false);
    p.by_clock = buckets(clocks, latencies_c, m_o.profile_clock_bucket_mhz, true);
    p.warmup_median_ms = warmup_median();
    if (p.warmup_median_ms && !p.by_temperature.empty()) {
      p.derate = p.by_temperature.back().median_ms / *p.warmup_median_ms - 1;
    } else if (p.by_temperature.size() >= 2) {
      p.derate = p.by_temperature.back().median_ms / p.by_temperature.front().median_ms - 1;
    }
    try {
      if (temps.size() >= 3) {
        p.ms_per_c = stats::fit_latency_on_temperature(temps, latencies_t).latency_per_c;
      }
      if (clocks.size() >= 3) {
        p.pct_per_100mhz = stats::fit_latency_on_clock(clocks, latencies_c).percent_per_100mhz;
      }
    } catch (const invalid_argument&) {
      // One temperature or one clock throughout: no slope to fit.
    }
    check_labels(p);
    m_r.profile = std::move(p);
  }

  /// The median of the warm-up's last window in the context the measuring
  /// began in: the state right after the cold gate, at the full clock. When
  /// the cap cut the full warm-up short, that context holds only the
  /// re-warm runs after the second gate: their median, if there are 3.
  std::optional<double> warmup_median() const {
    const sample_record* first = nullptr;
    for (const auto& s : m_r.samples) {
      if (s.phase == sample_phase::measure && s.kept) {
        first = &s;
        break;
      }
    }
    if (first == nullptr) return std::nullopt;
    std::vector<double> warmup;
    for (const auto& s : m_r.samples) {
      if (&s == first) break;
      if (s.phase == sample_phase::warmup && s.context == first->context) {
        warmup.push_back(s.time.latency_ms);
      }
    }
    const auto wanted = static_cast<std::size_t>(std::max(1, m_o.warmup_window));
    const std::size_t n = std::min(wanted, warmup.size());
    if (n < std::min<std::size_t>(3, wanted)) return std::nullopt;
    return stats::median(std::span<const double>(warmup).last(n));
  }

  /// The tables' reference buckets against the warm-up, which ran just
  /// before at the full clock. The coolest bucket may hold a change of state
  /// that did not heat the GPU (a power cap): the derate is taken against
  /// the warm-up for that reason. The fastest-clock bucket should not: when
  /// it does, NVML reported the change late (on the H200 the power cap
  /// showed ~130 ms after the latency stepped up, the runs between carrying
  /// 1980 MHz), and the reader of the clock table is told.
  void check_labels(profile_result& p) {
    if (!p.warmup_median_ms) return;
    const double reference = *p.warmup_median_ms;
    if (!p.by_temperature.empty()) {
      p.coolest_temp_vs_warmup = p.by_temperature.front().median_ms / reference - 1;
    }
    if (p.by_clock.empty()) return;
    const auto& fastest = p.by_clock.back();
    p.fastest_clock_vs_warmup = fastest.median_ms / reference - 1;
    if (*p.fastest_clock_vs_warmup <= m_o.step_threshold) return;
    std::ostringstream w;
    w << "profile: the " << fastest.count << " runs NVML reported at " << fastest.from << " to "
      << fastest.to << " MHz have a median of " << std::fixed << std::setprecision(4)
      << fastest.median_ms << " ms, " << std::setprecision(1) << 100 * *p.fastest_clock_vs_warmup
      << "% above the warm-up's " << std::setprecision(4) << reference
      << " ms at that clock just before: the GPU changed state before NVML reported it (its "
         "readings lag), so the clock table's fastest bucket, its reference, and the slope on "
         "the clock mix two states";
    m_r.warnings.push_back(w.str());
    say("warning: " + m_r.warnings.back());
  }

  /// Buckets of `width` over x; vs_coolest relative to the first bucket
  /// (lowest temperature) or, for clocks, the last (highest clock).
  static std::vector<profile_bucket> buckets(const std::vector<double>& x,
                                             const std::vector<double>& y, double width,
                                             bool relative_to_last) {
    std::map<long long, std::vector<double>> groups;
    for (std::size_t i = 0; i < x.size(); ++i) {
      groups[static_cast<long long>(std::floor(x[i] / width))].push_back(y[i]);
    }
    std::vector<profile_bucket> out;
    for (auto& [index, values] : groups) {
      profile_bucket b;
      b.from = static_cast<double>(index) * width;
      b.to = b.from + width;
      b.count = static_cast<int>(values.size());
      b.median_ms = stats::median(values);
      out.push_back(b);
    }
    if (!out.empty()) {
      const double reference = relative_to_last ? out.back().median_ms : out.front().median_ms;
      for (auto& b : out) b.vs_coolest = b.median_ms / reference - 1;
    }
    return out;
  }

  static std::string format_c(double c) {
    std::ostringstream s;
    s << c << " C";
    return s.str();
  }

  void say(const std::string& line) {
    if (m_progress) m_progress(line);
  }

  workload& m_w;
  environment& m_env;
  const protocol_options& m_o;
  const progress_fn& m_progress;
  run_result m_r;
  throttle_action m_action = throttle_action::discard;
  double m_max_temp = 80;
  std::optional<unsigned> m_max_clock;
  std::int64_t m_start_ns = 0;
  std::int64_t m_measure_start_ns = 0;
  int m_next_ci_check = 0;
  std::vector<double> m_kept;
  std::map<int, std::vector<double>> m_kept_by_context;
  int m_context = 0;                   ///< the context samples are taken in now
  bool m_new_context = true;           ///< a release happened: the next sample starts a context
  bool m_bursts_end_by_state = false;  ///< see bursts_end_by_state_change()
  bool m_warmed_in_full = false;       ///< the last gate ended with a full warm-up
  int m_next_context_check = 0;
  std::optional<telemetry::clock_reason_counters> m_last_counters;
  std::optional<telemetry::clock_reason_counters> m_burst_counters;
  std::string m_warmup_throttle;  ///< what ended a cold warm-up early
};

template <class E>
E parse_enum(const std::string& text, std::initializer_list<std::pair<const char*, E>> names,
             const char* what) {
  std::string valid;
  for (const auto& [name, value] : names) {
    if (text == name) return value;
    valid += (valid.empty() ? "" : ", ") + std::string(name);
  }
  throw invalid_argument("unknown " + std::string(what) + " '" + text + "'; use one of: " + valid);
}

}  // namespace

std::string to_string(run_mode mode) {
  switch (mode) {
    case run_mode::cold: return "cold";
    case run_mode::sustained: return "sustained";
    case run_mode::profile: return "profile";
  }
  return "?";
}

std::string to_string(sampling_policy policy) {
  switch (policy) {
    case sampling_policy::naive: return "naive";
    case sampling_policy::fixed_sleep: return "fixed-sleep";
    case sampling_policy::clock_discard: return "clock-discard";
    case sampling_policy::coolbench: return "coolbench";
  }
  return "?";
}

std::string to_string(throttle_action action) {
  return action == throttle_action::discard ? "discard" : "label";
}

run_mode parse_run_mode(const std::string& text) {
  return parse_enum<run_mode>(text,
                              {{"cold", run_mode::cold},
                               {"sustained", run_mode::sustained},
                               {"profile", run_mode::profile}},
                              "mode");
}

sampling_policy parse_sampling_policy(const std::string& text) {
  return parse_enum<sampling_policy>(text,
                                     {{"naive", sampling_policy::naive},
                                      {"fixed-sleep", sampling_policy::fixed_sleep},
                                      {"clock-discard", sampling_policy::clock_discard},
                                      {"coolbench", sampling_policy::coolbench}},
                                     "policy");
}

std::string to_string(context_release release) {
  return release == context_release::reset ? "reset" : "keep";
}

context_release parse_context_release(const std::string& text) {
  return parse_enum<context_release>(
      text, {{"reset", context_release::reset}, {"keep", context_release::keep}}, "release");
}

throttle_action parse_throttle_action(const std::string& text) {
  return parse_enum<throttle_action>(
      text, {{"discard", throttle_action::discard}, {"label", throttle_action::label}},
      "throttle action");
}

void validate(const protocol_options& o) {
  const auto require = [](bool ok, const std::string& what) {
    if (!ok) throw invalid_argument(what);
  };
  require(o.min_samples >= 1, "--min-samples must be at least 1");
  require(o.max_samples >= o.min_samples, "--min-samples (" + std::to_string(o.min_samples) +
                                              ") is above --max-samples (" +
                                              std::to_string(o.max_samples) + ")");
  require(o.min_time.count() >= 0, "--min-time must not be negative");
  require(o.max_time > milliseconds(0), "--max-time must be positive");
  require(o.max_time >= o.min_time, "--min-time (" + std::to_string(o.min_time.count()) +
                                        " ms) is above --max-time (" +
                                        std::to_string(o.max_time.count()) + " ms)");
  require(o.rel_ci > 0 && o.rel_ci < 1, "--rel-ci must be in (0, 1), e.g. 0.005 for 0.5%");
  require(o.ci_level > 0.5 && o.ci_level < 1, "the CI level must be in (0.5, 1)");
  require(o.clock_fraction > 0 && o.clock_fraction <= 1, "the clock fraction must be in (0, 1]");
  require(o.discard_clock_fraction > 0 && o.discard_clock_fraction <= 1,
          "the discard clock fraction must be in (0, 1]");
  require(o.gate_timeout > milliseconds(0), "--gate-timeout must be positive");
  require(o.sensor_lag.count() >= 0, "the sensor lag must not be negative");
  require(o.step_threshold > 0, "the latency step threshold must be positive");
  require(!o.max_temp_c || *o.max_temp_c > o.target_temp_c,
          "--max-temp must be above --target-temp");
  require(o.warmup_min_runs >= 0 && o.warmup_window >= 1, "warm-up counts must be positive");
  require(o.repeats_to_cooldown >= 1, "repeats to cool-down must be at least 1");
  require(o.profile_temp_bucket_c > 0 && o.profile_clock_bucket_mhz > 0,
          "profile bucket widths must be positive");
  require(o.contexts >= 1 && o.contexts <= 10000, "--contexts must be in 1..10000");
  require(o.contexts == 1 || (o.mode == run_mode::cold && o.policy == sampling_policy::coolbench),
          "--contexts above 1 spreads a cold-mode run of the coolbench policy; with --mode " +
              to_string(o.mode) + " and --policy " + to_string(o.policy) + " leave it at 1");
  require(o.context_min_samples >= 1, "--context-min-samples must be at least 1");
}

run_result measure(workload& w, environment& env, const protocol_options& options,
                   const progress_fn& progress) {
  validate(options);
  return runner(w, env, options, progress).run();
}

}  // namespace coolbench::measure
