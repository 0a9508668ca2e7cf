// coolbench compare: saved runs against the first, each with a verdict, the
// ratio and its CI (docs/cli/compare.md).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help.hpp"
#include "coolbench/report/ab_report.hpp"
#include "coolbench/report/compare_report.hpp"
#include "coolbench/report/format.hpp"
#include "coolbench/report/run_document.hpp"

namespace coolbench::cli {
namespace {

struct compare_options {
  std::vector<std::string> runs;
  bool json = false;
  std::string html_path;
  double same_within = 0.01;
  bool force = false;
};

int run_compare(const compare_options& o) {
  std::vector<report::run_document> runs;
  std::vector<report::run_comparison> comparisons;
  // A matched A/B document holds its own comparison, over its pairs; runs are compared with
  // the first run.
  for (const auto& path : o.runs) {
    if (report::document_schema(path) == report::k_ab_schema) {
      comparisons.push_back(report::compare_ab(report::load_ab_document(path), o.same_within));
    } else {
      runs.push_back(report::load_run_document(path));
    }
  }
  if (runs.size() == 1) {
    std::fflush(stdout);
    fmt::print(stderr,
               "coolbench compare: {} has nothing to be compared with: give two runs or more, or "
               "a matched A/B document (coolbench run A --against B --json FILE). Run 'coolbench "
               "compare --help'.\n",
               runs[0].source);
    return exit_usage;
  }
  bool refused = false;
  for (std::size_t i = 1; i < runs.size(); ++i) {
    comparisons.push_back(report::compare_runs(runs[0], runs[i], o.same_within));
    for (const auto& issue : comparisons.back().issues) {
      // Loud on stderr whatever the output format.
      fmt::print(
          stderr, "coolbench compare: {} {}: {}\n",
          issue.refuse ? (o.force ? "NOT COMPARABLE (forced)" : "NOT COMPARABLE") : "WARNING",
          runs[i].source, issue.what);
      refused = refused || issue.refuse;
    }
  }
  if (refused && !o.force) {
    fmt::print(stderr,
               "coolbench compare: the runs measure different things; compare runs of one GPU "
               "model, mode and policy, or pass --force to compare them anyway\n");
    return exit_not_comparable;
  }
  if (!o.html_path.empty()) {
    report::write_text_atomically(o.html_path, report::compare_html(comparisons, o.same_within));
  }
  if (o.json) {
    fmt::print("{}\n", report::compare_json(comparisons, o.same_within).dump(2));
  } else {
    fmt::print("{}", report::compare_text(comparisons, o.same_within));
  }
  return exit_ok;
}

}  // namespace

command add_compare_command(CLI::App& parent) {
  auto o = std::make_shared<compare_options>();
  auto* app = parent.add_subcommand(
      "compare", "Compare saved runs with the first: a verdict, the ratio and its CI");
  app->add_option("runs", o->runs,
                  "A.json B.json [C.json ...]: B, C, ... against A; or AB.json, a matched A/B "
                  "run (coolbench run --against)")
      ->required()
      ->expected(1, -1);
  app->add_flag("--json", o->json, "Print JSON instead of the table");
  app->add_option("--html", o->html_path, "Also write the comparison as an HTML page");
  app->add_option("--same-within", o->same_within,
                  "SAME when the ratio's CI lies within 1 ± this (default 0.01)")
      ->check(CLI::Range(1e-6, 0.5));
  app->add_flag("--force", o->force,
                "Compare runs of another GPU model, mode or policy (still warned)");
  return {app, [o] { return run_compare(*o); }, help::compare()};
}

}  // namespace coolbench::cli
