// Hidden state (docs/measure.md, "Hidden state"): the sentinel calibrated at the start of a run
// in a cleared state, checked before each burst and after the run; the isolation applied at the
// start, between a kept context's bursts, and before a burst whose sentinel moved. A check is
// judged only against a calibration of its own CUDA context (a latency-bound sentinel draws its
// figure per context): the first check in a new context sets that context's level (a new
// context starts clean), with the noise of the start's calibration.
#include "measure/protocol/run.hpp"

namespace coolbench::measure::detail {
namespace {

constexpr int calibration_checks = 5;  // at the start

sensor_reading sensors_now(run_state& run) { return sensors_of(run.env.latest()); }

/// One sentinel check; a failure ends the sentinel's part in the run, not the run.
std::optional<sentinel_reading> check(run_state& run) {
  try {
    return run.env.check_sentinel(run.o.sentinel);
  } catch (const std::exception& e) {
    run.warn(std::string("the hidden-state sentinel failed and was left out: ") + e.what());
    run.r.hidden_state.reset();
    return std::nullopt;
  }
}

/// `count` checks as a calibration of the context they ran in (the last one's, should a check
/// have landed in another).
std::optional<sentinel_calibration> calibrate(run_state& run, int count) {
  std::vector<double> medians;
  std::uint64_t context = 0;
  for (int i = 0; i < count; ++i) {
    const auto m = check(run);
    if (!m) return std::nullopt;
    if (!medians.empty() && m->context != context) medians.clear();
    medians.push_back(m->median_ms);
    context = m->context;
  }
  sentinel_calibration c = calibrate_sentinel(medians, sensors_now(run));
  c.context = context;
  return c;
}

/// The run's isolation; a failure is a warning. Returns whether it was done.
bool isolate(run_state& run) {
  try {
    const std::string line = run.env.isolate(run.o.isolation);
    if (!line.empty()) run.say(line);
    return !line.empty();
  } catch (const std::exception& e) {
    run.warn("isolation " + to_string(run.o.isolation) + " failed: " + e.what());
    return false;
  }
}

/// A check in the calibration's context, judged; a check in a new context calibrates the
/// sentinel there instead (empty then, or when the sentinel failed).
std::optional<sentinel_check> judged_check(run_state& run, const std::string& where) {
  const auto m = check(run);
  if (!m || !run.r.hidden_state) return std::nullopt;
  hidden_state_record& h = *run.r.hidden_state;
  if (m->context != h.calibration.context) {
    // This check is the new context's level; the scatter of checks around a level is the
    // sentinel's own and stays the start's (cold mode makes a context per burst: one check
    // each keeps the sentinel's cost to one check a gate).
    sentinel_calibration c = calibrate_sentinel({m->median_ms}, sensors_now(run));
    c.noise = h.calibration.noise;
    c.context = m->context;
    h.calibration = c;
    ++h.calibrations;
    return std::nullopt;
  }
  return judge_sentinel(h.calibration, m->median_ms, sensors_now(run), where);
}

}  // namespace

void calibrate_sentinel_at_start(run_state& run) {
  if (!run.r.conditions.gpu || run.o.policy != sampling_policy::coolbench ||
      run.o.sentinel == sentinel_kind::none) {
    return;
  }
  const auto found = check(run);
  if (!found) return;
  const bool cleared = isolate(run);
  const auto calibration = calibrate(run, calibration_checks);
  if (!calibration) return;
  hidden_state_record h;
  h.calibration = *calibration;
  h.calibrations = 1;
  h.applied = run.o.isolation;
  h.sentinel = run.o.sentinel;
  sentinel_check c =
      judge_sentinel(h.calibration, found->median_ms, sensors_now(run), "start, as found");
  if (found->context != h.calibration.context) {
    // The isolation made a new context: the state as found is not comparable with it, and
    // whatever it was, the new context does not carry it.
    c.judged = false;
    c.action =
        "the isolation (" + to_string(run.o.isolation) + ") made a new context, which starts clean";
  } else if (c.moved && cleared) {
    c.action = "cleared by " + to_string(run.o.isolation);
  }
  if (c.hidden_state()) run.warn(c.where + ": " + c.summary());
  h.checks.push_back(std::move(c));
  run.r.hidden_state = std::move(h);
}

namespace {

/// Before the workload is acquired again: a kept context isolated, a check (in a new context,
/// its level), and the isolation and a second check when it moved.
void check_before(run_state& run, const std::string& where) {
  if (!run.r.hidden_state) return;
  // A kept context is not reset by the gate: the isolation stands in between its bursts.
  if (!run.env.resets_context()) (void)isolate(run);
  auto c = judged_check(run, where);
  if (!c) return;
  hidden_state_record& h = *run.r.hidden_state;
  if (c->hidden_state() && isolate(run)) {
    ++h.clearings;
    const auto again = judged_check(run, where);
    if (again) {
      c->action = std::string(again->moved ? "not cleared" : "cleared") + " by " +
                  to_string(run.o.isolation) + " (sentinel then " + again->summary() + ")";
      if (again->moved) run.warn(where + ": " + c->summary());
    } else if (run.r.hidden_state) {
      c->action = "cleared by " + to_string(run.o.isolation) + " (a new context)";
    } else {
      return;
    }
  }
  run.r.hidden_state->checks.push_back(std::move(*c));
}

}  // namespace

void check_sentinel_at_gate(run_state& run) {
  check_before(run, "before burst " + std::to_string(run.r.bursts + 1));
}

void check_sentinel_before_measuring(run_state& run) { check_before(run, "before measuring"); }

void check_sentinel_after_run(run_state& run) {
  if (!run.r.hidden_state) return;
  const auto c = judged_check(run, "after the run");
  if (!c) return;
  if (c->hidden_state()) run.say("the workload leaves hidden state: " + c->summary());
  run.r.hidden_state->checks.push_back(*c);
}

}  // namespace coolbench::measure::detail
