#include "coolbench/report/run_document.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <set>

#include "coolbench/core/error.hpp"
#include "coolbench/report/run_report.hpp"

namespace coolbench::report {
namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();

double number_or_nan(const nlohmann::json& v) { return v.is_number() ? v.get<double>() : k_nan; }

[[noreturn]] void bad(const std::string& source, const std::string& what) {
  throw invalid_argument(fmt::format(
      "{}: {} (a run document is what 'coolbench run --json FILE' writes, docs/run-json.md)",
      source, what));
}

/// The field `name` of `sample`, which must be present; throws naming sample i.
const nlohmann::json& field(const nlohmann::json& sample, const char* name, std::size_t i,
                            const std::string& source) {
  const auto it = sample.find(name);
  if (it == sample.end()) bad(source, fmt::format("samples[{}] has no '{}'", i, name));
  return *it;
}

/// Appends samples[i] to `s`; `t0_ns` is set from the first sample.
void append_sample(run_samples& s, double& t0_ns, const nlohmann::json& j, std::size_t i,
                   const std::string& source) {
  if (!j.is_object()) bad(source, fmt::format("samples[{}] is not an object", i));
  try {
    const double start = field(j, "start_ns", i, source).get<double>();
    if (std::isnan(t0_ns)) t0_ns = start;
    s.phase.push_back(field(j, "phase", i, source).get<std::string>());
    s.burst.push_back(field(j, "burst", i, source).get<int>());
    s.context.push_back(j.value("context", 1));
    s.start_s.push_back((start - t0_ns) / 1e9);
    s.end_s.push_back((field(j, "end_ns", i, source).get<double>() - t0_ns) / 1e9);
    s.latency_ms.push_back(field(j, "latency_ms", i, source).get<double>());
    s.kept.push_back(field(j, "kept", i, source).get<bool>());
    s.throttle_reason.push_back(j.value("throttle_reason", std::string()));
    s.temp_c.push_back(number_or_nan(j.value("temp_c", nlohmann::json())));
    s.sm_clock_mhz.push_back(number_or_nan(j.value("sm_clock_mhz", nlohmann::json())));
    s.power_w.push_back(number_or_nan(j.value("power_w", nlohmann::json())));
    s.clock_reasons.push_back(j.value("clock_reasons", std::uint64_t{0}));
  } catch (const nlohmann::json::exception& e) {
    bad(source, fmt::format("samples[{}]: {}", i, e.what()));
  }
}

void check_document(const nlohmann::json& doc, const std::string& source) {
  if (!doc.is_object()) bad(source, "not a JSON object");
  const std::string schema = doc.value("schema", std::string());
  if (schema != k_run_schema) {
    bad(source, schema.empty() ? std::string("no 'schema' field")
                               : fmt::format("schema '{}', expected '{}'", schema, k_run_schema));
  }
  for (const char* name : {"summary", "configuration", "environment", "samples", "workload"}) {
    if (!doc.contains(name)) bad(source, fmt::format("no '{}'", name));
  }
  if (!doc["samples"].is_array()) bad(source, "'samples' is not an array");
  if (!doc["summary"].contains("latency")) bad(source, "no 'summary.latency'");
}

}  // namespace

std::optional<double> run_document::figure_ms() const {
  const auto& summary = doc.at("summary");
  const auto& contexts = summary.value("contexts", nlohmann::json());
  if (contexts.is_object() && contexts.value("mean_ms", nlohmann::json()).is_number()) {
    return contexts["mean_ms"].get<double>();
  }
  const auto& latency = summary.at("latency");
  if (latency.value("count", 0) == 0) return std::nullopt;
  return latency.at("median_ms").get<double>();
}

std::optional<std::pair<double, double>> run_document::figure_ci_ms() const {
  const auto& summary = doc.at("summary");
  const auto& contexts = summary.value("contexts", nlohmann::json());
  const auto& ci =
      contexts.is_object() ? contexts.value("ci_ms", nlohmann::json()) : summary["median_ci_ms"];
  if (!ci.is_array() || ci.size() != 2) return std::nullopt;
  return std::pair{ci[0].get<double>(), ci[1].get<double>()};
}

int run_document::figure_contexts() const {
  const auto& contexts = doc.at("summary").value("contexts", nlohmann::json());
  return contexts.is_object() ? contexts.value("count", 1) : 1;
}

int run_document::kept_contexts() const {
  std::set<int> contexts;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (samples.kept[i] && samples.phase[i] == "measure") contexts.insert(samples.context[i]);
  }
  return static_cast<int>(contexts.size());
}

double run_document::ci_level() const { return doc.at("configuration").value("ci_level", 0.95); }

run_document read_run_document(nlohmann::json doc, std::string source) {
  check_document(doc, source);
  run_document run;
  double t0_ns = k_nan;
  const auto& samples = doc["samples"];
  for (std::size_t i = 0; i < samples.size(); ++i) {
    append_sample(run.samples, t0_ns, samples[i], i, source);
  }
  run.doc = std::move(doc);
  run.doc["samples"] = nlohmann::json::array();  // they live in run.samples now
  run.source = std::move(source);
  return run;
}

run_document load_run_document(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw invalid_argument(fmt::format("{}: cannot be read", path.string()));
  // The samples are taken out while parsing, one at a time, so a run of a
  // million samples never becomes a million JSON objects in memory.
  run_document run;
  run.source = path.string();
  double t0_ns = k_nan;
  std::size_t index = 0;
  bool in_samples = false;
  const auto take_samples = [&](int depth, nlohmann::json::parse_event_t event,
                                nlohmann::json& parsed) {
    using event_t = nlohmann::json::parse_event_t;
    if (depth == 1 && event == event_t::key) in_samples = parsed == "samples";
    if (in_samples && depth == 2 && event == event_t::object_end) {
      append_sample(run.samples, t0_ns, parsed, index++, run.source);
      return false;  // dropped from the document
    }
    return true;
  };
  try {
    run.doc = nlohmann::json::parse(in, take_samples);
  } catch (const nlohmann::json::parse_error& e) {
    throw invalid_argument(fmt::format("{}: not JSON ({})", path.string(), e.what()));
  }
  check_document(run.doc, run.source);
  return run;
}

}  // namespace coolbench::report
