// `coolbench nodes` run as a child process on the CPU backend: the table it
// prints, its JSON (one entry per plan node, times that add up), usage
// errors and the help text (docs/cli/nodes.md). The GPU's node timing is in
// tests/engine/cuda_session_test.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/run_coolbench.hpp"

namespace {

namespace fs = std::filesystem;
using coolbench::testing::describe;
using coolbench::testing::read_file;
using coolbench::testing::run_result;

class nodes_test : public coolbench::testing::coolbench_test {
 protected:
  nodes_test() : coolbench_test("coolbench_nodes_test") {}

  run_result run(const std::vector<std::string>& args) {
    return coolbench_test::run(args, coolbench::testing::inherited_environment({"COOLBENCH_"}));
  }

  // A 2-layer GPT-2 of width 32, symbolic batch and sequence.
  fs::path tiny_model() {
    const fs::path path = dir() / "tiny.onnx";
    const run_result r =
        run({"model", "gpt2", "--layers", "2", "--hidden", "32", "--heads", "2", "--vocab", "50",
             "--positions", "16", "--seq", "8", "-o", path.string()});
    EXPECT_EQ(r.code, 0) << describe(r);
    return path;
  }
};

TEST_F(nodes_test, times_every_node_and_writes_them_as_json) {
  const fs::path model = tiny_model();
  const fs::path json_path = dir() / "nodes.json";
  const run_result r =
      run({"nodes", model.string(), "--device", "cpu", "--dim", "batch=1", "--dim", "sequence=8",
           "--runs", "3", "--top", "4", "--json", json_path.string()});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("a run as launched (host): least "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("operator"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("MatMul"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("slowest nodes"), std::string::npos) << r.out;
  const auto doc = nlohmann::json::parse(read_file(json_path));
  EXPECT_EQ(doc.at("schema"), "coolbench.nodes/1");
  EXPECT_EQ(doc.at("execution"), "host");
  EXPECT_EQ(doc.at("runs"), 3);
  ASSERT_GT(doc.at("nodes").size(), 10U);
  double total = 0;
  for (const auto& n : doc.at("nodes")) {
    EXPECT_FALSE(n.at("op_type").get<std::string>().empty());
    EXPECT_GE(n.at("mean_ms").get<double>(), n.at("min_ms").get<double>());
    EXPECT_EQ(n.at("detail"), "");  // the CPU backend records no choices
    total += n.at("mean_ms").get<double>();
  }
  EXPECT_GT(total, 0.0);
  EXPECT_GT(doc.at("least_run_ms").get<double>(), 0.0);
  EXPECT_GE(doc.at("median_run_ms").get<double>(), doc.at("least_run_ms").get<double>());
}

TEST_F(nodes_test, bad_options_and_missing_files_use_the_documented_codes) {
  run_result r = run({"nodes", "--device", "gpu0"});
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_NE(r.err.find("must be cpu or a CUDA ordinal"), std::string::npos) << r.err;
  r = run({"nodes", "--device", "cpu", "--runs", "0"});
  EXPECT_EQ(r.code, 2) << describe(r);
  r = run({"nodes", (dir() / "none.onnx").string(), "--device", "cpu"});
  EXPECT_EQ(r.code, 4) << describe(r);
  EXPECT_NE(r.err.find("none.onnx"), std::string::npos) << r.err;
  const fs::path not_a_model = dir() / "text.onnx";
  std::ofstream(not_a_model) << "not protobuf";
  r = run({"nodes", not_a_model.string(), "--device", "cpu"});
  EXPECT_EQ(r.code, 4) << describe(r);
  EXPECT_NE(r.err.find("coolbench nodes: "), std::string::npos) << r.err;
  r = run({"nodes", tiny_model().string(), "--device", "cpu"});  // sequence left unbound
  EXPECT_EQ(r.code, 4) << describe(r);
  EXPECT_NE(r.err.find("--dim"), std::string::npos) << r.err;
  r = run({"nodes", tiny_model().string(), "--device", "cpu", "--kernels"});
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_NE(r.err.find("--kernels traces GPU kernels"), std::string::npos) << r.err;
}

TEST_F(nodes_test, help_prints_the_documentation) {
  const std::string doc = read_file(fs::path(PROJECT_SOURCE_DIR) / "docs" / "cli" / "nodes.md");
  ASSERT_FALSE(doc.empty());
  const run_result r = run({"nodes", "--help"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, doc);
}

}  // namespace
