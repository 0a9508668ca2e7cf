// coolbench run A --against B: a matched A/B run (docs/cli/run.md, "Matched A/B"), its summary
// and its files.
#pragma once

#include <string>

#include "cli/live_line.hpp"
#include "coolbench/measure/protocol.hpp"

namespace coolbench::cli {

/// Throws invalid_argument for what cannot go with --against: the CPU, --csv.
void check_against(const std::string& against, const std::string& device,
                   const std::string& csv_path);

struct against_progress {
  measure::progress_fn progress;
  measure::status_fn status;
  live_line* live = nullptr;
};

struct against_output {
  std::string json_path;
  std::string html_path;
  double same_within = 0.01;
  bool quiet = false;
};

/// Measures, prints the summary and writes the files; returns the exit code.
int run_against(measure::workload& a, measure::workload& b, measure::environment& env,
                const measure::protocol_options& protocol, const against_progress& progress,
                const against_output& out);

}  // namespace coolbench::cli
