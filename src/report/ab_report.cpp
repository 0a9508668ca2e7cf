// A matched A/B run rendered (ab_report.hpp): the document, the summary, and read back, the
// comparison it holds.
#include "coolbench/report/ab_report.hpp"

#include <fmt/format.h>

#include <fstream>

#include "coolbench/core/error.hpp"
#include "coolbench/report/run_report.hpp"

namespace coolbench::report {
namespace {

template <class T>
nlohmann::json optional_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json ratio_json(const std::optional<stats::ratio_interval>& r) {
  if (!r) return nullptr;
  return {{"ratio", r->ratio}, {"ci", {r->lower, r->upper}}};
}

std::optional<stats::ratio_interval> ratio_from(const nlohmann::json& j) {
  const auto ci = j.is_object() ? j.value("ci", nlohmann::json()) : nlohmann::json();
  if (!ci.is_array() || ci.size() != 2) return std::nullopt;
  return stats::ratio_interval{j.value("ratio", 0.0), ci[0].get<double>(), ci[1].get<double>()};
}

nlohmann::json pairs_json(const std::vector<measure::ab_pair>& pairs) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : pairs) {
    out.push_back(
        {{"pair", p.pair},
         {"order", p.a_first ? "AB" : "BA"},
         {"a_kept", p.a_kept},
         {"b_kept", p.b_kept},
         {"a_median_ms", optional_json(p.a_median_ms)},
         {"b_median_ms", optional_json(p.b_median_ms)},
         {"a_sm_clock_mhz", optional_json(p.a_clock_mhz)},
         {"b_sm_clock_mhz", optional_json(p.b_clock_mhz)},
         {"a_start_temp_c", optional_json(p.a_start_temp_c)},
         {"b_start_temp_c", optional_json(p.b_start_temp_c)},
         {"ratio", optional_json(p.ratio)},
         {"cycles_ratio", optional_json(p.cycles_ratio)},
         {"dropped", p.dropped.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.dropped)}});
  }
  return out;
}

std::string interval_text(const stats::ratio_interval& r) {
  return fmt::format("{:.4f} ({:+.2f}%), CI {:.4f} to {:.4f} (±{:.2f}%)", r.ratio,
                     100 * (r.ratio - 1), r.lower, r.upper, 50 * (r.upper - r.lower) / r.ratio);
}

/// "A 0.25012 ms, mean of 6 pairs' medians" for one workload's run.
std::string figure_line(const char* name, const measure::run_result& r) {
  std::string out = fmt::format("{}: {}\n   ", name, r.workload);
  if (r.contexts) {
    out += fmt::format("{:.5f} ms, the mean of {} pairs' medians", r.contexts->mean_ms,
                       r.contexts->per_context.size());
  } else if (r.summary.count > 0) {
    out += fmt::format("{:.5f} ms, the median of the kept samples", r.summary.median_ms);
  } else {
    out += "no sample kept";
  }
  out += fmt::format("; {} kept, {} discarded, {} warm-up runs\n", r.summary.count, r.discarded,
                     r.warmup_runs);
  std::string energy = format_energy(r);
  if (!energy.empty()) out += "   " + energy;
  return out;
}

}  // namespace

ratio_verdict ab_verdict(const measure::ab_result& r, double same_within) {
  return judge_ratio(
      r.time, r.cycles, same_within, std::nullopt, std::nullopt,
      fmt::format("fewer than two couples of an AB and a BA pair counted ({} of {} pairs)",
                  r.pairs_counted, r.pairs.size()));
}

nlohmann::json ab_to_json(const measure::ab_result& r, double same_within) {
  const ratio_verdict v = ab_verdict(r, same_within);
  return {{"schema", k_ab_schema},
          {"complete", r.complete},
          {"error", r.error},
          {"stop_reason", to_string(r.stop_reason)},
          {"converged", r.converged},
          {"order", "ABBA"},
          {"isolation", r.isolation},
          {"seconds_total", r.seconds_total},
          {"warnings", r.warnings},
          {"same_within", same_within},
          {"verdict", v.verdict},
          {"reason", v.reason},
          {"ci_level", r.a.options.ci_level},
          {"pairs_counted", r.pairs_counted},
          {"couples", r.couples},
          {"second_burst", ratio_json(r.second_burst)},
          {"time", ratio_json(r.time)},
          {"cycles", ratio_json(r.cycles)},
          {"energy", ratio_json(r.energy)},
          {"pairs", pairs_json(r.pairs)},
          {"a", to_json(r.a)},
          {"b", to_json(r.b)}};
}

std::string format_ab_summary(const measure::ab_result& r, double same_within) {
  const ratio_verdict v = ab_verdict(r, same_within);
  std::string out;
  if (r.a.conditions.gpu) {
    const auto& id = *r.a.conditions.gpu;
    out += fmt::format("GPU {}: {} (driver {})\n", id.cuda_ordinal, id.name, id.driver_version);
  }
  out += fmt::format(
      "matched A/B: {} pairs in ABBA order ({} counted), each pair in one context, {} between "
      "pairs, every burst gated to {:g} C\n",
      r.pairs.size(), r.pairs_counted, r.isolation, r.a.options.target_temp_c);
  out += figure_line("A", r.a) + figure_line("B", r.b);
  if (r.time) {
    out += fmt::format("B/A {} over {} couples of an AB and a BA pair (CI {:.0f}%)\n",
                       interval_text(*r.time), r.couples, 100 * r.a.options.ci_level);
  }
  if (r.cycles) out += fmt::format("B/A in clock cycles {}\n", interval_text(*r.cycles));
  if (r.energy) out += fmt::format("energy per run B/A {}\n", interval_text(*r.energy));
  if (r.second_burst) {
    out += fmt::format(
        "order: a pair's second burst against its first {} (cancels within each couple)\n",
        interval_text(*r.second_burst));
  }
  std::string ratios;
  for (const auto& p : r.pairs) {
    ratios += p.ratio ? fmt::format(" {}{:.4f}", p.a_first ? "" : "~", *p.ratio) : " -";
  }
  out += fmt::format("pairs' B/A (~: B first):{}\n", ratios);
  out += fmt::format("{:.1f} s in all, {:.1f} s gating\n", r.seconds_total,
                     r.a.seconds_gating + r.b.seconds_gating);
  for (const auto& w : r.warnings) out += fmt::format("warning: {}\n", w);
  out += fmt::format("stopped: {}{}\n", to_string(r.stop_reason),
                     r.converged || !r.complete ? "" : " (the CI did not reach --rel-ci)");
  if (!r.complete) {
    out += fmt::format("INCOMPLETE: {}\n", r.error.empty() ? to_string(r.stop_reason) : r.error);
  }
  out += fmt::format("verdict: {} (B against A): {}\n", v.verdict, v.reason);
  return out;
}

bool is_ab_document(const nlohmann::json& doc) {
  return doc.is_object() && doc.value("schema", std::string()) == k_ab_schema;
}

ab_document read_ab_document(nlohmann::json doc, std::string source) {
  if (!is_ab_document(doc)) {
    throw invalid_argument(
        fmt::format("{}: not a matched A/B document (schema '{}')", source, k_ab_schema));
  }
  for (const char* name : {"a", "b", "pairs", "time"}) {
    if (!doc.contains(name)) throw invalid_argument(fmt::format("{}: no '{}'", source, name));
  }
  ab_document ab;
  ab.a = read_run_document(std::move(doc["a"]), source + " (A)");
  ab.b = read_run_document(std::move(doc["b"]), source + " (B)");
  doc.erase("a");
  doc.erase("b");
  ab.doc = std::move(doc);
  ab.source = std::move(source);
  return ab;
}

namespace {

nlohmann::json parse_file(const std::filesystem::path& path,
                          const nlohmann::json::parser_callback_t& keep) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw invalid_argument(fmt::format("{}: cannot be read", path.string()));
  try {
    return nlohmann::json::parse(in, keep);
  } catch (const nlohmann::json::parse_error& e) {
    throw invalid_argument(fmt::format("{}: not JSON ({})", path.string(), e.what()));
  }
}

}  // namespace

std::string document_schema(const std::filesystem::path& path) {
  // Only the top level's scalars are kept: a run of a million samples stays a scan.
  const auto keep = [](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    using event_t = nlohmann::json::parse_event_t;
    return !(depth >= 1 && (event == event_t::object_end || event == event_t::array_end));
  };
  const nlohmann::json doc = parse_file(path, keep);
  return doc.is_object() ? doc.value("schema", std::string()) : std::string();
}

ab_document load_ab_document(const std::filesystem::path& path) {
  return read_ab_document(parse_file(path, nullptr), path.string());
}

run_comparison compare_ab(const ab_document& ab, double same_within) {
  run_comparison c;
  c.baseline = ab.source + " (A)";
  c.candidate = ab.source + " (B)";
  c.baseline_workload = ab.a.doc.value("workload", std::string());
  c.candidate_workload = ab.b.doc.value("workload", std::string());
  c.baseline_ms = ab.a.figure_ms();
  c.candidate_ms = ab.b.figure_ms();
  c.matched_couples = ab.doc.value("couples", 0);
  c.baseline_contexts = c.candidate_contexts = c.matched_couples;
  c.level = ab.doc.value("ci_level", 0.95);
  c.time = ratio_from(ab.doc.value("time", nlohmann::json()));
  c.cycles = ratio_from(ab.doc.value("cycles", nlohmann::json()));
  c.energy = ratio_from(ab.doc.value("energy", nlohmann::json()));
  c.uncertainty = fmt::format(
      "over {} couples of matched pairs (ABBA: an AB and a BA pair, each pair in one context)",
      c.matched_couples);
  if (!ab.doc.value("complete", true)) {
    c.issues.push_back(
        {fmt::format("{} is incomplete ({})", ab.source, ab.doc.value("error", std::string()))});
  }
  const ratio_verdict v = judge_ratio(
      c.time, c.cycles, same_within, std::nullopt, std::nullopt,
      fmt::format("fewer than two couples of an AB and a BA pair ({})", c.matched_couples));
  c.verdict = v.verdict;
  c.reason = v.reason;
  return c;
}

}  // namespace coolbench::report
