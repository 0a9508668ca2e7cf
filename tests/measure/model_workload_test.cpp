// An ONNX model as a workload on the engine's cpu backend: the Add model and a
// tiny GPT-2, random inputs in range, host-clock timing, release and again.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "coolbench/engine/model.hpp"
#include "coolbench/measure/workload.hpp"

namespace coolbench::measure {
namespace {

namespace fs = std::filesystem;

class model_workload_test : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("coolbench_measure_" + std::to_string(getpid()));
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  [[nodiscard]] const fs::path& dir() const { return m_dir; }

 private:
  fs::path m_dir;
};

void expect_sane(const timing& t) {
  EXPECT_GT(t.latency_ms, 0.0);
  EXPECT_GT(t.end_ns, t.start_ns);
  EXPECT_DOUBLE_EQ(t.latency_ms, static_cast<double>(t.end_ns - t.start_ns) / 1e6);
}

TEST_F(model_workload_test, the_add_model_runs_and_is_timed_with_the_host_clock) {
  const fs::path path = dir() / "add.onnx";
  engine::write_model(path, engine::make_add_model());
  auto w = make_model_workload(path);
  EXPECT_FALSE(w->device().has_value());
  EXPECT_FALSE(w->flops().has_value());
  expect_sane(w->run());  // prepares by itself
  const std::string text = w->describe();
  EXPECT_NE(text.find("add.onnx"), std::string::npos) << text;
  EXPECT_NE(text.find("A [1, 2, 3, 3]"), std::string::npos) << text;
  for (int i = 0; i < 3; ++i) expect_sane(w->run());
  w->release();
  w->release();  // idempotent
  w->prepare();
  w->prepare();
  expect_sane(w->run());
}

TEST_F(model_workload_test, gpt2_gets_token_ids_within_its_vocabulary) {
  // vocab 50 < the default id range of 100: ids from outside the token
  // embedding would make Gather fail, so running shows the vocabulary was found.
  engine::gpt2_config config;
  config.layers = 1;
  config.hidden = 32;
  config.heads = 2;
  config.vocab = 50;
  config.positions = 16;
  config.sequence = 8;
  const fs::path path = dir() / "gpt2.onnx";
  engine::write_gpt2_model(config, path);
  auto w = make_model_workload(path, "cpu", {{"batch", 2}, {"sequence", 8}});
  expect_sane(w->run());
  expect_sane(w->run());
  const std::string text = w->describe();
  EXPECT_NE(text.find("input_ids [2, 8]"), std::string::npos) << text;
  EXPECT_NE(text.find("cpu"), std::string::npos) << text;
}

TEST_F(model_workload_test, an_unbound_symbolic_dimension_is_named) {
  engine::gpt2_config config;
  config.layers = 1;
  config.hidden = 16;
  config.heads = 2;
  config.vocab = 20;
  config.positions = 8;
  config.sequence = 4;
  const fs::path path = dir() / "gpt2.onnx";
  engine::write_gpt2_model(config, path);
  auto w = make_model_workload(path, "cpu", {{"batch", 1}});
  try {
    w->prepare();
    FAIL() << "prepared without a value for 'sequence'";
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'sequence'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("input_ids"), std::string::npos) << e.what();
  }
}

TEST_F(model_workload_test, a_missing_file_and_an_unknown_backend_are_errors) {
  EXPECT_THROW((void)make_model_workload(dir() / "none.onnx"), invalid_argument);
  const fs::path path = dir() / "add.onnx";
  engine::write_model(path, engine::make_add_model());
  auto w = make_model_workload(path, "tpu");
  EXPECT_THROW(w->prepare(), invalid_argument);
}

TEST_F(model_workload_test, a_cuda_backend_makes_a_gpu_workload_of_its_ordinal) {
  // Only the name is read here: no session is made before prepare(), so no GPU is needed.
  const fs::path path = dir() / "add.onnx";
  engine::write_model(path, engine::make_add_model());
  EXPECT_EQ(make_model_workload(path, "cpu")->device(), std::nullopt);
  EXPECT_EQ(make_model_workload(path, "cuda")->device(), 0);
  EXPECT_EQ(make_model_workload(path, "cuda:1")->device(), 1);
  EXPECT_THROW((void)make_model_workload(path, "cuda:x"), invalid_argument);
}

}  // namespace
}  // namespace coolbench::measure
