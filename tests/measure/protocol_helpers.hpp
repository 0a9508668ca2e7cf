// What the protocol's tests on a simulated GPU (sim_gpu.hpp) share: short options, a run, and a
// power-bound chain.
#pragma once

#include <chrono>
#include <cmath>

#include "coolbench/measure/protocol.hpp"
#include "measure/sim_gpu.hpp"

namespace coolbench::measure::protocol_helpers {

using namespace std::chrono_literals;

/// Options that converge in well under a simulated second.
inline protocol_options quick_options() {
  protocol_options o;
  o.min_time = 200ms;
  o.max_time = 60s;
  o.rel_ci = 0.002;
  return o;
}

inline run_result run_sim(sim::gpu& g, const protocol_options& o, int interrupt_after = -1) {
  sim::workload w(g);
  sim::environment env(g);
  env.interrupt_after = interrupt_after;
  return measure(w, env, o);
}

inline double relative_difference(double a, double b) { return std::abs(a - b) / b; }

/// A long power-bound GEMM chain: 5 ms a run, so the cap bites within a
/// dozen runs.
inline sim::gpu_model power_bound_chain() {
  sim::gpu_model m;
  m.power_bound = true;
  m.base_ms = 5;
  m.heat_c_per_s = 5;
  return m;
}

}  // namespace coolbench::measure::protocol_helpers
