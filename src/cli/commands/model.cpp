// coolbench model: writes the models coolbench builds itself, so a fresh
// machine has something to run with nothing downloaded.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "cli/command.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help.hpp"
#include "coolbench/engine/model.hpp"

namespace coolbench::cli {
namespace {

struct model_options {
  std::string output;
  engine::gpt2_config gpt2;
  std::string gpt2_dtype = "fp32";
};

const std::map<std::string, engine::dtype> k_gpt2_dtypes = {{"fp32", engine::dtype::float32},
                                                            {"fp16", engine::dtype::float16}};

int run_model_add(const model_options& options) {
  engine::write_model(options.output, engine::make_add_model());
  fmt::print("wrote {}: C = A + B on float32 [1, 2, 3, 3] (opset 13)\n", options.output);
  return exit_ok;
}

// "124.4M" from a million on, the exact count below.
std::string parameters_text(std::int64_t count) {
  return count >= 1000000 ? fmt::format("{:.1f}M", static_cast<double>(count) / 1e6)
                          : fmt::format("{}", count);
}

// Decimal units, as file managers show them.
std::string size_text(std::uintmax_t bytes) {
  return bytes >= 1000000 ? fmt::format("{:.0f} MB", static_cast<double>(bytes) / 1e6)
                          : fmt::format("{:.0f} kB", static_cast<double>(bytes) / 1e3);
}

int run_model_gpt2(model_options options) {
  engine::gpt2_config& config = options.gpt2;
  config.element_type = k_gpt2_dtypes.at(options.gpt2_dtype);
  // A config the options allow one by one can still be wrong as a whole
  // (hidden not a multiple of heads): that is a bad command line too.
  try {
    engine::validate(config);
  } catch (const invalid_argument& e) {
    std::fflush(stdout);
    fmt::print(stderr, "coolbench model: {}. Run 'coolbench model gpt2 --help'.\n", e.what());
    return exit_usage;
  }
  engine::write_gpt2_model(config, options.output);
  fmt::print("wrote {}: GPT-2, {} layer{}, hidden {}, {} heads, vocab {}, {} parameters, {}, {}\n",
             options.output, config.layers, config.layers == 1 ? "" : "s", config.hidden,
             config.heads, config.vocab, parameters_text(engine::parameter_count(config)),
             options.gpt2_dtype, size_text(std::filesystem::file_size(options.output)));
  return exit_ok;
}

}  // namespace

command add_model_command(CLI::App& parent) {
  auto options = std::make_shared<model_options>();
  auto* app = parent.add_subcommand("model", "Write a built-in model as ONNX");
  app->require_subcommand(1);
  auto* add = app->add_subcommand("add", "The two-input Add model of the original report");
  add->add_option("-o,--output", options->output, "The .onnx file to write")->required();

  // Bounds here catch a bad value by its option name; validate() checks the
  // options together (and the same bounds) once parsed.
  auto* gpt2 = app->add_subcommand("gpt2", "GPT-2 with seeded random weights");
  engine::gpt2_config& c = options->gpt2;
  gpt2->add_option("-o,--output", options->output, "The .onnx file to write")->required();
  gpt2->add_option("--layers", c.layers, "Transformer blocks")->check(CLI::Range(1, 1000));
  gpt2->add_option("--hidden", c.hidden, "Embedding width")->check(CLI::Range(1, 1 << 16));
  gpt2->add_option("--heads", c.heads, "Attention heads")->check(CLI::Range(1, 1 << 16));
  gpt2->add_option("--vocab", c.vocab, "Vocabulary size")->check(CLI::Range(2, 1 << 24));
  gpt2->add_option("--positions", c.positions, "Learned positions: the longest sequence")
      ->check(CLI::Range(1, 1 << 20));
  gpt2->add_option("--seq", c.sequence, "Sequence length to run with")
      ->check(CLI::Range(1, 1 << 20));
  gpt2->add_option("--batch", c.batch, "Batch size to run with")->check(CLI::Range(1, 1 << 20));
  gpt2->add_option("--dtype", options->gpt2_dtype, "fp32 or fp16")
      ->check(CLI::IsMember({"fp32", "fp16"}));
  gpt2->add_option("--seed", c.seed, "Seed of the random weights")->check(CLI::NonNegativeNumber);
  gpt2->add_flag("--fixed-shape", c.fixed_shape, "Declare batch and sequence as numbers");

  return {
      app,
      [options, add] { return add->parsed() ? run_model_add(*options) : run_model_gpt2(*options); },
      help::model()};
}

}  // namespace coolbench::cli
