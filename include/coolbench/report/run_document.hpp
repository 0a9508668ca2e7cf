// A saved run (the JSON document of docs/run-json.md) read back for the
// report and compare commands: the document itself and its samples in
// columns, with null readings as NaN.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace coolbench::report {

/// The samples[] of a run, one vector per field (so a million samples stay
/// compact and plots take spans). Times are seconds since the first sample's
/// start; a reading that was null is NaN.
struct run_samples {
  std::vector<std::string> phase;  ///< warmup, soak, measure
  std::vector<int> burst;
  std::vector<int> context;
  std::vector<double> start_s;
  std::vector<double> end_s;
  std::vector<double> latency_ms;
  std::vector<bool> kept;
  std::vector<std::string> throttle_reason;  ///< why a sample was discarded or labelled
  std::vector<double> temp_c;
  std::vector<double> sm_clock_mhz;
  std::vector<double> power_w;
  std::vector<std::uint64_t> clock_reasons;
  [[nodiscard]] std::size_t size() const { return latency_ms.size(); }
};

/// A run as saved: the whole document and its samples.
struct run_document {
  std::string source;  ///< the file it came from, for messages
  nlohmann::json doc;
  run_samples samples;

  /// The run's figure: summary.contexts.mean_ms where the run was spread
  /// over contexts, else the median of the kept samples; empty without one.
  [[nodiscard]] std::optional<double> figure_ms() const;
  /// The figure's CI ([lower, upper]): over contexts (Student t) or the
  /// order-statistic CI of the median; empty when the run has none.
  [[nodiscard]] std::optional<std::pair<double, double>> figure_ci_ms() const;
  /// How many contexts the figure's uncertainty spans (1 without
  /// summary.contexts).
  [[nodiscard]] int figure_contexts() const;
  /// How many CUDA contexts the kept measurement samples came from.
  [[nodiscard]] int kept_contexts() const;
  /// configuration.ci_level (0.95 when absent).
  [[nodiscard]] double ci_level() const;
};

/// Reads a document (schema coolbench.run/1). Throws coolbench::invalid_argument
/// naming `source` and the field when it is not such a document.
[[nodiscard]] run_document read_run_document(nlohmann::json doc, std::string source);

/// Loads and reads the file at `path`; throws invalid_argument when it cannot
/// be read or parsed, naming the file.
[[nodiscard]] run_document load_run_document(const std::filesystem::path& path);

}  // namespace coolbench::report
