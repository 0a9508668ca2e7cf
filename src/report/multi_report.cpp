// A run on several GPUs: its document, its summary, its page (docs/run-json.md, "Several
// GPUs"). Each GPU's run is rendered as a single run is; this file adds what is across GPUs.
#include "coolbench/report/multi_report.hpp"

#include <fmt/format.h>

#include <fstream>

#include "coolbench/core/error.hpp"
#include "coolbench/report/html_report.hpp"
#include "coolbench/report/run_report.hpp"

namespace coolbench::report {

using measure::device_run;
using measure::model_spread;
using measure::multi_result;

namespace {

nlohmann::json spread_json(const model_spread& s) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : s.gpus) {
    gpus.push_back({{"ordinal", g.ordinal}, {"figure_ms", g.figure_ms}, {"vs_mean", g.vs_mean}});
  }
  return {{"model", s.model},     {"gpus", gpus},         {"min_ms", s.min_ms},
          {"max_ms", s.max_ms},   {"mean_ms", s.mean_ms}, {"max_over_min", s.max_over_min},
          {"fastest", s.fastest}, {"slowest", s.slowest}};
}

std::string status_of(const device_run& d) { return d.failed() ? "failed" : "measured"; }

}  // namespace

nlohmann::json multi_to_json(const multi_result& r) {
  nlohmann::json gpus = nlohmann::json::array();
  bool complete = true;
  for (const auto& d : r.runs) {
    complete = complete && d.result && d.result->complete;
    gpus.push_back({{"ordinal", d.ordinal},
                    {"status", status_of(d)},
                    {"failure", d.failure()},
                    {"run", d.result ? to_json(*d.result) : nlohmann::json()}});
  }
  nlohmann::json spread = nlohmann::json::array();
  for (const auto& s : r.spread) spread.push_back(spread_json(s));
  return {{"schema", k_multi_schema},
          {"complete", complete},
          {"failures", r.failures()},
          {"gpus", gpus},
          {"spread", spread}};
}

std::string format_spread(const multi_result& r) {
  std::string out;
  for (const auto& s : r.spread) {
    out += fmt::format(
        "spread over {} {} GPUs: {:.4f} to {:.4f} ms, max/min - 1 = {:.2f}% (fastest GPU {}, "
        "slowest GPU {})\n",
        s.gpus.size(), s.model, s.min_ms, s.max_ms, 100 * s.max_over_min, s.fastest, s.slowest);
    out += "| GPU | figure (ms) | vs mean |\n|---|---|---|\n";
    for (const auto& g : s.gpus) {
      out += fmt::format("| {} | {:.4f} | {:+.2f}% |\n", g.ordinal, g.figure_ms, 100 * g.vs_mean);
    }
  }
  return out;
}

std::string format_multi_summary(const multi_result& r) {
  std::string out;
  for (const auto& d : r.runs) {
    out += fmt::format("=== GPU {} ===\n", d.ordinal);
    if (d.result) out += format_run_summary(*d.result);
    if (d.failed()) out += fmt::format("GPU {} FAILED: {}\n", d.ordinal, d.failure());
    out += "\n";
  }
  if (r.spread.empty()) {
    out += "spread: none (fewer than two GPUs of one model measured a figure)\n";
  } else {
    out += format_spread(r);
  }
  if (const int failed = r.failures(); failed > 0) {
    out += fmt::format("{} of {} GPUs failed; the others' results stand\n", failed, r.runs.size());
  }
  return out;
}

bool is_multi_document(const nlohmann::json& doc) {
  return doc.is_object() && doc.value("schema", std::string()) == k_multi_schema;
}

multi_document read_multi_document(nlohmann::json doc, std::string source) {
  if (!is_multi_document(doc)) {
    throw invalid_argument(
        fmt::format("{}: not a document of several GPUs (schema '{}')", source, k_multi_schema));
  }
  if (!doc.contains("gpus") || !doc["gpus"].is_array()) {
    throw invalid_argument(fmt::format("{}: no 'gpus'", source));
  }
  multi_document m;
  for (auto& g : doc["gpus"]) {
    multi_document::gpu gpu;
    gpu.ordinal = g.value("ordinal", -1);
    gpu.status = g.value("status", std::string());
    gpu.failure = g.value("failure", std::string());
    if (g.contains("run") && !g["run"].is_null()) {
      gpu.run =
          read_run_document(std::move(g["run"]), fmt::format("{} (GPU {})", source, gpu.ordinal));
    }
    m.gpus.push_back(std::move(gpu));
  }
  doc.erase("gpus");
  m.doc = std::move(doc);
  m.source = std::move(source);
  return m;
}

multi_document load_multi_document(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw invalid_argument(fmt::format("{}: cannot be read", path.string()));
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw invalid_argument(fmt::format("{}: not JSON ({})", path.string(), e.what()));
  }
  return read_multi_document(std::move(doc), path.string());
}

namespace {

std::string spread_table_html(const nlohmann::json& s) {
  std::string out = fmt::format(
      "<p>{} GPUs of model <b>{}</b>: {:.5f} to {:.5f} ms, max/min &minus; 1 = <b>{:.2f}%</b> "
      "(fastest GPU {}, slowest GPU {})</p>\n<table>\n<tr><th>GPU</th><th>figure "
      "(ms)</th><th>vs mean</th></tr>\n",
      s["gpus"].size(), html_escape(s.value("model", std::string())), s.value("min_ms", 0.0),
      s.value("max_ms", 0.0), 100 * s.value("max_over_min", 0.0), s.value("fastest", -1),
      s.value("slowest", -1));
  for (const auto& g : s["gpus"]) {
    out += fmt::format(
        "<tr><td><a href=\"#gpu{0}\">{0}</a></td><td>{1:.5f}</td><td>{2:+.2f}%</td></tr>\n",
        g.value("ordinal", -1), g.value("figure_ms", 0.0), 100 * g.value("vs_mean", 0.0));
  }
  return out + "</table>\n";
}

/// A GPU's section; its element ids are prefixed so the page's ids stay unique.
std::string gpu_section(const multi_document::gpu& g) {
  std::string out = fmt::format("<h1 id=\"gpu{}\">GPU {}", g.ordinal, g.ordinal);
  if (g.run) out += ": " + html_escape(g.run->doc.value("workload", std::string("?")));
  out += "</h1>\n";
  if (!g.failure.empty()) {
    out += fmt::format("<p class=\"incomplete\">FAILED: {}</p>\n", html_escape(g.failure));
  }
  if (!g.run) return out + "<p>Nothing was measured on this GPU.</p>\n";
  std::string body = run_html_body(*g.run);
  const std::string prefix = fmt::format(" id=\"gpu{}-", g.ordinal);
  for (std::size_t at = body.find(" id=\""); at != std::string::npos;
       at = body.find(" id=\"", at + prefix.size())) {
    body.replace(at, 5, prefix);
  }
  return out + body;
}

}  // namespace

std::string multi_html(const multi_document& m) {
  std::string out = html_page_start(fmt::format("coolbench: {} GPUs", m.gpus.size()));
  out += fmt::format("<h1>{} GPUs measured at once</h1>\n<p class=\"sub\">from {}</p>\n",
                     m.gpus.size(), html_escape(m.source));
  out +=
      "<h2 id=\"gpus\">Each GPU</h2>\n<table>\n<tr><th>GPU</th><th>model</th><th>figure "
      "(ms)</th><th>status</th></tr>\n";
  for (const auto& g : m.gpus) {
    const auto figure = g.run ? g.run->figure_ms() : std::nullopt;
    const auto& gpu =
        g.run ? g.run->doc["environment"].value("gpu", nlohmann::json()) : nlohmann::json();
    out += fmt::format(
        "<tr><td><a href=\"#gpu{0}\">{0}</a></td><td>{1}</td><td>{2}</td><td>{3}</td></tr>\n",
        g.ordinal, gpu.is_object() ? html_escape(gpu.value("name", std::string())) : "",
        figure ? fmt::format("{:.5f}", *figure) : "none",
        html_escape(g.failure.empty() ? g.status : g.status + ": " + g.failure));
  }
  out += "</table>\n<h2 id=\"spread\">Spread across GPUs of one model</h2>\n";
  const auto& spread = m.doc.value("spread", nlohmann::json::array());
  if (spread.empty()) out += "<p>None: fewer than two GPUs of one model measured a figure.</p>\n";
  for (const auto& s : spread) out += spread_table_html(s);
  for (const auto& g : m.gpus) out += gpu_section(g);
  return out + html_page_end();
}

}  // namespace coolbench::report
