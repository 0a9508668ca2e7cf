// The run's figures, from one pass over its samples: the summary of the kept ones, the
// discarded ones by reason, the ranges of temperature and clock, the contexts' figures and the
// profile's points; then the energy and the profile tables.
#include <algorithm>
#include <iomanip>
#include <map>
#include <span>
#include <sstream>

#include "coolbench/stats.hpp"
#include "measure/protocol/run.hpp"
#include "measure/protocol/summarize.hpp"

namespace coolbench::measure::detail {
namespace {

template <class T>
void widen(std::optional<std::pair<T, T>>& range, T value) {
  range = range ? std::pair{std::min(range->first, value), std::max(range->second, value)}
                : std::pair{value, value};
}

/// What one pass over the samples collects.
struct digest {
  std::vector<double> kept;
  std::vector<double> throttled_kept;
  std::map<std::string, int> discarded;
  std::map<int, std::vector<double>> kept_by_context;
  std::map<int, std::vector<double>> warmup_by_context;  ///< before the first kept sample
  std::optional<int> first_kept_context;
  profile_points points;
};

void add_kept(run_state& run, digest& d, const sample_record& s, bool profile) {
  const double ms = s.time.latency_ms;
  d.kept.push_back(ms);
  d.kept_by_context[s.context].push_back(ms);
  if (!d.first_kept_context) d.first_kept_context = s.context;
  if (s.throttled) d.throttled_kept.push_back(ms);
  if (s.conditions.temp_c) {
    widen(run.r.temp_range_c, *s.conditions.temp_c);
    if (profile) {
      d.points.temps.push_back(*s.conditions.temp_c);
      d.points.latencies_at_temp.push_back(ms);
    }
  }
  if (s.conditions.sm_clock_mhz) {
    widen(run.r.clock_range_mhz, *s.conditions.sm_clock_mhz);
    if (profile) {
      d.points.clocks.push_back(*s.conditions.sm_clock_mhz);
      d.points.latencies_at_clock.push_back(ms);
    }
  }
}

digest one_pass(run_state& run, bool profile) {
  digest d;
  for (const auto& s : run.samples.all()) {
    if (s.phase == sample_phase::warmup && !d.first_kept_context) {
      d.warmup_by_context[s.context].push_back(s.time.latency_ms);
    }
    if (s.phase != sample_phase::measure) continue;
    if (s.kept) {
      add_kept(run, d, s, profile);
    } else {
      ++run.r.discarded;
      ++d.discarded[s.throttle_reason.empty() ? "unknown" : s.throttle_reason];
    }
  }
  return d;
}

std::optional<double> warmup_median(const run_state& run, const digest& d) {
  if (!d.first_kept_context) return std::nullopt;
  const auto it = d.warmup_by_context.find(*d.first_kept_context);
  const std::vector<double> none;
  const std::vector<double>& warmup = it == d.warmup_by_context.end() ? none : it->second;
  const auto wanted = static_cast<std::size_t>(std::max(1, run.o.warmup_window));
  const std::size_t n = std::min(wanted, warmup.size());
  if (n < std::min<std::size_t>(3, wanted)) return std::nullopt;
  return stats::median(std::span<const double>(warmup).last(n));
}

/// The median's CI and the timer's step; a step as large as the CI asked for is a warning:
/// the median moves in whole ticks, and differences of a tick or two are the timer.
void summarize_kept(run_state& run, const std::vector<double>& kept) {
  run_result& r = run.r;
  r.summary = summarize_latencies(kept);
  if (kept.empty()) return;
  try {
    const stats::median_interval ci = stats::median_ci_order_statistic(kept, run.o.ci_level);
    r.median_ci = std::pair{ci.lower, ci.upper};
  } catch (const invalid_argument&) {
    // Too few samples for a CI at this level: the summary says so.
  }
  if (kept.size() < 2) return;
  const double step = stats::smallest_step(kept);
  if (step > 0) r.timer_step_ms = step;
  const double median = r.summary.median_ms;
  if (step > 0 && median > 0 && step >= run.o.rel_ci * median) {
    std::ostringstream w;
    w << std::fixed << std::setprecision(6) << "the timer's step, " << step << " ms, is "
      << std::setprecision(2) << 100 * step / median << "% of the median, not finer than --rel-ci ("
      << 100 * run.o.rel_ci
      << "%): the figure moves in steps of that size; a longer workload resolves more";
    run.warn(w.str());
  }
}

/// Each burst was a context: the pooled median's CI widened to the CI across the bursts'
/// medians, centred on the median (docs/measure.md, "Contexts").
void widen_by_the_bursts(run_state& run) {
  run_result& r = run.r;
  const auto ci = contexts_interval(run, burst_figures(run));
  if (!ci || !r.median_ci) return;
  const double median = r.summary.median_ms;
  r.median_ci = std::pair{std::min(r.median_ci->first, median - ci->half_width()),
                          std::max(r.median_ci->second, median + ci->half_width())};
}

void summarize_contexts(run_state& run, const digest& d) {
  context_summary c;
  for (const auto& [context, kept] : d.kept_by_context) {
    if (static_cast<int>(kept.size()) < run.o.context_min_samples) continue;
    c.per_context.push_back({context, static_cast<int>(kept.size()), stats::median(kept)});
  }
  if (c.per_context.empty()) return;
  const std::vector<double> medians = medians_of(c.per_context);
  const auto [low, high] = std::minmax_element(medians.begin(), medians.end());
  c.spread = *high / *low - 1;
  const latency_summary s = summarize_latencies(medians);
  c.mean_ms = s.mean_ms;
  c.cv = s.cv;
  if (const auto ci = contexts_interval(run, c.per_context)) c.ci = std::pair{ci->lower, ci->upper};
  if (static_cast<int>(c.per_context.size()) < run.o.contexts) {
    run.warn("only " + std::to_string(c.per_context.size()) + " of the " +
             std::to_string(run.o.contexts) + " contexts asked for got " +
             std::to_string(run.o.context_min_samples) + " samples before the run stopped (" +
             to_string(run.r.stop_reason) + "): raise --max-time, or ask for fewer --contexts");
  }
  run.r.contexts = std::move(c);
}

}  // namespace

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

void summarize(run_state& run) {
  run.r.seconds_total = seconds_between(run.start_ns, run.now());
  const bool profile =
      run.o.policy == sampling_policy::coolbench && run.o.mode == run_mode::profile;
  digest d = one_pass(run, profile);
  run.r.discarded_by_reason.assign(d.discarded.begin(), d.discarded.end());
  summarize_kept(run, d.kept);
  if (!d.throttled_kept.empty()) run.r.throttled_summary = summarize_latencies(d.throttled_kept);
  if (spread_over_contexts(run)) summarize_contexts(run, d);
  if (bursts_are_contexts(run)) widen_by_the_bursts(run);
  run.r.energy_per_run_j = energy_per_run(run);
  if (run.r.conditions.gpu) run.r.energy_probe = run.env.energy_counter_probe();
  run.r.energy = energy_with_uncertainty(run);
  if (profile) {
    d.points.warmup_median_ms = warmup_median(run, d);
    run.r.profile = profile_tables(run, d.points);
  }
}

}  // namespace coolbench::measure::detail
