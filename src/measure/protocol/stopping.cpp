// When a run stops: a limit (samples, time), or the confidence interval of its figure within
// rel_ci — the median's, or, spread over contexts, that of the mean of the contexts' medians
// (stats::mixture_mean_ci: the contexts may fall on a few levels). A run whose bursts end by a
// state change keeps the pooled median, but each burst is a context: its CI must also hold
// across the bursts' medians.
#include <algorithm>

#include "coolbench/stats.hpp"
#include "measure/protocol/run.hpp"

namespace coolbench::measure::detail {
namespace {

/// Whether the order-statistic CI of these samples' median is within rel_ci.
bool median_ci_within_rel_ci(const run_state& run, const std::vector<double>& kept) {
  try {
    const stats::median_interval ci = stats::median_ci_order_statistic(kept, run.o.ci_level);
    const double median = stats::median(kept);
    if (median > 0) run.ci_now = (ci.upper - ci.lower) / 2 / median;
    return median > 0 && (ci.upper - ci.lower) / 2 <= run.o.rel_ci * median;
  } catch (const invalid_argument&) {
    return false;  // too few samples for the level yet
  }
}

bool contexts_ci_met(const run_state& run, const std::vector<context_figure>& figures) {
  const auto ci = contexts_interval(run, figures);
  if (ci && ci->mean > 0) run.ci_now = ci->half_width() / ci->mean;
  return ci && ci->mean > 0 && ci->half_width() <= run.o.rel_ci * ci->mean;
}

/// Bursts ended by a state change: the pooled median's CI and the bursts' both within rel_ci.
bool bursts_ci_met(const run_state& run, const std::vector<double>& kept) {
  if (!median_ci_within_rel_ci(run, kept)) return false;
  const auto ci = contexts_interval(run, burst_figures(run));
  return ci && ci->half_width() <= run.o.rel_ci * stats::median(kept);
}

/// Whether the look at a CI is due at `n` kept samples; moves the stride on when it is.
bool due(int& next, int n) {
  if (n < next) return false;
  next = n + std::max(1, n / 20);
  return true;
}

}  // namespace

namespace {

bool cold_over_contexts(const run_state& run) {
  const protocol_options& o = run.o;
  return o.contexts > 1 && o.policy == sampling_policy::coolbench && o.mode == run_mode::cold &&
         run.r.conditions.gpu.has_value() && run.env.resets_context();
}

}  // namespace

bool spread_over_contexts(const run_state& run) {
  return cold_over_contexts(run) && !run.contexts.bursts_end_by_state;
}

bool bursts_are_contexts(const run_state& run) {
  return cold_over_contexts(run) && run.contexts.bursts_end_by_state;
}

std::optional<stats::mixture_interval> contexts_interval(
    const run_state& run, const std::vector<context_figure>& figures) {
  if (figures.size() < 2) return std::nullopt;
  return stats::mixture_mean_ci(medians_of(figures), run.o.ci_level, run.o.level_spacing);
}

void stop_at_max_time(const run_state& run) {
  if (run.now() - run.start_ns >= to_ns(run.o.max_time)) throw stop_run{stop_reason::max_time, ""};
}

std::optional<stop_reason> should_stop(run_state& run, bool at_context_end) {
  const protocol_options& o = run.o;
  const int n = run.samples.kept();
  const std::int64_t now = run.now();
  if (n >= o.max_samples) return stop_reason::max_samples;
  if (now - run.start_ns >= to_ns(o.max_time)) return stop_reason::max_time;
  if (n < o.min_samples || now - run.measure_start_ns < to_ns(o.min_time)) return std::nullopt;
  if (spread_over_contexts(run)) {
    if (!at_context_end) return std::nullopt;
    const auto figures = context_figures(run);
    if (static_cast<int>(figures.size()) < o.contexts) return std::nullopt;
    if (contexts_ci_met(run, figures)) return stop_reason::converged;
    return std::nullopt;
  }
  if (!due(run.next_check.all, n)) return std::nullopt;
  const std::vector<double> kept = run.samples.kept_latencies();
  const bool met =
      bursts_are_contexts(run) ? bursts_ci_met(run, kept) : median_ci_within_rel_ci(run, kept);
  return met ? std::optional(stop_reason::converged) : std::nullopt;
}

bool context_done(run_state& run) {
  const int n = run.samples.kept_in(run.contexts.current);
  if (n == 0 || n < run.o.context_min_samples || !due(run.next_check.context, n)) return false;
  return median_ci_within_rel_ci(run, run.samples.kept_latencies_in(run.contexts.current));
}

std::vector<context_figure> context_figures(const run_state& run) {
  std::vector<context_figure> out;
  for (const auto& [context, kept] : run.samples.kept_by_context()) {
    if (kept < run.o.context_min_samples) continue;
    out.push_back({context, kept, stats::median(run.samples.kept_latencies_in(context))});
  }
  return out;
}

std::vector<context_figure> burst_figures(const run_state& run) {
  std::vector<context_figure> out;
  const int least = std::min(run.o.context_min_samples, k_burst_min_samples);
  for (const auto& [context, kept] : run.samples.kept_by_context()) {
    if (kept < least) continue;
    out.push_back({context, kept, stats::median(run.samples.kept_latencies_in(context))});
  }
  return out;
}

std::vector<double> medians_of(const std::vector<context_figure>& figures) {
  std::vector<double> medians;
  medians.reserve(figures.size());
  for (const auto& f : figures) medians.push_back(f.median_ms);
  return medians;
}

}  // namespace coolbench::measure::detail
