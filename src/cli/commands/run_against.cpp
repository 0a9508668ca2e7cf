#include "cli/commands/run_against.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "cli/exit_codes.hpp"
#include "coolbench/core/error.hpp"
#include "coolbench/measure/ab.hpp"
#include "coolbench/report/ab_report.hpp"
#include "coolbench/report/format.hpp"

namespace coolbench::cli {

void check_against(const std::string& against, const std::string& device,
                   const std::string& csv_path) {
  if (against.empty()) return;
  if (device == "cpu") {
    throw invalid_argument(
        "--against measures on a GPU (its pairs are matched in heat, power state and CUDA "
        "context); --device cpu has none of them");
  }
  if (!csv_path.empty()) {
    throw invalid_argument("--csv is for one run; with --against, --json holds both runs' samples");
  }
  if (against.starts_with("gemm:")) (void)measure::parse_gemm_chain(against);
}

int run_against(measure::workload& a, measure::workload& b, measure::environment& env,
                const measure::protocol_options& protocol, const against_progress& progress,
                const against_output& out) {
  if (!out.quiet) fmt::print("measuring A: {}\n against B: {}\n", a.describe(), b.describe());
  const measure::ab_result r =
      measure::measure_ab(a, b, env, protocol, progress.progress, progress.status);
  if (progress.live != nullptr) progress.live->clear();
  if (r.stop_reason == measure::stop_reason::invalid_input && r.a.samples.empty() &&
      r.b.samples.empty()) {
    std::fflush(stdout);
    fmt::print(stderr, "coolbench run: {}. Run 'coolbench run --help'.\n", r.error);
    return exit_usage;
  }
  // Written whatever happened, marked incomplete when cut short.
  if (!out.json_path.empty() || !out.html_path.empty()) {
    nlohmann::json doc = report::ab_to_json(r, out.same_within);
    if (!out.json_path.empty()) report::write_text_atomically(out.json_path, doc.dump(1) + "\n");
    if (!out.html_path.empty()) {
      const report::ab_document ab = report::read_ab_document(std::move(doc), out.html_path);
      report::write_text_atomically(out.html_path, report::ab_html(ab, out.same_within));
    }
  }
  fmt::print("{}", report::format_ab_summary(r, out.same_within));
  if (r.complete) return exit_ok;
  if (r.stop_reason == measure::stop_reason::interrupted) return exit_interrupted;
  if (r.stop_reason == measure::stop_reason::gate_timeout) return exit_timeout;
  return exit_error;
}

}  // namespace coolbench::cli
