#include "coolbench/report/run_report.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "coolbench/core/version.hpp"
#include "coolbench/report/format.hpp"
#include "coolbench/telemetry/clock_reasons.hpp"

namespace coolbench::report {
namespace {

using measure::latency_summary;
using measure::run_result;
using measure::sample_record;

template <class T>
nlohmann::json optional_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

template <class T>
std::string optional_cell(const std::optional<T>& v) {
  return v ? fmt::format("{}", *v) : "";
}

/// One column of the CSV and one member of a sample in the JSON: the one list of a sample's
/// fields, in the CSV's order (docs/run-json.md).
struct sample_field {
  const char* name;
  nlohmann::json (*json)(const sample_record& s);
  std::string (*csv)(const sample_record& s);
};

const std::vector<sample_field>& sample_fields() {
  static const std::vector<sample_field> fields = {
      {"phase", [](const sample_record& s) -> nlohmann::json { return to_string(s.phase); },
       [](const sample_record& s) { return to_string(s.phase); }},
      {"burst", [](const sample_record& s) -> nlohmann::json { return s.burst; },
       [](const sample_record& s) { return std::to_string(s.burst); }},
      {"start_ns", [](const sample_record& s) -> nlohmann::json { return s.time.start_ns; },
       [](const sample_record& s) { return std::to_string(s.time.start_ns); }},
      {"end_ns", [](const sample_record& s) -> nlohmann::json { return s.time.end_ns; },
       [](const sample_record& s) { return std::to_string(s.time.end_ns); }},
      {"latency_ms", [](const sample_record& s) -> nlohmann::json { return s.time.latency_ms; },
       [](const sample_record& s) { return fmt::format("{:.6f}", s.time.latency_ms); }},
      {"kept", [](const sample_record& s) -> nlohmann::json { return s.kept; },
       [](const sample_record& s) { return std::string(s.kept ? "1" : "0"); }},
      {"throttled", [](const sample_record& s) -> nlohmann::json { return s.throttled; },
       [](const sample_record& s) { return std::string(s.throttled ? "1" : "0"); }},
      {"throttle_reason",
       [](const sample_record& s) -> nlohmann::json { return s.throttle_reason; },
       [](const sample_record& s) { return fmt::format("\"{}\"", s.throttle_reason); }},
      {"temp_c",
       [](const sample_record& s) -> nlohmann::json { return optional_json(s.conditions.temp_c); },
       [](const sample_record& s) { return optional_cell(s.conditions.temp_c); }},
      {"sm_clock_mhz",
       [](const sample_record& s) -> nlohmann::json {
         return optional_json(s.conditions.sm_clock_mhz);
       },
       [](const sample_record& s) { return optional_cell(s.conditions.sm_clock_mhz); }},
      {"power_w",
       [](const sample_record& s) -> nlohmann::json { return optional_json(s.conditions.power_w); },
       [](const sample_record& s) {
         return s.conditions.power_w ? fmt::format("{:.1f}", *s.conditions.power_w) : "";
       }},
      {"clock_reasons",
       [](const sample_record& s) -> nlohmann::json { return s.conditions.reasons; },
       [](const sample_record& s) { return std::to_string(s.conditions.reasons); }},
      {"context", [](const sample_record& s) -> nlohmann::json { return s.context; },
       [](const sample_record& s) { return std::to_string(s.context); }},
      {"throttle_counter_moved",
       [](const sample_record& s) -> nlohmann::json { return s.conditions.throttle_counter_moved; },
       [](const sample_record& s) {
         return std::string(s.conditions.throttle_counter_moved ? "1" : "0");
       }},
      {"telemetry_samples",
       [](const sample_record& s) -> nlohmann::json { return s.conditions.telemetry_samples; },
       [](const sample_record& s) { return std::to_string(s.conditions.telemetry_samples); }},
  };
  return fields;
}

nlohmann::json to_json(const latency_summary& s) {
  return {{"count", s.count},     {"median_ms", s.median_ms},
          {"mean_ms", s.mean_ms}, {"min_ms", s.min_ms},
          {"max_ms", s.max_ms},   {"p90_ms", s.p90_ms},
          {"p99_ms", s.p99_ms},   {"cv", s.cv}};
}

nlohmann::json options_json(const measure::protocol_options& o) {
  const auto ms = [](std::chrono::milliseconds d) { return d.count(); };
  return {{"mode", to_string(o.mode)},
          {"policy", to_string(o.policy)},
          {"on_throttle", o.on_throttle ? to_string(*o.on_throttle) : "default"},
          {"target_temp_c", o.target_temp_c},
          {"max_temp_c", optional_json(o.max_temp_c)},
          {"gate_timeout_ms", ms(o.gate_timeout)},
          {"clock_fraction", o.clock_fraction},
          {"rel_ci", o.rel_ci},
          {"ci_level", o.ci_level},
          {"min_samples", o.min_samples},
          {"max_samples", o.max_samples},
          {"min_time_ms", ms(o.min_time)},
          {"max_time_ms", ms(o.max_time)},
          {"max_burst_ms", ms(o.max_burst)},
          {"sensor_lag_ms", ms(o.sensor_lag)},
          {"step_threshold", o.step_threshold},
          {"soak_window_ms", ms(o.soak_window)},
          {"profile_time_ms", ms(o.profile_time)},
          {"cooldown_interval_ms", ms(o.cooldown_interval)},
          {"repeats_to_cooldown", o.repeats_to_cooldown},
          {"discard_clock_fraction", o.discard_clock_fraction},
          {"contexts", o.contexts},
          {"context_min_samples", o.context_min_samples},
          {"level_spacing", o.level_spacing},
          {"isolation", to_string(o.isolation)},
          {"sentinel", to_string(o.sentinel)}};
}

nlohmann::json hidden_state_json(const std::optional<measure::hidden_state_record>& h) {
  if (!h) return nullptr;
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : h->checks) {
    checks.push_back({{"where", c.where},
                      {"median_ms", c.median_ms},
                      {"reference_ms", c.reference_ms},
                      {"shift", c.shift},
                      {"threshold", c.threshold},
                      {"moved", c.moved},
                      {"judged", c.judged},
                      {"sensors_unchanged", c.sensors_unchanged},
                      {"sensor_change", c.sensor_change},
                      {"hidden_state", c.hidden_state()},
                      {"action", c.action},
                      {"summary", c.summary()}});
  }
  return {{"summary", h->summary()},
          {"sentinel", to_string(h->sentinel)},
          {"isolation", to_string(h->applied)},
          {"calibration_ms", h->calibration.median_ms},
          {"calibration_noise", h->calibration.noise},
          {"calibration_checks", h->calibration.checks},
          {"calibrations", h->calibrations},
          {"clearings", h->clearings},
          {"checks", checks}};
}

nlohmann::json buckets_json(const std::vector<measure::profile_bucket>& buckets) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& b : buckets) {
    list.push_back({{"from", b.from},
                    {"to", b.to},
                    {"count", b.count},
                    {"median_ms", b.median_ms},
                    {"vs_reference", b.vs_coolest}});
  }
  return list;
}

nlohmann::json contexts_json(const std::optional<measure::context_summary>& c) {
  if (!c) return nullptr;
  nlohmann::json per_context = nlohmann::json::array();
  for (const auto& f : c->per_context) {
    per_context.push_back(
        {{"context", f.context}, {"samples", f.samples}, {"median_ms", f.median_ms}});
  }
  return {{"count", c->per_context.size()},
          {"mean_ms", c->mean_ms},
          {"ci_ms", c->ci ? nlohmann::json{c->ci->first, c->ci->second} : nlohmann::json(nullptr)},
          {"spread", c->spread},
          {"cv", c->cv},
          {"per_context", per_context}};
}

nlohmann::json energy_json(const std::optional<measure::energy_figure>& e) {
  if (!e) return nullptr;
  return {{"j_per_run", e->j_per_run},
          {"ci_j", e->ci ? nlohmann::json{e->ci->first, e->ci->second} : nlohmann::json(nullptr)},
          {"mean_power_w", e->mean_power_w},
          {"windows", e->windows},
          {"seconds", e->seconds},
          {"runs", e->runs},
          {"counter_period_ms", e->counter_period_ms},
          {"counter_period_resolved", e->period_resolved},
          {"counter_period_source", measure::to_string(e->period_source)},
          {"counter_period_note",
           e->period_note.empty() ? nlohmann::json(nullptr) : nlohmann::json(e->period_note)},
          {"reading_interval_ms", e->reading_interval_ms},
          {"window_min_ms", e->window_min_ms}};
}

nlohmann::json energy_probe_json(const std::optional<telemetry::energy_probe_result>& p) {
  if (!p) return nullptr;
  return {{"period_ms", optional_json(p->period_ms)},
          {"resolved", p->resolved},
          {"steps", p->steps},
          {"reads", p->reads},
          {"failed_reads", p->failed_reads},
          {"seconds", p->seconds},
          {"note", p->note}};
}

/// The start-up probe's line when it gave the energy figure nothing.
std::string unused_probe_line(const measure::run_result& r) {
  if (r.energy) return r.energy->period_note.empty() ? "" : "  " + r.energy->period_note + "\n";
  if (!r.energy_probe || r.energy_probe->period_ms) return {};
  return "  the start-up probe learned no period: " + r.energy_probe->note + "\n";
}

}  // namespace

std::string format_energy(const measure::run_result& r) {
  if (!r.energy) {
    if (!r.energy_per_run_j) return {};
    return fmt::format(
               "energy {:.4f} J per run (no measurement stretch was {} counter periods long: no "
               "CI)\n",
               *r.energy_per_run_j, measure::k_energy_window_periods) +
           unused_probe_line(r);
  }
  const auto& e = *r.energy;
  std::string out = fmt::format("energy {:.4f} J per run", e.j_per_run);
  if (e.ci) {
    out += fmt::format(" (CI {:.0f}%: {:.4f} to {:.4f} J, ±{:.2f}%)", 100 * r.options.ci_level,
                       e.ci->first, e.ci->second,
                       e.j_per_run > 0 ? 50 * (e.ci->second - e.ci->first) / e.j_per_run : 0.0);
  }
  out += fmt::format(", mean power {:.1f} W\n", e.mean_power_w);
  out += fmt::format(
      "  over {} window{} ({:.1f} s, {:.0f} runs) of at least {:.0f} ms; the energy counter "
      "moved every {}{:.0f} ms{}\n",
      e.windows, e.windows == 1 ? "" : "s", e.seconds, e.runs, e.window_min_ms,
      e.period_resolved ? "" : "<= ", e.counter_period_ms,
      e.period_source == measure::energy_period_source::probe ? " (learned at the start)" : "");
  return out + unused_probe_line(r);
}

nlohmann::json to_json(const run_result& r) {
  nlohmann::json samples = nlohmann::json::array();
  for (const auto& s : r.samples) {
    nlohmann::json sample = nlohmann::json::object();
    for (const auto& field : sample_fields()) sample[field.name] = field.json(s);
    samples.push_back(std::move(sample));
  }
  nlohmann::json discarded = nlohmann::json::object();
  for (const auto& [reason, n] : r.discarded_by_reason) discarded[reason] = n;
  nlohmann::json environment = {
      {"coolbench_version", std::string(version())},
      {"gpu", r.conditions.gpu ? to_json(*r.conditions.gpu) : nlohmann::json(nullptr)},
      {"other_processes", to_json(r.conditions.other_processes)},
      {"warnings", r.conditions.warnings},
      {"start_temp_c", optional_json(r.conditions.start_temp_c)}};
  nlohmann::json summary = {
      {"latency", to_json(r.summary)},
      {"median_ci_ms", r.median_ci ? nlohmann::json{r.median_ci->first, r.median_ci->second}
                                   : nlohmann::json(nullptr)},
      {"timer_step_ms", optional_json(r.timer_step_ms)},
      {"contexts", contexts_json(r.contexts)},
      {"warnings", r.warnings},
      {"converged", r.converged},
      {"stop_reason", to_string(r.stop_reason)},
      {"discarded", r.discarded},
      {"discarded_by_reason", discarded},
      {"throttled_kept",
       r.throttled_summary ? to_json(*r.throttled_summary) : nlohmann::json(nullptr)},
      {"temp_range_c", r.temp_range_c
                           ? nlohmann::json{r.temp_range_c->first, r.temp_range_c->second}
                           : nlohmann::json(nullptr)},
      {"sm_clock_range_mhz",
       r.clock_range_mhz ? nlohmann::json{r.clock_range_mhz->first, r.clock_range_mhz->second}
                         : nlohmann::json(nullptr)},
      {"seconds_total", r.seconds_total},
      {"seconds_gating", r.seconds_gating},
      {"warmup_runs", r.warmup_runs},
      {"bursts", r.bursts},
      {"pauses", r.pauses},
      {"releases", r.releases},
      {"release",
       r.final_release.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.final_release)},
      {"energy_per_run_j", optional_json(r.energy_per_run_j)},
      {"energy", energy_json(r.energy)},
      {"energy_counter_probe", energy_probe_json(r.energy_probe)},
      {"hidden_state", hidden_state_json(r.hidden_state)}};
  nlohmann::json doc = {{"schema", k_run_schema},     {"complete", r.complete},
                        {"error", r.error},           {"workload", r.workload},
                        {"environment", environment}, {"configuration", options_json(r.options)},
                        {"summary", summary},         {"samples", samples}};
  if (r.profile) {
    doc["profile"] = {
        {"by_temperature", buckets_json(r.profile->by_temperature)},
        {"by_sm_clock", buckets_json(r.profile->by_clock)},
        {"derate", r.profile->derate},
        {"ms_per_c", optional_json(r.profile->ms_per_c)},
        {"pct_per_100mhz", optional_json(r.profile->pct_per_100mhz)},
        {"warmup_median_ms", optional_json(r.profile->warmup_median_ms)},
        {"coolest_temp_vs_warmup", optional_json(r.profile->coolest_temp_vs_warmup)},
        {"fastest_clock_vs_warmup", optional_json(r.profile->fastest_clock_vs_warmup)}};
  }
  return doc;
}

std::string samples_csv(const run_result& r) {
  std::string out;
  for (const auto& field : sample_fields())
    out += (out.empty() ? "" : ",") + std::string(field.name);
  out += "\n";
  for (const auto& s : r.samples) {
    bool first = true;
    for (const auto& field : sample_fields()) {
      out += (first ? "" : ",") + field.csv(s);
      first = false;
    }
    out += "\n";
  }
  return out;
}

std::string profile_markdown(const run_result& r) {
  if (!r.profile) return {};
  const auto table = [](const std::vector<measure::profile_bucket>& buckets, const char* unit,
                        const char* reference) {
    std::string t =
        fmt::format("| {} | samples | median | vs {} |\n|---|---|---|---|\n", unit, reference);
    for (const auto& b : buckets) {
      t += fmt::format("| {:g} to {:g} | {} | {:.4f} ms | {:+.2f}% |\n", b.from, b.to, b.count,
                       b.median_ms, 100 * b.vs_coolest);
    }
    return t;
  };
  std::string out =
      "Latency against GPU temperature\n\n" + table(r.profile->by_temperature, "°C", "coolest") +
      "\nLatency against SM clock\n\n" + table(r.profile->by_clock, "MHz", "fastest clock") +
      fmt::format("\nCold-to-hot derate: {:+.2f}%", 100 * r.profile->derate) +
      (r.profile->warmup_median_ms
           ? fmt::format(" (hottest bucket against the warm-up's {:.4f} ms)",
                         *r.profile->warmup_median_ms)
           : std::string(" (hottest bucket against the coolest)"));
  if (r.profile->ms_per_c) out += fmt::format("; {:+.5f} ms per °C", *r.profile->ms_per_c);
  if (r.profile->pct_per_100mhz) {
    out += fmt::format("; {:+.2f}% per 100 MHz of SM clock", *r.profile->pct_per_100mhz);
  }
  if (r.profile->coolest_temp_vs_warmup && r.profile->fastest_clock_vs_warmup) {
    const double fastest = *r.profile->fastest_clock_vs_warmup;
    out +=
        fmt::format("\nAgainst the warm-up: coolest bucket {:+.2f}%, fastest-clock bucket {:+.2f}%",
                    100 * *r.profile->coolest_temp_vs_warmup, 100 * fastest);
    if (fastest > r.options.step_threshold) out += " (NVML reported a change of state late)";
  }
  return out + "\n";
}

std::string format_run_summary(const run_result& r) {
  std::string out = fmt::format("{}\n", r.workload);
  if (r.conditions.gpu) {
    const auto& id = *r.conditions.gpu;
    out += fmt::format("GPU {}: {} (driver {})\n", id.cuda_ordinal, id.name, id.driver_version);
  }
  out += fmt::format("mode {}, policy {}, throttled samples: {}\n", to_string(r.options.mode),
                     to_string(r.options.policy),
                     r.options.on_throttle ? to_string(*r.options.on_throttle) : "default");
  const auto& s = r.summary;
  if (r.contexts) {
    // The run's figure: what a fresh context measures, on average.
    const auto& c = *r.contexts;
    out += fmt::format("latency {:.4f} ms", c.mean_ms);
    if (c.ci) {
      const double half = (c.ci->second - c.ci->first) / 2;
      out += fmt::format(" (CI {:.0f}%: {:.4f} to {:.4f} ms, ±{:.2f}%)", 100 * r.options.ci_level,
                         c.ci->first, c.ci->second, 100 * half / c.mean_ms);
    }
    double fastest = c.mean_ms;
    double slowest = c.mean_ms;
    for (const auto& f : c.per_context) {
      fastest = std::min(fastest, f.median_ms);
      slowest = std::max(slowest, f.median_ms);
    }
    out += fmt::format(
        "\nmean of {} contexts' medians; they range {:.4f} to {:.4f} ms ({:.2f}% apart, CV "
        "{:.2f}%)\n",
        c.per_context.size(), fastest, slowest, 100 * c.spread, 100 * c.cv);
  }
  if (s.count == 0) {
    out += "no sample was kept\n";
  } else {
    out += fmt::format("{} {:.4f} ms", r.contexts ? "all samples pooled: median" : "median",
                       s.median_ms);
    if (r.median_ci) {
      const double half = (r.median_ci->second - r.median_ci->first) / 2;
      out += fmt::format(" (CI {:.0f}%: {:.4f} to {:.4f} ms, ±{:.2f}%)", 100 * r.options.ci_level,
                         r.median_ci->first, r.median_ci->second, 100 * half / s.median_ms);
    }
    out += fmt::format("\np90 {:.4f} ms, p99 {:.4f} ms, min {:.4f} ms, CV {:.2f}%", s.p90_ms,
                       s.p99_ms, s.min_ms, 100 * s.cv);
    if (r.timer_step_ms) {
      out += fmt::format(", timer step {:.6f} ms ({:.3f}% of the median)", *r.timer_step_ms,
                         100 * *r.timer_step_ms / s.median_ms);
    }
    out += "\n";
  }
  out += fmt::format("samples: {} kept, {} discarded", s.count, r.discarded);
  for (const auto& [reason, n] : r.discarded_by_reason) out += fmt::format("; {} {}", n, reason);
  out += fmt::format("; {} warm-up runs\n", r.warmup_runs);
  if (r.throttled_summary) {
    out += fmt::format("throttled but kept (labelled): {}, median {:.4f} ms\n",
                       r.throttled_summary->count, r.throttled_summary->median_ms);
  }
  if (r.temp_range_c) {
    out += fmt::format("GPU temperature {} to {} C", r.temp_range_c->first, r.temp_range_c->second);
    if (r.clock_range_mhz) {
      out += fmt::format(", SM clock {} to {} MHz", r.clock_range_mhz->first,
                         r.clock_range_mhz->second);
    }
    out += "\n";
  }
  out += fmt::format("{:.1f} s in all, {:.1f} s gating; {} bursts, {} pauses, {} releases\n",
                     r.seconds_total, r.seconds_gating, r.bursts, r.pauses, r.releases);
  out += format_energy(r);
  if (!r.final_release.empty()) out += fmt::format("at the end, {}\n", r.final_release);
  if (r.hidden_state) out += fmt::format("{}\n", r.hidden_state->summary());
  for (const auto& warning : r.warnings) out += fmt::format("warning: {}\n", warning);
  out += fmt::format("stopped: {}{}\n", to_string(r.stop_reason),
                     r.converged || !r.complete ? "" : " (the CI did not reach --rel-ci)");
  if (!r.complete)
    out += fmt::format("INCOMPLETE: {}\n", r.error.empty() ? to_string(r.stop_reason) : r.error);
  if (r.profile) out += "\n" + profile_markdown(r);
  return out;
}

}  // namespace coolbench::report
