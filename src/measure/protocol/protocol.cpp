// The measurement protocol (docs/measure.md): one run, from the conditions recorded before it
// to the release after it. The steps are in the files run.hpp lists.
#include "coolbench/measure/protocol.hpp"

#include <algorithm>
#include <sstream>

#include "measure/protocol/run.hpp"

namespace coolbench::measure {
namespace detail {

double seconds_between(std::int64_t from_ns, std::int64_t to_ns) {
  return static_cast<double>(to_ns - from_ns) / 1e9;
}

std::string format_c(double c) {
  std::ostringstream s;
  s << c << " C";
  return s.str();
}

run_state::run_state(workload& workload_, environment& environment_,
                     const protocol_options& options, const progress_fn& progress_)
    : w(workload_), env(environment_), o(options), progress(progress_) {}

void run_state::say(const std::string& line) const {
  if (progress) progress(line);
}

void run_state::report_status(const char* phase, int burst, std::optional<int> temp_c) {
  if (status == nullptr || !*status) return;
  const std::int64_t t = now();
  if (last_status_ns != 0 && t - last_status_ns < 100 * k_ns_per_ms) return;
  last_status_ns = t;
  run_status s;
  s.phase = phase;
  s.label = label;
  s.temp_c = temp_c;
  s.target_temp_c = o.target_temp_c;
  s.burst = burst;
  s.kept = samples.kept();
  s.rel_ci_now = ci_now;
  s.elapsed_s = seconds_between(start_ns, t);
  (*status)(s);
}

void run_state::warn(std::string warning) {
  r.warnings.push_back(std::move(warning));
  say("warning: " + r.warnings.back());
}

/// What applies to this run: the throttle action (baselines label only: nvbench's own rule
/// discards; the protocol's default depends on the mode, as throttling is what sustained and
/// profile runs are about), the ceiling, the clock, one context where contexts cannot be
/// spread. The configuration recorded is what applied.
void settle_conditions(detail::run_state& run) {
  const protocol_options& o = run.o;
  run_result& r = run.r;
  r.workload = run.w.describe();
  r.options = o;
  run.action = o.policy != sampling_policy::coolbench
                   ? throttle_action::label
                   : o.on_throttle.value_or(o.mode == run_mode::cold ? throttle_action::discard
                                                                     : throttle_action::label);
  r.options.on_throttle = run.action;
  r.conditions = run.env.conditions();
  for (const auto& warning : r.conditions.warnings) run.say("warning: " + warning);
  if (!r.conditions.gpu) {
    run.max_temp = o.max_temp_c.value_or(80.0);
    r.options.contexts = 1;  // contexts are a GPU's: a host workload is one "context"
  } else {
    const auto& id = *r.conditions.gpu;
    if (id.clock_sm_max_mhz.ok()) run.max_clock = id.clock_sm_max_mhz.value;
    run.max_temp = o.max_temp_c.value_or(
        id.temp_slowdown_c.ok() ? static_cast<double>(id.temp_slowdown_c.value) - 10.0 : 80.0);
    if (!run.env.resets_context()) {
      r.options.contexts = 1;
      run.warn(
          "the CUDA context was kept between bursts (release keep): the GPU cooled with the "
          "context held, and state that no sensor shows was not cleared between bursts; the "
          "figure is one context's (docs/measure.md, \"Contexts\")");
    }
  }
  if (const auto s = run.env.latest(); s && s->temp_gpu_c.ok()) {
    r.conditions.start_temp_c = s->temp_gpu_c.value;
  }
}

namespace {

stop_reason run_mode_of(detail::run_state& run) {
  if (run.o.policy != sampling_policy::coolbench) return run_baseline(run);
  if (!run.r.conditions.gpu) return run_host(run);
  switch (run.o.mode) {
    case run_mode::cold: return run_cold(run);
    case run_mode::sustained: return run_sustained(run);
    case run_mode::profile: return run_profile(run);
  }
  return run_cold(run);
}

/// Runs the mode; a run cut short says why and keeps what it measured.
void run_to_the_end(detail::run_state& run) {
  run_result& r = run.r;
  try {
    r.stop_reason = run_mode_of(run);
    return;
  } catch (const stop_run& stop) {
    r.stop_reason = stop.reason;
    r.error = stop.error;
    // --max-time passed in a gate or a warm-up: a max-time stop as any other, once
    // something was measured.
    if (stop.reason == stop_reason::max_time) {
      if (run.samples.kept() > 0) return;
      r.error =
          "--max-time passed before anything was measured (in the warm-up or the first "
          "gate): raise --max-time";
    }
  } catch (const invalid_argument& e) {
    // The workload refused what it was given (a model input dimension left unbound): the
    // caller's to fix, not a failure of the run.
    r.stop_reason = stop_reason::invalid_input;
    r.error = e.what();
  } catch (const std::exception& e) {
    r.stop_reason = stop_reason::error;
    r.error = e.what();
  }
  r.complete = false;
}

}  // namespace

/// Hands the GPU back whatever happened: the last step of every run.
void release_at_the_end(detail::run_state& run) {
  run_result& r = run.r;
  try {
    for (std::string& warning : run.w.warnings()) {
      if (std::find(r.warnings.begin(), r.warnings.end(), warning) == r.warnings.end()) {
        run.warn(std::move(warning));
      }
    }
  } catch (const std::exception& e) {
    run.warn(std::string("the workload's own warnings could not be read: ") + e.what());
  }
  try {
    run.w.release();
    if (r.conditions.gpu) {
      r.final_release = run.env.release_device();
      run.say(r.final_release);
      if (run.env.resets_context()) ++r.releases;
    }
  } catch (const std::exception& e) {
    r.final_release = std::string("release failed: ") + e.what();
    if (r.error.empty()) r.error = std::string("releasing at the end: ") + e.what();
  }
}

}  // namespace detail

run_result measure(workload& w, environment& env, const protocol_options& options,
                   const progress_fn& progress, const status_fn& status) {
  validate(options);
  detail::run_state run(w, env, options, progress);
  run.status = &status;
  run.start_ns = env.now_ns();
  detail::settle_conditions(run);
  detail::calibrate_sentinel_at_start(run);
  detail::run_to_the_end(run);
  detail::check_sentinel_after_run(run);
  run.r.converged = run.r.stop_reason == stop_reason::converged;
  detail::release_at_the_end(run);
  detail::summarize(run);
  run.r.samples = std::move(run.samples).release();
  return std::move(run.r);
}

}  // namespace coolbench::measure
