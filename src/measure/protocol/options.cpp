// The protocol's names (modes, policies, throttle actions, stop reasons) and the check of its
// options.
#include <stdexcept>

#include "coolbench/measure/protocol.hpp"

namespace coolbench::measure {
namespace {

using std::chrono::milliseconds;

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

std::string to_string(stop_reason reason) {
  switch (reason) {
    case stop_reason::converged: return "converged";
    case stop_reason::max_time: return "max time";
    case stop_reason::max_samples: return "max samples";
    case stop_reason::profile_time: return "profile time";
    case stop_reason::steady_temperature: return "steady temperature";
    case stop_reason::ceiling: return "ceiling";
    case stop_reason::interrupted: return "interrupted";
    case stop_reason::gate_timeout: return "gate time-out";
    case stop_reason::invalid_input: return "invalid input";
    case stop_reason::error: return "error";
    case stop_reason::stopped: return "stopped";
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

}  // namespace coolbench::measure
