#include "coolbench/report/compare_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "coolbench/stats/summary.hpp"

namespace coolbench::report {
namespace {

std::string shown(const nlohmann::json& v) {
  if (v.is_null()) return "unknown";
  return v.is_string() ? v.get<std::string>() : v.dump();
}

/// The GPU block of a run's environment, or null for a run on the host.
const nlohmann::json& gpu_of(const run_document& r) {
  static const nlohmann::json none;
  const auto& env = r.doc["environment"];
  return env.contains("gpu") && env["gpu"].is_object() ? env["gpu"] : none;
}

/// Fields that must be equal, or else `refuse` or warn: (where, field, what it is).
struct check {
  const char* block;  ///< "gpu" or "configuration"
  const char* field;
  const char* what;
  bool refuse;
};

constexpr check k_checks[] = {
    {"gpu", "name", "GPU model", true},
    {"configuration", "mode", "mode", true},
    {"configuration", "policy", "policy", true},
    {"gpu", "uuid", "GPU (another card of the model: cards differ by a few %)", false},
    {"gpu", "driver_version", "driver", false},
    {"gpu", "power_limit_w", "power limit [W]", false},
    {"gpu", "clock_sm_max_mhz", "maximum SM clock [MHz]", false},
    {"gpu", "clock_graphics_app_mhz", "application clock [MHz]", false},
    {"configuration", "on_throttle", "throttled samples", false},
    {"configuration", "ci_level", "CI level", false},
};

/// The median SM clock of the kept measurement samples, if any was read.
std::optional<double> median_clock(const run_samples& s) {
  std::vector<double> clocks;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s.kept[i] && s.phase[i] == "measure" && std::isfinite(s.sm_clock_mhz[i])) {
      clocks.push_back(s.sm_clock_mhz[i]);
    }
  }
  if (clocks.empty()) return std::nullopt;
  return stats::median(clocks);
}

/// J per run B / A from the two runs' energy CIs (MOVER), where both have one.
std::optional<stats::ratio_interval> energy_ratio(const run_document& a, const run_document& b) {
  const auto estimate_of = [](const run_document& r) -> std::optional<stats::estimate> {
    const auto& e = r.doc["summary"].value("energy", nlohmann::json());
    const auto ci = e.is_object() ? e.value("ci_j", nlohmann::json()) : nlohmann::json();
    if (!ci.is_array() || ci.size() != 2) return std::nullopt;
    const double j = e.value("j_per_run", 0.0);
    const double lo = ci[0].get<double>();
    const double hi = ci[1].get<double>();
    if (!(lo > 0)) return std::nullopt;
    return stats::estimate{j, std::min(lo, j), std::max(hi, j)};
  };
  const auto ea = estimate_of(a);
  const auto eb = estimate_of(b);
  if (!ea || !eb) return std::nullopt;
  return stats::ratio_ci_mover(*ea, *eb);
}

bool within(const stats::ratio_interval& r, double same_within) {
  return r.lower >= 1 - same_within && r.upper <= 1 + same_within;
}

void set_verdict(run_comparison& c, double same_within) {
  const ratio_verdict v = judge_ratio(
      c.time, c.cycles, same_within, c.baseline_clock_mhz, c.candidate_clock_mhz,
      !c.baseline_ms || !c.candidate_ms ? "a run has no figure (no sample was kept)"
                                        : "a run has no CI (too few samples or contexts for one)");
  c.verdict = v.verdict;
  c.reason = v.reason;
}

std::string uncertainty_of(const run_document& r, bool& one_context_draw) {
  const int n = r.figure_contexts();
  if (n > 1) return fmt::format("over {} contexts", n);
  const bool on_gpu = !gpu_of(r).is_null();
  one_context_draw = one_context_draw || on_gpu;
  if (!on_gpu) return "one process on the host";
  const int pooled = r.kept_contexts();
  return pooled > 1 ? fmt::format("samples of {} contexts pooled (a CI over samples, not contexts)",
                                  pooled)
                    : std::string("one context's draw");
}

}  // namespace

ratio_verdict judge_ratio(const std::optional<stats::ratio_interval>& time,
                          const std::optional<stats::ratio_interval>& cycles, double same_within,
                          std::optional<double> baseline_clock_mhz,
                          std::optional<double> candidate_clock_mhz, std::string_view no_ci) {
  if (!time) return {"UNSURE", std::string(no_ci)};
  const auto& t = *time;
  const bool faster = t.upper < 1;
  const bool slower = t.lower > 1;
  if (faster || slower) {
    const bool cycles_agree = !cycles || (faster ? cycles->upper < 1 : cycles->lower > 1);
    if (cycles_agree) {
      return {faster ? "FASTER" : "SLOWER",
              fmt::format("the CI of B/A lies {} 1{}", faster ? "below" : "above",
                          cycles ? ", in time and in clock cycles" : "")};
    }
    return {"UNSURE",
            fmt::format("{} in time, not in clock cycles: the SM clocks differ ({:.0f} against "
                        "{:.0f} MHz), so the clock may explain it",
                        faster ? "faster" : "slower", candidate_clock_mhz.value_or(0),
                        baseline_clock_mhz.value_or(0))};
  }
  if (within(t, same_within) && (!cycles || within(*cycles, same_within))) {
    return {"SAME",
            fmt::format("the CI of B/A contains 1 and lies within ±{:g}%", 100 * same_within)};
  }
  return {"UNSURE",
          within(t, same_within)
              ? fmt::format("the same in time, but the CI in clock cycles is wider than ±{:g}%",
                            100 * same_within)
              : fmt::format("the CI of B/A contains 1 and is wider than ±{:g}%: measure longer "
                            "or over more contexts",
                            100 * same_within)};
}

std::vector<comparability_issue> comparability(const run_document& a, const run_document& b) {
  std::vector<comparability_issue> issues;
  const auto& gpu_a = gpu_of(a);
  const auto& gpu_b = gpu_of(b);
  if (gpu_a.is_null() != gpu_b.is_null()) {
    issues.push_back(
        {fmt::format("one run is on a GPU, the other on the host ({} against {})",
                     gpu_a.is_null() ? "host" : shown(gpu_a.value("name", nlohmann::json())),
                     gpu_b.is_null() ? "host" : shown(gpu_b.value("name", nlohmann::json()))),
         true});
  }
  for (const auto& c : k_checks) {
    const bool on_gpu = std::string_view(c.block) == "gpu";
    if (on_gpu && (gpu_a.is_null() || gpu_b.is_null())) continue;
    const auto& block_a = on_gpu ? gpu_a : a.doc["configuration"];
    const auto& block_b = on_gpu ? gpu_b : b.doc["configuration"];
    const auto va = block_a.value(c.field, nlohmann::json());
    const auto vb = block_b.value(c.field, nlohmann::json());
    if (va != vb) {
      issues.push_back(
          {fmt::format("{} differs: {} against {}", c.what, shown(va), shown(vb)), c.refuse});
    }
  }
  for (const auto* r : {&a, &b}) {
    if (r == &b && b.source == a.source) break;  // the same file, said once
    if (!r->doc.value("complete", true)) {
      issues.push_back({fmt::format("{} is incomplete ({})", r->source,
                                    shown(r->doc.value("error", nlohmann::json()))),
                        false});
    }
  }
  return issues;
}

run_comparison compare_runs(const run_document& a, const run_document& b, double same_within) {
  run_comparison c;
  c.baseline = a.source;
  c.candidate = b.source;
  c.baseline_workload = a.doc.value("workload", std::string());
  c.candidate_workload = b.doc.value("workload", std::string());
  c.baseline_ms = a.figure_ms();
  c.candidate_ms = b.figure_ms();
  c.baseline_contexts = a.figure_contexts();
  c.candidate_contexts = b.figure_contexts();
  c.level = std::min(a.ci_level(), b.ci_level());
  c.issues = comparability(a, b);
  c.uncertainty = fmt::format("A {}, B {}", uncertainty_of(a, c.one_context_draw),
                              uncertainty_of(b, c.one_context_draw));
  const auto ci_a = a.figure_ci_ms();
  const auto ci_b = b.figure_ci_ms();
  if (c.baseline_ms && c.candidate_ms && ci_a && ci_b && ci_a->first > 0 && ci_b->first > 0) {
    c.time = stats::ratio_ci_mover({*c.baseline_ms, std::min(ci_a->first, *c.baseline_ms),
                                    std::max(ci_a->second, *c.baseline_ms)},
                                   {*c.candidate_ms, std::min(ci_b->first, *c.candidate_ms),
                                    std::max(ci_b->second, *c.candidate_ms)});
  }
  c.baseline_clock_mhz = median_clock(a.samples);
  c.candidate_clock_mhz = median_clock(b.samples);
  if (c.time && c.baseline_clock_mhz && c.candidate_clock_mhz && *c.baseline_clock_mhz > 0) {
    // Cycles = time × clock: the ratio scales by the clocks' ratio.
    const double k = *c.candidate_clock_mhz / *c.baseline_clock_mhz;
    c.cycles = stats::ratio_interval{c.time->ratio * k, c.time->lower * k, c.time->upper * k};
  }
  c.energy = energy_ratio(a, b);
  set_verdict(c, same_within);
  return c;
}

}  // namespace coolbench::report
