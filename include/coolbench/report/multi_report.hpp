/// @file
/// A run on several GPUs at once (coolbench run --device all, coolbench.measure(devices=…)):
/// its JSON document (schema coolbench.multi/1, docs/run-json.md "Several GPUs"), its summary,
/// and, read back, its HTML page.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "coolbench/measure/multi_result.hpp"
#include "coolbench/report/run_document.hpp"

namespace coolbench::report {

inline constexpr const char* k_multi_schema = "coolbench.multi/1";

/// The document: each GPU's ordinal, status, failure and run (a coolbench.run/1 document, or
/// null when nothing was measured), and the spread per GPU model.
[[nodiscard]] nlohmann::json multi_to_json(const measure::multi_result& r);

/// The spread per GPU model as a plain-text table (empty without a spread).
[[nodiscard]] std::string format_spread(const measure::multi_result& r);

/// The summary a person reads: each GPU's run summary under its heading (or why it failed),
/// then the spread.
[[nodiscard]] std::string format_multi_summary(const measure::multi_result& r);

/// A saved document of several GPUs, each GPU's run read as a run document.
struct multi_document {
  std::string source;
  nlohmann::json doc;  ///< without the runs
  struct gpu {
    int ordinal = -1;
    std::string status;  ///< "measured", "failed"
    std::string failure;
    std::optional<run_document> run;
  };
  std::vector<gpu> gpus;
};

[[nodiscard]] bool is_multi_document(const nlohmann::json& doc);
/// Reads one; throws invalid_argument naming `source` and the field when it is not one.
[[nodiscard]] multi_document read_multi_document(nlohmann::json doc, std::string source);
/// Loads and reads one; throws invalid_argument naming the file.
[[nodiscard]] multi_document load_multi_document(const std::filesystem::path& path);

/// The page: the spread table, each GPU's figure, then each GPU's report as `run_html` gives it.
[[nodiscard]] std::string multi_html(const multi_document& m);

}  // namespace coolbench::report
