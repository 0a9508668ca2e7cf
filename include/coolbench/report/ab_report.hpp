/// @file
/// A matched A/B run (coolbench run A --against B, coolbench.compare): its summary, its JSON
/// document (schema coolbench.ab/1, docs/run-json.md "Matched A/B") and, read back, its
/// comparison and its HTML page.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "coolbench/measure/ab_result.hpp"
#include "coolbench/report/compare_report.hpp"
#include "coolbench/report/run_document.hpp"

namespace coolbench::report {

inline constexpr const char* k_ab_schema = "coolbench.ab/1";

/// The verdict on the run's ratio (judge_ratio) with `same_within`.
[[nodiscard]] ratio_verdict ab_verdict(const measure::ab_result& r, double same_within);

/// The document: the pairs, the ratios with their CIs, the verdict, and each workload's run
/// as a coolbench.run/1 document ("a", "b").
[[nodiscard]] nlohmann::json ab_to_json(const measure::ab_result& r, double same_within);

/// The summary a person reads: the verdict, B/A and its CI, each workload's figure, the
/// energy, the pairs.
[[nodiscard]] std::string format_ab_summary(const measure::ab_result& r, double same_within);

/// A saved A/B document, with its two runs read as run documents.
struct ab_document {
  std::string source;
  nlohmann::json doc;
  run_document a;
  run_document b;
};

/// Whether `doc` is an A/B document (its schema).
[[nodiscard]] bool is_ab_document(const nlohmann::json& doc);
/// Reads one; throws invalid_argument naming `source` and the field when it is not one.
[[nodiscard]] ab_document read_ab_document(nlohmann::json doc, std::string source);

/// The schema a saved document names ("coolbench.run/1", "coolbench.ab/1"), read without
/// keeping the rest; empty when it names none. Throws invalid_argument when the file cannot be
/// read or is not JSON.
[[nodiscard]] std::string document_schema(const std::filesystem::path& path);
/// Loads and reads an A/B document; throws invalid_argument naming the file.
[[nodiscard]] ab_document load_ab_document(const std::filesystem::path& path);

/// The matched comparison the document holds, judged again with `same_within`; its
/// uncertainty is over the pairs.
[[nodiscard]] run_comparison compare_ab(const ab_document& ab, double same_within);

/// The page: the verdict, B/A per pair with the CI, the summary, each run's timeline and
/// distribution.
[[nodiscard]] std::string ab_html(const ab_document& ab, double same_within = 0.01);

}  // namespace coolbench::report
