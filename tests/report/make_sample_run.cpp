// Writes run documents (docs/run-json.md) of the protocol on the simulated GPU
// (tests/measure/sim_gpu.hpp), as `coolbench run --json` would: the inputs of
// the report and compare tests. Usage: make_sample_run KIND OUT.json, KIND one
// of cold (a latency-bound chain spread over 4 contexts that draw different
// levels), cold-slower (the same, 2% slower), power-bound (cold mode: bursts
// cut by the power cap, discards, gates and releases), profile (cold to hot).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

#include "coolbench/report/format.hpp"
#include "coolbench/report/run_report.hpp"
#include "measure/sim_gpu.hpp"

namespace {

using namespace std::chrono_literals;
using namespace coolbench;

measure::run_result run(const std::string& kind) {
  measure::sim::gpu_model m;
  measure::protocol_options o;
  o.min_time = 200ms;
  o.max_time = 60s;
  o.rel_ci = 0.002;
  m.jitter_ms = 0.01;
  if (kind == "profile") {
    m.power_bound = true;
    m.base_ms = 5;
    m.heat_c_per_s = 5;
    o.mode = measure::run_mode::profile;
    o.profile_time = 20s;
  } else if (kind == "power-bound") {
    m.power_bound = true;
    m.base_ms = 5;
    m.heat_c_per_s = 2;
    o.contexts = 4;
  } else {
    m.base_ms = kind == "cold-slower" ? 0.408 : 0.4;
    m.context_levels = {1.0, 1.004, 0.998, 1.002};
    o.contexts = 4;
  }
  measure::sim::gpu g(m);
  measure::sim::workload w(g);
  measure::sim::environment env(g);
  return measure::measure(w, env, o);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    fmt::print(stderr, "usage: make_sample_run cold|cold-slower|power-bound|profile OUT.json\n");
    return 2;
  }
  const std::string kind = argv[1];
  if (kind != "cold" && kind != "cold-slower" && kind != "power-bound" && kind != "profile") {
    fmt::print(stderr, "make_sample_run: unknown kind '{}'\n", kind);
    return 2;
  }
  report::write_text_atomically(argv[2], report::to_json(run(kind)).dump(1) + "\n");
  return 0;
}
