// Hidden state (docs/measure.md, "Hidden state"): the sentinel calibrated at the start of a run
// in a cleared state, checked before each burst and after the run; the isolation applied at the
// start, between a kept context's bursts, and before a burst whose sentinel moved.
#include "measure/protocol/run.hpp"

namespace coolbench::measure::detail {
namespace {

constexpr int calibration_checks = 5;

sensor_reading sensors_now(run_state& run) {
  sensor_reading s;
  if (const auto t = run.env.latest()) {
    if (t->temp_gpu_c.ok()) s.temp_c = t->temp_gpu_c.value;
    if (t->clock_sm_mhz.ok()) s.sm_clock_mhz = t->clock_sm_mhz.value;
    if (t->clock_reasons.ok()) s.clock_reasons = t->clock_reasons.value;
  }
  return s;
}

/// One sentinel check; a failure ends the sentinel's part in the run, not the run.
std::optional<double> check(run_state& run) {
  try {
    return run.env.sentinel_ms();
  } catch (const std::exception& e) {
    run.warn(std::string("the hidden-state sentinel failed and was left out: ") + e.what());
    run.r.hidden_state.reset();
    return std::nullopt;
  }
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

}  // namespace

void calibrate_sentinel_at_start(run_state& run) {
  if (!run.r.conditions.gpu || run.o.policy != sampling_policy::coolbench) return;
  const auto found = check(run);
  if (!found) return;
  const bool cleared = isolate(run);
  std::vector<double> medians;
  for (int i = 0; i < calibration_checks; ++i) {
    const auto m = check(run);
    if (!m) return;
    medians.push_back(*m);
  }
  hidden_state_record h;
  h.calibration = calibrate_sentinel(medians, sensors_now(run));
  h.applied = run.o.isolation;
  sentinel_check c = judge_sentinel(h.calibration, *found, sensors_now(run), "start, as found");
  if (c.moved && cleared) c.action = "cleared by " + to_string(run.o.isolation);
  if (c.hidden_state()) run.warn(c.where + ": " + c.summary());
  h.checks.push_back(std::move(c));
  run.r.hidden_state = std::move(h);
}

void check_sentinel_at_gate(run_state& run) {
  if (!run.r.hidden_state) return;
  // A kept context is not reset by the gate: the isolation stands in between its bursts.
  if (!run.env.resets_context()) (void)isolate(run);
  const auto m = check(run);
  if (!m) return;
  hidden_state_record& h = *run.r.hidden_state;
  const std::string where = "before burst " + std::to_string(run.r.bursts + 1);
  sentinel_check c = judge_sentinel(h.calibration, *m, sensors_now(run), where);
  if (c.hidden_state() && isolate(run)) {
    ++h.clearings;
    const auto again = check(run);
    if (!again) return;
    const sentinel_check after = judge_sentinel(h.calibration, *again, sensors_now(run), where);
    c.action = std::string(after.moved ? "not cleared" : "cleared") + " by " +
               to_string(run.o.isolation) + " (sentinel then " + after.summary() + ")";
    if (after.moved) run.warn(where + ": " + c.summary());
  }
  h.checks.push_back(std::move(c));
}

void check_sentinel_after_run(run_state& run) {
  if (!run.r.hidden_state) return;
  const auto m = check(run);
  if (!m) return;
  hidden_state_record& h = *run.r.hidden_state;
  sentinel_check c = judge_sentinel(h.calibration, *m, sensors_now(run), "after the run");
  if (c.hidden_state()) run.say("the workload leaves hidden state: " + c.summary());
  h.checks.push_back(std::move(c));
}

}  // namespace coolbench::measure::detail
