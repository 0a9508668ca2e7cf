// Matched A/B (ab.hpp, docs/measure.md "Matched A/B"): pairs of bursts in ABBA order, both
// bursts of a pair in one context and gated to the same temperature, the pairs isolated from
// each other; the ratio B/A per pair, and its CI over the pairs.
#include "coolbench/measure/ab.hpp"

#include <algorithm>
#include <cmath>

#include "coolbench/stats.hpp"
#include "measure/protocol/run.hpp"

namespace coolbench::measure {
namespace detail {
namespace {

/// What separates one pair from the next: both workloads' resources, then the device (a
/// context reset), so that each pair draws its own context and starts without what the pair
/// before left behind. The one place the pairs' isolation is decided: the isolation rules
/// (none, release, touch, process) take its place. Returns what it did.
std::string isolate_pair(run_state& a, run_state& b) {
  if (!a.env.resets_context()) return "none";
  a.w.release();
  b.w.release();
  a.say(a.env.release_device());
  for (run_state* run : {&a, &b}) {
    ++run->r.releases;
    run->contexts.next_is_new = true;
    run->next_check.context = 0;
  }
  return "release";
}

/// One burst's figures: its kept samples' median latency and SM clock.
struct burst_figures {
  int kept = 0;
  std::optional<double> median_ms;
  std::optional<double> clock_mhz;
  std::optional<int> start_temp_c;
};

burst_figures figures_of(const run_state& run, std::size_t first) {
  burst_figures f;
  std::vector<double> latencies;
  std::vector<double> clocks;
  for (std::size_t i = first; i < run.samples.size(); ++i) {
    const sample_record& s = run.samples[i];
    if (!s.kept || s.phase != sample_phase::measure) continue;
    latencies.push_back(s.time.latency_ms);
    if (s.conditions.sm_clock_mhz) clocks.push_back(*s.conditions.sm_clock_mhz);
  }
  f.kept = static_cast<int>(latencies.size());
  if (!latencies.empty()) f.median_ms = stats::median(latencies);
  if (!clocks.empty()) f.clock_mhz = stats::median(clocks);
  return f;
}

/// One burst of `run` in the pair's context: gated to the target with the context kept (the
/// pair's other workload may hold it), warmed up in full (the workload is new in this
/// context), then measured until it has context_min_samples kept samples and
/// k_ab_burst_min_time, or the telemetry says the state changed, or it is at its longest.
burst_figures ab_burst(run_state& run, int burst) {
  // The other workload's burst ran since this one's last: its throttle time is not this one's.
  run.burst_counters.reset();
  run.burst_hw_counters_ns.reset();
  run.sample_counters.reset();
  gate(run, true);
  burst_figures start;
  start.start_temp_c = temperature(run);
  (void)warm_up(run, false);
  run.r.bursts = burst;
  const std::int64_t burst_start = run.now();
  const std::size_t first = run.samples.size();
  std::string why;
  for (;;) {
    (void)take(run, sample_phase::measure, burst);
    why = state_change_since(run, burst_start, first);
    if (!why.empty()) break;
    const std::int64_t took = run.now() - burst_start;
    const bool enough = run.samples.kept_in(run.contexts.current) >= run.o.context_min_samples &&
                        took >= to_ns(k_ab_burst_min_time);
    if (enough || took > to_ns(run.o.max_burst)) break;
  }
  if (why.empty()) {
    // NVML reports late: look once more before trusting the burst's last samples.
    wait_out_sensor_lag(run);
    why = state_change_since(run, burst_start, first);
  }
  if (!why.empty()) run.say(run.label + " burst " + std::to_string(burst) + " cut by " + why);
  burst_figures f = figures_of(run, first);
  f.start_temp_c = start.start_temp_c;
  return f;
}

/// The pair's ratio, or why it does not count.
void settle_pair(ab_pair& p, const burst_figures& fa, const burst_figures& fb, int needed) {
  p.a_kept = fa.kept;
  p.b_kept = fb.kept;
  p.a_median_ms = fa.median_ms;
  p.b_median_ms = fb.median_ms;
  p.a_clock_mhz = fa.clock_mhz;
  p.b_clock_mhz = fb.clock_mhz;
  p.a_start_temp_c = fa.start_temp_c;
  p.b_start_temp_c = fb.start_temp_c;
  if (fa.kept < needed || fb.kept < needed || !fa.median_ms || !fb.median_ms ||
      *fa.median_ms <= 0) {
    p.dropped = "fewer than " + std::to_string(needed) + " kept samples in a burst (A " +
                std::to_string(fa.kept) + ", B " + std::to_string(fb.kept) + ")";
    return;
  }
  p.ratio = *fb.median_ms / *fa.median_ms;
  if (fa.clock_mhz && fb.clock_mhz && *fa.clock_mhz > 0) {
    p.cycles_ratio = *p.ratio * *fb.clock_mhz / *fa.clock_mhz;
  }
}

/// The geometric mean of `ratios` and its CI (stats::paired_ratio_ci: the SD's upper bound, so a
/// run that stops on a lucky streak of agreeing couples does not call a difference); empty below
/// two.
std::optional<stats::ratio_interval> ratio_over(const std::vector<double>& ratios, double level) {
  if (ratios.size() < 2) return std::nullopt;
  return stats::paired_ratio_ci(ratios, level);
}

struct ab_run {
  run_state& a;
  run_state& b;
  ab_result& out;
};

/// The ratios over the couples: each AB pair with the BA pair after it. Within one context
/// the second burst can run slower than the first with every sensor the same (on the H200 a
/// chain of 50 GEMMs 1.3 % slower, docs/perf/compare.md): an AB pair's ratio carries that
/// factor, a BA pair's its inverse, so the geometric mean of a couple cancels it, and the CI
/// over the couples does not hold it as scatter. The factor itself is their quotient's root.
void update_ratios(ab_run& ab) {
  std::vector<double> time;
  std::vector<double> cycles;
  std::vector<double> order;
  const auto& pairs = ab.out.pairs;
  ab.out.pairs_counted = static_cast<int>(
      std::count_if(pairs.begin(), pairs.end(), [](const ab_pair& p) { return p.ratio; }));
  for (std::size_t i = 0; i + 1 < pairs.size(); i += 2) {
    const ab_pair& ab_order = pairs[i];  // A then B
    const ab_pair& ba_order = pairs[i + 1];
    if (!ab_order.ratio || !ba_order.ratio) continue;
    time.push_back(std::sqrt(*ab_order.ratio * *ba_order.ratio));
    order.push_back(std::sqrt(*ab_order.ratio / *ba_order.ratio));
    if (ab_order.cycles_ratio && ba_order.cycles_ratio) {
      cycles.push_back(std::sqrt(*ab_order.cycles_ratio * *ba_order.cycles_ratio));
    }
  }
  ab.out.couples = static_cast<int>(time.size());
  ab.out.time = ratio_over(time, ab.a.o.ci_level);
  ab.out.cycles = cycles.size() == time.size() ? ratio_over(cycles, ab.a.o.ci_level) : std::nullopt;
  ab.out.second_burst = ratio_over(order, ab.a.o.ci_level);
  if (ab.out.time && ab.out.time->ratio > 0) {
    ab.a.ci_now = ab.b.ci_now = (ab.out.time->upper - ab.out.time->lower) / 2 / ab.out.time->ratio;
  }
}

/// Why the A/B run stops after a pair, if it does: a limit, or the ratio's CI within rel_ci
/// after the pairs asked for, with as many pairs of each order.
std::optional<stop_reason> ab_should_stop(const ab_run& ab, int min_pairs) {
  const protocol_options& o = ab.a.o;
  if (ab.a.samples.kept() + ab.b.samples.kept() >= o.max_samples) return stop_reason::max_samples;
  if (ab.a.now() - ab.a.start_ns >= to_ns(o.max_time)) return stop_reason::max_time;
  const auto& t = ab.out.time;
  if (2 * ab.out.couples < min_pairs || ab.out.pairs.size() % 2 != 0 || !t) return std::nullopt;
  if (ab.a.now() - ab.a.measure_start_ns < to_ns(o.min_time)) return std::nullopt;
  if ((t->upper - t->lower) / 2 <= o.rel_ci * t->ratio) return stop_reason::converged;
  return std::nullopt;
}

/// Pairs until a stop: odd pairs A then B, even pairs B then A.
stop_reason run_pairs(ab_run& ab) {
  // An even number of pairs, so that each order comes as often; two couples at least.
  const int min_pairs = std::max(4, ab.a.o.contexts + ab.a.o.contexts % 2);
  ab.a.measure_start_ns = ab.b.measure_start_ns = ab.a.now();
  for (int pair = 1;; ++pair) {
    ab.out.isolation = isolate_pair(ab.a, ab.b);
    ab_pair p;
    p.pair = pair;
    p.a_first = pair % 2 == 1;
    burst_figures fa;
    burst_figures fb;
    run_state& first = p.a_first ? ab.a : ab.b;
    run_state& second = p.a_first ? ab.b : ab.a;
    (p.a_first ? fa : fb) = ab_burst(first, pair);
    // A pair cut by the time limit would be half a pair: it is left out.
    if (ab.a.now() - ab.a.start_ns >= to_ns(ab.a.o.max_time)) return stop_reason::max_time;
    (p.a_first ? fb : fa) = ab_burst(second, pair);
    settle_pair(p, fa, fb, std::max(3, ab.a.o.context_min_samples / 2));
    ab.out.pairs.push_back(p);
    update_ratios(ab);
    ab.a.say(
        "pair " + std::to_string(pair) + (p.a_first ? " (AB)" : " (BA)") + ": " +
        (p.ratio ? "B/A " + std::to_string(*p.ratio) : "not counted, " + p.dropped) +
        (ab.out.time ? ", CI now ±" + std::to_string(100 * *ab.a.ci_now).substr(0, 5) + "%" : ""));
    if (const auto stop = ab_should_stop(ab, min_pairs)) return *stop;
  }
}

/// Runs the pairs; a run cut short says why in both runs and keeps what it measured.
void run_to_the_end(ab_run& ab) {
  try {
    ab.out.stop_reason = run_pairs(ab);
    return;
  } catch (const stop_run& stop) {
    ab.out.stop_reason = stop.reason;
    ab.out.error = stop.error;
    // --max-time passed in a gate or a warm-up: the pair under way is left out, as a pair
    // the limit cuts after its first burst.
    if (stop.reason == stop_reason::max_time) {
      if (!ab.out.pairs.empty()) return;
      ab.out.error = "--max-time passed before the first pair was measured: raise --max-time";
    }
  } catch (const invalid_argument& e) {
    ab.out.stop_reason = stop_reason::invalid_input;
    ab.out.error = e.what();
  } catch (const std::exception& e) {
    ab.out.stop_reason = stop_reason::error;
    ab.out.error = e.what();
  }
  ab.out.complete = false;
}

/// J per run, B / A, from the two runs' energy CIs.
std::optional<stats::ratio_interval> energy_ratio(const run_result& a, const run_result& b) {
  if (!a.energy || !b.energy || !a.energy->ci || !b.energy->ci || a.energy->ci->first <= 0 ||
      b.energy->ci->first <= 0) {
    return std::nullopt;
  }
  const auto& ea = *a.energy;
  const auto& eb = *b.energy;
  return stats::ratio_ci_mover({ea.j_per_run, ea.ci->first, ea.ci->second},
                               {eb.j_per_run, eb.ci->first, eb.ci->second});
}

/// Each run's end, as measure() ends one: why it stopped, the release, the summary.
void finish(run_state& run, const ab_result& out, bool release) {
  run.r.stop_reason = out.stop_reason;
  run.r.converged = out.converged;
  run.r.complete = out.complete;
  run.r.error = out.error;
  if (release) {
    release_at_the_end(run);
  } else {
    run.w.release();
  }
  summarize(run);
  run.r.samples = std::move(run.samples).release();
}

}  // namespace
}  // namespace detail

ab_result measure_ab(workload& a, workload& b, environment& env, const protocol_options& options,
                     const progress_fn& progress, const status_fn& status) {
  protocol_options o = options;
  o.mode = run_mode::cold;
  o.policy = sampling_policy::coolbench;
  validate(o);
  ab_result out;
  detail::run_state ra(a, env, o, progress);
  detail::run_state rb(b, env, o, progress);
  for (auto* run : {&ra, &rb}) {
    run->status = &status;
    run->start_ns = env.now_ns();
  }
  ra.label = "A";
  rb.label = "B";
  detail::settle_conditions(ra);
  detail::settle_conditions(rb);
  detail::ab_run ab{ra, rb, out};
  if (!ra.r.conditions.gpu) {
    out.complete = false;
    out.stop_reason = stop_reason::invalid_input;
    out.error = "a matched A/B run needs a GPU workload: both A and B must run on a GPU";
  } else {
    detail::run_to_the_end(ab);
  }
  out.converged = out.stop_reason == stop_reason::converged;
  // B's resources first, then A's release hands the device back once for both.
  detail::finish(rb, out, false);
  detail::finish(ra, out, true);
  out.energy = detail::energy_ratio(ra.r, rb.r);
  out.warnings = ra.r.warnings;
  for (const auto& w : rb.r.warnings) {
    if (std::find(out.warnings.begin(), out.warnings.end(), w) == out.warnings.end()) {
      out.warnings.push_back(w);
    }
  }
  out.a = std::move(ra.r);
  out.b = std::move(rb.r);
  out.seconds_total = out.a.seconds_total;
  return out;
}

}  // namespace coolbench::measure
