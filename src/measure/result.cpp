// The names of a run's records: its phases and why it stopped (the JSON's spelling).
#include "coolbench/measure/result.hpp"

namespace coolbench::measure {

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

std::string to_string(sample_phase phase) {
  switch (phase) {
    case sample_phase::warmup: return "warmup";
    case sample_phase::measure: return "measure";
    case sample_phase::soak: return "soak";
  }
  return "?";
}

std::string to_string(energy_period_source source) {
  switch (source) {
    case energy_period_source::readings: return "readings";
    case energy_period_source::probe: return "probe";
    case energy_period_source::reading_interval: return "reading interval";
  }
  return "?";
}

}  // namespace coolbench::measure
