// `coolbench model` run as a child process: the files it writes, its one-line
// summary, the documented exit codes of bad command lines and unwritable
// files, and the help text (docs/cli/model.md). The models' contents are
// tested in tests/engine (gpt2_model_test).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "cli/run_coolbench.hpp"

namespace {

namespace fs = std::filesystem;
using coolbench::testing::describe;
using coolbench::testing::read_file;
using coolbench::testing::run_result;

class model_test : public coolbench::testing::coolbench_test {
 protected:
  model_test() : coolbench_test("coolbench_model_test") {}

  run_result run(const std::vector<std::string>& args) {
    return coolbench_test::run(args, coolbench::testing::inherited_environment({"COOLBENCH_"}));
  }
};

void expect_one_line(const std::string& err, const std::string& needle) {
  coolbench::testing::expect_one_line(err, "model", needle);
}

const std::vector<std::string> k_tiny = {"model", "gpt2",    "--layers",    "1",       "--hidden",
                                         "16",    "--heads", "2",           "--vocab", "50",
                                         "--seq", "4",       "--positions", "8"};

TEST_F(model_test, gpt2_writes_the_file_and_says_what_it_is) {
  const fs::path path = dir() / "tiny.onnx";
  std::vector<std::string> args = k_tiny;
  args.insert(args.end(), {"-o", path.string()});
  const run_result r = run(args);
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(r.out.starts_with("wrote " + path.string() +
                                ": GPT-2, 1 layer, hidden 16, 2 heads, vocab 50, "))
      << r.out;
  EXPECT_NE(r.out.find(" parameters, fp32, "), std::string::npos) << r.out;
  EXPECT_GT(fs::file_size(path), 0U);
  EXPECT_FALSE(fs::exists(path.string() + ".tmp"));

  // The same options write the same bytes; fp16 writes a smaller file.
  const fs::path again = dir() / "again.onnx";
  args.back() = again.string();
  ASSERT_EQ(run(args).code, 0);
  EXPECT_EQ(read_file(path), read_file(again));
  const fs::path half = dir() / "half.onnx";
  args.back() = half.string();
  args.insert(args.end(), {"--dtype", "fp16"});
  const run_result h = run(args);
  ASSERT_EQ(h.code, 0) << describe(h);
  EXPECT_NE(h.out.find(", fp16, "), std::string::npos) << h.out;
  EXPECT_LT(fs::file_size(half), fs::file_size(path));
}

TEST_F(model_test, bad_gpt2_options_are_usage_errors_naming_them) {
  const std::string out = (dir() / "bad.onnx").string();
  for (const auto& [args, needle] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"model", "gpt2", "--hidden", "30", "--heads", "4", "-o", out}, "multiple of heads"},
           {{"model", "gpt2", "--seq", "2000", "-o", out}, "must not exceed positions"},
           {{"model", "gpt2", "--layers", "0", "-o", out}, "--layers"},
           {{"model", "gpt2", "--vocab", "1", "-o", out}, "--vocab"},
           {{"model", "gpt2", "--dtype", "bf16", "-o", out}, "--dtype"},
           {{"model", "gpt2", "--seed", "-1", "-o", out}, "--seed"},
           {{"model", "gpt2", "--layers", "36", "--hidden", "1280", "--heads", "20", "-o", out},
            "2 GB"},
           {{"model", "gpt2"}, "--output"}}) {
    const run_result r = run(args);
    EXPECT_EQ(r.code, 2) << describe(r);
    EXPECT_EQ(r.out, "");
    expect_one_line(r.err, needle);
    EXPECT_FALSE(fs::exists(out));
  }
}

TEST_F(model_test, an_unwritable_file_exits_4) {
  std::vector<std::string> args = k_tiny;
  args.insert(args.end(), {"-o", (dir() / "missing" / "tiny.onnx").string()});
  const run_result r = run(args);
  EXPECT_EQ(r.code, 4) << describe(r);
  expect_one_line(r.err, "cannot write");
}

TEST_F(model_test, help_prints_the_documentation) {
  const std::string doc = read_file(fs::path(PROJECT_SOURCE_DIR) / "docs" / "cli" / "model.md");
  ASSERT_FALSE(doc.empty());
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"model", "--help"}, {"model", "gpt2", "--help"}}) {
    const run_result r = run(args);
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_EQ(r.out, doc);
  }
}

}  // namespace
