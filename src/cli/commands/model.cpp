// coolbench model: writes the models coolbench builds itself, so a fresh
// machine has something to run with nothing downloaded.
#include <fmt/format.h>

#include <memory>

#include "cli/command.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help.hpp"
#include "coolbench/engine/model.hpp"

namespace coolbench::cli {
namespace {

struct model_options {
  std::string output;
};

int run_model_add(const model_options& options) {
  engine::write_model(options.output, engine::make_add_model());
  fmt::print("wrote {}: C = A + B on float32 [1, 2, 3, 3] (opset 13)\n", options.output);
  return exit_ok;
}

}  // namespace

command add_model_command(CLI::App& parent) {
  auto options = std::make_shared<model_options>();
  auto* app = parent.add_subcommand("model", "Write a built-in model as ONNX");
  app->require_subcommand(1);
  auto* add = app->add_subcommand("add", "The two-input Add model of the original report");
  add->add_option("-o,--output", options->output, "The .onnx file to write")->required();
  return {app, [options] { return run_model_add(*options); }, help::model()};
}

}  // namespace coolbench::cli
