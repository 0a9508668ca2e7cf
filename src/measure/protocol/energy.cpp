// Energy per run from the GPU's energy counter, read once for the whole run.
#include <algorithm>

#include "measure/protocol/run.hpp"

namespace coolbench::measure::detail {
namespace {

/// The runs' worth of measurement in the span [from, to): how many runs fell inside (a run
/// that straddles an end counts by its fraction inside), and whether they filled it.
struct span_worth {
  double runs = 0;
  bool steady = true;
};

span_worth worth_between(const sample_log& samples, std::size_t& first, std::int64_t from,
                         std::int64_t to) {
  span_worth w;
  std::int64_t covered = 0;  // run time inside the span
  while (first < samples.size() && samples[first].time.end_ns <= from) ++first;
  for (std::size_t i = first; i < samples.size(); ++i) {
    const timing& run = samples[i].time;
    if (run.start_ns >= to) break;
    if (samples[i].phase != sample_phase::measure) w.steady = false;  // a warm-up between
    const std::int64_t inside = std::min(run.end_ns, to) - std::max(run.start_ns, from);
    if (run.end_ns > run.start_ns && inside > 0) {
      w.runs += static_cast<double>(inside) / static_cast<double>(run.end_ns - run.start_ns);
      covered += inside;
    }
  }
  // A release, a gate or a sleep inside the span leaves it mostly idle: its energy is not
  // the runs'.
  w.steady = w.steady && static_cast<double>(covered) >= 0.9 * static_cast<double>(to - from);
  return w;
}

}  // namespace

/// Over each pair of readings between which measurement runs filled at least 90 % of the
/// time, the energy divided by the runs' worth of time in that span.
std::optional<double> energy_per_run(run_state& run) {
  const sample_log& samples = run.samples;
  if (!run.r.conditions.gpu || samples.empty()) return std::nullopt;
  const auto readings = run.env.between(samples[0].time.start_ns, samples.back().time.end_ns);
  double joules = 0;
  double runs = 0;
  const telemetry::gpu_sample* previous = nullptr;
  std::size_t first = 0;  // first sample that may overlap the current span
  for (const auto& t : readings) {
    if (!t.energy_mj.ok()) continue;
    if (previous != nullptr) {
      const span_worth w = worth_between(samples, first, previous->time_ns, t.time_ns);
      if (w.steady && w.runs > 0 && t.energy_mj.value >= previous->energy_mj.value) {
        joules += static_cast<double>(t.energy_mj.value - previous->energy_mj.value) / 1000.0;
        runs += w.runs;
      }
    }
    previous = &t;
  }
  if (runs > 0) return joules / runs;
  return std::nullopt;
}

}  // namespace coolbench::measure::detail
