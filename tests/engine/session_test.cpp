#include "coolbench/engine/session.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include <unistd.h>

#include "coolbench/engine/model.hpp"

namespace coolbench::engine {
namespace {

tensor random_tensor(shape_t shape, unsigned seed) {
  tensor t(dtype::float32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  for (float& v : t.data<float>()) v = dist(rng);
  return t;
}

session add_session() { return session(parse_onnx(make_add_model(), ".", "add.onnx")); }

TEST(session, runs_the_add_model) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("coolbench_add_" + std::to_string(::getpid()) + ".onnx");
  write_model(path, make_add_model());
  session s = session::load(path);
  std::filesystem::remove(path);
  EXPECT_EQ(s.backend_name(), "cpu");
  const tensor a = random_tensor({1, 2, 3, 3}, 1);
  const tensor b = random_tensor({1, 2, 3, 3}, 2);
  s.set_input("A", a);
  s.set_input("B", b);
  s.run();
  const tensor& c = s.output("C");
  ASSERT_EQ(c.shape(), (shape_t{1, 2, 3, 3}));
  for (std::size_t i = 0; i < 18; ++i)
    EXPECT_EQ(c.data<float>()[i], a.data<float>()[i] + b.data<float>()[i]);
  EXPECT_EQ(&s.output(0), &c);
  s.release();
  EXPECT_THROW((void)s.output("C"), invalid_argument);
}

// Node timing on the CPU: one entry per plan node, in run order, with the
// outputs of an ordinary run.
TEST(session, node_times_time_each_node_of_the_plan) {
  gpt2_config config;
  config.layers = 1;
  config.hidden = 32;
  config.heads = 2;
  config.vocab = 50;
  config.positions = 16;
  config.sequence = 8;
  session s(parse_onnx(make_gpt2_model(config), ".", "gpt2.onnx"),
            {{{"batch", 1}, {"sequence", 8}}});
  tensor ids(dtype::int64, {1, 8});
  for (std::int64_t i = 0; i < 8; ++i)
    ids.data<std::int64_t>()[static_cast<std::size_t>(i)] = i * 5;
  s.set_input("input_ids", ids);
  EXPECT_THROW((void)s.node_times(0), invalid_argument);
  const std::vector<node_time> times = s.node_times(3);
  ASSERT_EQ(times.size(), s.node_count());
  double total = 0.0;
  bool has_matmul = false;
  for (const node_time& t : times) {
    EXPECT_FALSE(t.op_type.empty());
    EXPECT_GE(t.min_ms, 0.0);
    EXPECT_GE(t.mean_ms, t.min_ms);
    total += t.mean_ms;
    has_matmul = has_matmul || t.op_type == "MatMul" || t.op_type == "Gemm";
  }
  EXPECT_TRUE(has_matmul);
  EXPECT_GT(total, 0.0);
  const tensor timed = s.output(0);
  s.run();
  ASSERT_EQ(timed.bytes(), s.output(0).bytes());
  EXPECT_EQ(std::memcmp(timed.raw().data(), s.output(0).raw().data(), timed.bytes()), 0);
}

TEST(session, wrong_inputs_say_expected_versus_got) {
  session s = add_session();
  const auto message = [&](const std::string& name, tensor t) {
    try {
      s.set_input(name, std::move(t));
    } catch (const invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("X", random_tensor({1, 2, 3, 3}, 1)).find("its inputs are: A, B"),
            std::string::npos);
  EXPECT_NE(message("A", tensor(dtype::int64, {1, 2, 3, 3})).find("expected float32, got int64"),
            std::string::npos);
  EXPECT_NE(
      message("A", random_tensor({1, 2, 3}, 1)).find("expected shape [1, 2, 3, 3], got [1, 2, 3]"),
      std::string::npos);
  s.set_input("A", random_tensor({1, 2, 3, 3}, 1));
  try {
    s.run();
    FAIL() << "ran without input B";
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("input 'B' was not set"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)s.output(3), invalid_argument);
}

TEST(session, symbolic_dimensions_bind_across_inputs) {
  graph g = parse_onnx(make_add_model(), ".", "add.onnx");
  for (auto& input : g.inputs) input.shape[0] = dimension{-1, "batch"};
  g.outputs[0].shape[0] = dimension{-1, "batch"};
  session s(std::move(g));
  s.set_input("A", random_tensor({4, 2, 3, 3}, 1));
  try {
    s.set_input("B", random_tensor({5, 2, 3, 3}, 2));
    FAIL() << "accepted a second binding of 'batch'";
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'batch' is 4"), std::string::npos) << e.what();
  }
  s.set_input("B", random_tensor({4, 2, 3, 3}, 2));
  s.run();
  EXPECT_EQ(s.output("C").shape()[0], 4);
}

TEST(session, an_unsupported_operator_fails_at_load_naming_op_opset_and_node) {
  graph g = parse_onnx(make_add_model(), ".", "add.onnx");
  g.nodes[0].op_type = "FancyAttention";
  try {
    session s(std::move(g));
    FAIL() << "created a session with an unsupported operator";
  } catch (const model_error& e) {
    EXPECT_STREQ(e.what(), "unsupported operator FancyAttention (opset 13) in node 'add'");
  }
  EXPECT_THROW(session(parse_onnx(make_add_model(), ".", "add.onnx"), "tpu"), invalid_argument);
}

}  // namespace
}  // namespace coolbench::engine
