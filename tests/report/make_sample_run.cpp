// Writes run documents (docs/run-json.md) of the protocol on the simulated GPU
// (tests/measure/sim_gpu.hpp), as `coolbench run --json` would: the inputs of
// the report and compare tests. Usage: make_sample_run KIND OUT.json, KIND one
// of cold (a latency-bound chain spread over 4 contexts that draw different
// levels), cold-slower (the same, 2% slower), power-bound (cold mode: bursts
// cut by the power cap, discards, gates and releases), profile (cold to hot), ab (a matched
// A/B run, schema coolbench.ab/1: B's chain 2% longer, the contexts drawing levels), multi (three
// GPUs at once, schema coolbench.multi/1: GPU 1 5% slower, GPU 2 fails part-way).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

#include "coolbench/measure/ab.hpp"
#include "coolbench/report/ab_report.hpp"
#include "coolbench/report/format.hpp"
#include "coolbench/report/multi_report.hpp"
#include "coolbench/report/run_report.hpp"
#include "measure/sim_devices.hpp"
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

/// The simulated chain at `factor` times the GPU's base latency.
class scaled final : public measure::workload {
 public:
  scaled(measure::sim::gpu& g, double factor, std::string name)
      : m_gpu(g), m_inner(g), m_factor(factor), m_name(std::move(name)) {}
  std::string describe() const override { return m_name; }
  std::optional<int> device() const override { return 0; }
  void prepare() override { m_inner.prepare(); }
  measure::timing run() override {
    const double base = m_gpu.m.base_ms;
    m_gpu.m.base_ms = base * m_factor;
    const measure::timing t = m_inner.run();
    m_gpu.m.base_ms = base;
    return t;
  }
  void release() override { m_inner.release(); }

 private:
  measure::sim::gpu& m_gpu;
  measure::sim::workload m_inner;
  double m_factor;
  std::string m_name;
};

nlohmann::json matched_ab() {
  measure::sim::gpu_model m;
  m.base_ms = 0.25;
  m.jitter_ms = 0.002;
  m.context_levels = {1.0, 1.012, 0.996, 1.016};
  measure::sim::gpu g(m);
  scaled a(g, 1.0, "simulated chain");
  scaled b(g, 1.02, "simulated chain, 2% longer");
  measure::sim::environment env(g);
  measure::protocol_options o;
  o.rel_ci = 0.002;
  o.contexts = 5;
  return report::ab_to_json(measure::measure_ab(a, b, env, o), 0.01);
}

nlohmann::json three_gpus() {
  measure::sim::gpu_model m;
  m.jitter_ms = 0.01;
  std::vector<measure::sim::gpu_model> models(3, m);
  models[1].base_ms = 0.42;
  measure::protocol_options o;
  o.min_time = 200ms;
  o.rel_ci = 0.002;
  o.contexts = 1;
  return report::multi_to_json(measure::sim::simulated_devices(models, 2, o));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    fmt::print(stderr,
               "usage: make_sample_run cold|cold-slower|power-bound|profile|ab|multi OUT.json\n");
    return 2;
  }
  const std::string kind = argv[1];
  if (kind == "ab") {
    report::write_text_atomically(argv[2], matched_ab().dump(1) + "\n");
    return 0;
  }
  if (kind == "multi") {
    report::write_text_atomically(argv[2], three_gpus().dump(1) + "\n");
    return 0;
  }
  if (kind != "cold" && kind != "cold-slower" && kind != "power-bound" && kind != "profile") {
    fmt::print(stderr, "make_sample_run: unknown kind '{}'\n", kind);
    return 2;
  }
  report::write_text_atomically(argv[2], report::to_json(run(kind)).dump(1) + "\n");
  return 0;
}
