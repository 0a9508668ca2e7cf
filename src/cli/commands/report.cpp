// coolbench report: a saved run (coolbench run --json) as one self-contained
// HTML page with its pictures (docs/cli/report.md).
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <string>

#include "cli/command.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help.hpp"
#include "coolbench/report/ab_report.hpp"
#include "coolbench/report/format.hpp"
#include "coolbench/report/html_report.hpp"
#include "coolbench/report/multi_report.hpp"
#include "coolbench/report/run_document.hpp"

namespace coolbench::cli {
namespace {

struct report_options {
  std::string run_json;
  std::string output;
};

/// RUN.json -> RUN.html beside it.
std::string default_output(const std::string& input) {
  std::filesystem::path out(input);
  out.replace_extension(".html");
  return out.string();
}

int run_report(const report_options& o) {
  const std::string path = o.output.empty() ? default_output(o.run_json) : o.output;
  if (report::document_schema(o.run_json) == report::k_ab_schema) {
    const report::ab_document ab = report::load_ab_document(o.run_json);
    const std::string page = report::ab_html(ab);
    report::write_text_atomically(path, page);
    fmt::print("wrote {} (matched A/B, {} pairs, {:.0f} KiB)\n", path,
               ab.doc.value("pairs", nlohmann::json::array()).size(),
               static_cast<double>(page.size()) / 1024);
    return exit_ok;
  }
  if (report::document_schema(o.run_json) == report::k_multi_schema) {
    const report::multi_document m = report::load_multi_document(o.run_json);
    const std::string page = report::multi_html(m);
    report::write_text_atomically(path, page);
    fmt::print("wrote {} ({} GPUs, {:.0f} KiB)\n", path, m.gpus.size(),
               static_cast<double>(page.size()) / 1024);
    return exit_ok;
  }
  const report::run_document run = report::load_run_document(o.run_json);
  const std::string page = report::run_html(run);
  report::write_text_atomically(path, page);
  fmt::print("wrote {} ({} samples, {:.0f} KiB)\n", path, run.samples.size(),
             static_cast<double>(page.size()) / 1024);
  return exit_ok;
}

}  // namespace

command add_report_command(CLI::App& parent) {
  auto o = std::make_shared<report_options>();
  auto* app = parent.add_subcommand("report", "Render a saved run as a self-contained HTML page");
  app->add_option("run", o->run_json,
                  "The run's JSON (coolbench run --json FILE): one GPU's, several GPUs', or a "
                  "matched A/B run's")
      ->required();
  app->add_option("-o,--output", o->output, "The HTML file (default: RUN.html beside RUN.json)");
  return {app, [o] { return run_report(*o); }, help::report()};
}

}  // namespace coolbench::cli
