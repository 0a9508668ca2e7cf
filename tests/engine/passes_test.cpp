#include "coolbench/engine/passes.hpp"

#include <gtest/gtest.h>

#include <random>

#include "coolbench/engine/model.hpp"
#include "coolbench/engine/session.hpp"
#include "engine/backend.hpp"

namespace coolbench::engine {
namespace {

using int_list = std::vector<std::int64_t>;

tensor random_tensor(shape_t shape, unsigned seed) {
  tensor t(dtype::float32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  for (float& v : t.data<float>()) v = dist(rng);
  return t;
}

tensor ints(const int_list& values, bool scalar = false) {
  tensor t(dtype::int64, scalar ? shape_t{} : shape_t{static_cast<std::int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.data<std::int64_t>().begin());
  return t;
}

node make_node(std::string op, std::vector<std::string> inputs, std::vector<std::string> outputs,
               std::map<std::string, attribute> attributes = {}) {
  node n;
  n.name = outputs.empty() ? op : outputs[0];
  n.op_type = std::move(op);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attributes = std::move(attributes);
  return n;
}

value_info declared(std::string name, dtype type, std::vector<dimension> shape) {
  return value_info{std::move(name), type, std::move(shape), true};
}

dimension sym(std::string symbol) { return dimension{-1, std::move(symbol)}; }
dimension num(std::int64_t value) { return dimension{value, {}}; }

// Runs every node on the CPU backend as written: no passes, the reference
// the folded sessions must match.
std::map<std::string, tensor> run_unfolded(const graph& g,
                                           const std::map<std::string, tensor>& inputs) {
  const auto cpu = make_backend("cpu");
  std::map<std::string, tensor> values = g.initializers;
  values.insert(inputs.begin(), inputs.end());
  for (const node& n : g.nodes) {
    std::vector<const tensor*> in;
    for (const auto& name : n.inputs) in.push_back(name.empty() ? nullptr : &values.at(name));
    std::vector<tensor> out(n.outputs.size());
    cpu->run(n, in, out);
    for (std::size_t i = 0; i < out.size(); ++i) values[n.outputs[i]] = std::move(out[i]);
  }
  return values;
}

void expect_same(const tensor& got, const tensor& want) {
  ASSERT_EQ(got.type(), want.type());
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_TRUE(std::equal(got.raw().begin(), got.raw().end(), want.raw().begin()));
}

// What torch.onnx.export emits for x.view(batch, seq, 2, 2) with dynamic
// batch and sequence, plus a ConstantOfShape of that shape added to it.
graph shape_chain_graph() {
  graph g;
  g.name = "shape_chain";
  g.opset = 17;
  g.inputs = {declared("x", dtype::float32, {sym("batch"), sym("sequence"), num(4)})};
  g.outputs = {declared("y", dtype::float32, {sym("batch"), sym("sequence"), num(2), num(2)})};
  g.initializers["zero"] = ints({0}, true);
  g.initializers["one"] = ints({1}, true);
  g.initializers["axes"] = ints({0});
  g.initializers["tail"] = ints({2, 2});
  tensor one_and_half(dtype::float32, {1});
  one_and_half.data<float>()[0] = 1.5F;
  g.nodes = {
      make_node("Shape", {"x"}, {"x_shape"}),
      make_node("Gather", {"x_shape", "zero"}, {"batch"}, {{"axis", std::int64_t{0}}}),
      make_node("Gather", {"x_shape", "one"}, {"sequence"}, {{"axis", std::int64_t{0}}}),
      make_node("Unsqueeze", {"batch", "axes"}, {"batch_1d"}),
      make_node("Unsqueeze", {"sequence", "axes"}, {"sequence_1d"}),
      make_node("Concat", {"batch_1d", "sequence_1d", "tail"}, {"target"},
                {{"axis", std::int64_t{0}}}),
      make_node("Reshape", {"x", "target"}, {"reshaped"}),
      make_node("ConstantOfShape", {"target"}, {"offsets"}, {{"value", one_and_half}}),
      make_node("Add", {"reshaped", "offsets"}, {"y"}),
  };
  return g;
}

TEST(passes, symbolic_shapes_flow_through_the_shape_chain) {
  const auto shapes = infer_shapes(shape_chain_graph());
  EXPECT_EQ(shapes.at("target").describe(), "[4]");
  EXPECT_EQ(shapes.at("reshaped").describe(), "[batch, sequence, 2, 2]");
  EXPECT_EQ(shapes.at("y").describe(), "[batch, sequence, 2, 2]");
  EXPECT_FALSE(shapes.at("y").is_static());

  const auto bound = infer_shapes(shape_chain_graph(), {{"batch", 2}, {"sequence", 3}});
  EXPECT_EQ(bound.at("y").static_shape(), (shape_t{2, 3, 2, 2}));
  EXPECT_EQ(bound.at("batch").describe(), "[]");
  EXPECT_EQ(bound.at("y").type, dtype::float32);
}

TEST(passes, bound_dimensions_fold_the_shape_chain_to_one_constant) {
  graph g = shape_chain_graph();
  EXPECT_EQ(fold_constants(g), 0U) << "nothing is known before batch and sequence are bound";

  EXPECT_EQ(fold_constants(g, {{"batch", 2}, {"sequence", 3}}), 7U);
  EXPECT_EQ(remove_dead_nodes(g), 0U);
  ASSERT_EQ(g.nodes.size(), 2U);
  EXPECT_EQ(g.nodes[0].op_type, "Reshape");
  EXPECT_EQ(g.nodes[1].op_type, "Add");
  expect_same(g.initializers.at("target"), ints({2, 3, 2, 2}));
  // Only what the remaining nodes read is left.
  EXPECT_EQ(g.initializers.size(), 2U);
  EXPECT_TRUE(g.initializers.contains("offsets"));
}

TEST(passes, a_folded_session_matches_the_unfolded_run) {
  const tensor x = random_tensor({2, 3, 4}, 7);
  const tensor want = run_unfolded(shape_chain_graph(), {{"x", x}}).at("y");

  session bound(shape_chain_graph(), session_options{{{"batch", 2}, {"sequence", 3}}});
  EXPECT_EQ(bound.node_count(), 2U);
  bound.set_input("x", x);
  bound.run();
  expect_same(bound.output("y"), want);

  // Unbound, the session starts with every node and specializes at run().
  session unbound(shape_chain_graph());
  EXPECT_EQ(unbound.node_count(), 9U);
  unbound.set_input("x", x);
  unbound.run();
  EXPECT_EQ(unbound.node_count(), 2U);
  expect_same(unbound.output("y"), want);

  // Other dimensions make the bound session specialize again.
  const tensor other = random_tensor({1, 5, 4}, 8);
  bound.set_input("x", other);
  bound.run();
  EXPECT_EQ(bound.node_count(), 2U);
  expect_same(bound.output("y"), run_unfolded(shape_chain_graph(), {{"x", other}}).at("y"));
}

// A causal mask as exporters build it: positions from Range over the
// sequence length, compared row against column, a Slice of a stored bias
// cut to the sequence, and a Where over the scores.
graph causal_mask_graph() {
  graph g;
  g.opset = 17;
  g.inputs = {declared("scores", dtype::float32, {sym("batch"), sym("sequence"), sym("sequence")})};
  g.outputs = {declared("masked", dtype::float32, {})};
  g.initializers["start"] = ints({0}, true);
  g.initializers["step"] = ints({1}, true);
  g.initializers["one"] = ints({1}, true);
  g.initializers["axis0"] = ints({0});
  g.initializers["axis1"] = ints({1});
  g.initializers["zero_1d"] = ints({0});
  g.initializers["bias"] = random_tensor({16, 16}, 5);
  tensor lowest(dtype::float32, {});
  lowest.data<float>()[0] = -1e9F;
  g.initializers["lowest"] = lowest;
  g.nodes = {
      make_node("Shape", {"scores"}, {"shape"}),
      make_node("Gather", {"shape", "one"}, {"length"}, {{"axis", std::int64_t{0}}}),
      make_node("Range", {"start", "length", "step"}, {"positions"}),
      make_node("Unsqueeze", {"positions", "axis1"}, {"rows"}),
      make_node("Unsqueeze", {"positions", "axis0"}, {"columns"}),
      make_node("Greater", {"columns", "rows"}, {"future"}),
      make_node("Unsqueeze", {"length", "axis0"}, {"length_1d"}),
      make_node("Slice", {"bias", "zero_1d", "length_1d", "axis0"}, {"bias_rows"}),
      make_node("Slice", {"bias_rows", "zero_1d", "length_1d", "axis1"}, {"bias_cut"}),
      make_node("Cast", {"future"}, {"future_f"}, {{"to", std::int64_t{1}}}),
      make_node("Mul", {"future_f", "bias_cut"}, {"penalty"}),
      make_node("Add", {"scores", "penalty"}, {"shifted"}),
      make_node("Where", {"future", "lowest", "shifted"}, {"masked"}),
  };
  return g;
}

TEST(passes, a_causal_mask_folds_once_the_sequence_is_bound) {
  const auto unbound = infer_shapes(causal_mask_graph());
  EXPECT_EQ(unbound.at("positions").describe(), "[sequence]");
  EXPECT_EQ(unbound.at("future").describe(), "[sequence, sequence]");
  // A Slice to a symbolic end is min(end, 16): unknown, and so is all it reaches.
  EXPECT_EQ(unbound.at("bias_cut").describe(), "[?, ?]");
  EXPECT_EQ(unbound.at("masked").describe(), "[batch, ?, ?]");

  const tensor scores = random_tensor({2, 5, 5}, 6);
  session s(causal_mask_graph(), session_options{{{"sequence", 5}}});
  // Everything but the two nodes that read the scores is known, though the
  // batch is not bound: the Gather picks a dimension that is.
  EXPECT_EQ(s.node_count(), 2U);
  s.set_input("scores", scores);
  s.run();
  expect_same(s.output("masked"),
              run_unfolded(causal_mask_graph(), {{"scores", scores}}).at("masked"));
}

TEST(passes, dead_nodes_and_unused_initializers_are_dropped) {
  graph g;
  g.opset = 17;
  g.inputs = {declared("x", dtype::float32, {num(3)})};
  g.outputs = {declared("y", dtype::float32, {num(3)})};
  g.initializers["unused"] = random_tensor({3}, 1);
  g.initializers["bias"] = random_tensor({3}, 2);
  g.nodes = {
      make_node("Exp", {"x"}, {"e"}),
      make_node("Add", {"x", "bias"}, {"sum"}),
      make_node("Neg", {"e"}, {"never_read"}),
      make_node("Relu", {"sum"}, {"y"}),
  };
  graph copy = g;
  EXPECT_EQ(remove_dead_nodes(copy), 2U);
  ASSERT_EQ(copy.nodes.size(), 2U);
  EXPECT_EQ(copy.nodes[0].op_type, "Add");
  EXPECT_EQ(copy.nodes[1].op_type, "Relu");
  EXPECT_FALSE(copy.initializers.contains("unused"));
  EXPECT_TRUE(copy.initializers.contains("bias"));

  // A dead node the backend cannot run does not stop a session; a live one does.
  g.nodes[2].op_type = "FancyAttention";
  session s(g);
  EXPECT_EQ(s.node_count(), 2U);
  g.nodes[3].op_type = "FancyAttention";
  try {
    session live(g);
    FAIL() << "created a session with a live unsupported operator";
  } catch (const model_error& e) {
    EXPECT_STREQ(e.what(), "unsupported operator FancyAttention (opset 17) in node 'y'");
  }
}

std::map<std::string, shape_info> infer_one(node n, std::vector<value_info> inputs,
                                            std::map<std::string, tensor> initializers = {}) {
  graph g;
  g.opset = 17;
  g.inputs = std::move(inputs);
  g.initializers = std::move(initializers);
  g.outputs = {declared(n.outputs[0], dtype::float32, {})};
  g.nodes = {std::move(n)};
  return infer_shapes(g);
}

TEST(passes, inference_rules) {
  const auto f32 = dtype::float32;
  // Broadcasting: right-aligned, 1 stretches, a symbol survives against 1.
  EXPECT_EQ(infer_one(make_node("Add", {"a", "b"}, {"c"}),
                      {declared("a", f32, {sym("batch"), num(1), num(4)}),
                       declared("b", f32, {num(3), num(1)})})
                .at("c")
                .describe(),
            "[batch, 3, 4]");
  EXPECT_EQ(infer_one(make_node("Less", {"a", "b"}, {"c"}),
                      {declared("a", f32, {num(2)}), declared("b", f32, {})})
                .at("c")
                .type,
            dtype::boolean);
  // MatMul: batch dimensions broadcast, 1-D operands lose their added axis.
  EXPECT_EQ(infer_one(make_node("MatMul", {"a", "b"}, {"c"}),
                      {declared("a", f32, {num(2), sym("batch"), num(3), num(4)}),
                       declared("b", f32, {num(4), num(5)})})
                .at("c")
                .describe(),
            "[2, batch, 3, 5]");
  EXPECT_EQ(infer_one(make_node("MatMul", {"a", "b"}, {"c"}),
                      {declared("a", f32, {num(4)}), declared("b", f32, {num(7), num(4), num(5)})})
                .at("c")
                .describe(),
            "[7, 5]");
  // Reshape: 0 copies, -1 takes the rest, also past a symbol.
  EXPECT_EQ(infer_one(make_node("Reshape", {"a", "s"}, {"c"}),
                      {declared("a", f32, {num(2), num(3), num(4)})}, {{"s", ints({-1, 4})}})
                .at("c")
                .describe(),
            "[6, 4]");
  EXPECT_EQ(infer_one(make_node("Reshape", {"a", "s"}, {"c"}),
                      {declared("a", f32, {sym("batch"), num(12), num(64)})},
                      {{"s", ints({0, -1, 2, 2})}})
                .at("c")
                .describe(),
            "[batch, 192, 2, 2]");
  EXPECT_EQ(infer_one(make_node("Reshape", {"a", "s"}, {"c"}),
                      {declared("a", f32, {sym("batch"), sym("sequence"), num(8)})},
                      {{"s", ints({-1, 8})}})
                .at("c")
                .describe(),
            "[?, 8]");
  EXPECT_EQ(infer_one(make_node("Transpose", {"a"}, {"c"}, {{"perm", int_list{0, 2, 1, 3}}}),
                      {declared("a", f32, {sym("batch"), num(5), num(12), num(64)})})
                .at("c")
                .describe(),
            "[batch, 12, 5, 64]");
  EXPECT_EQ(infer_one(make_node("Gather", {"a", "i"}, {"c"}, {{"axis", std::int64_t{1}}}),
                      {declared("a", f32, {num(3), num(50), num(8)}),
                       declared("i", dtype::int64, {sym("batch"), sym("sequence")})})
                .at("c")
                .describe(),
            "[3, batch, sequence, 8]");
  // Slice: negative starts and ends count from the back; a negative step walks back.
  EXPECT_EQ(infer_one(make_node("Slice", {"a", "starts", "ends", "axes", "steps"}, {"c"}),
                      {declared("a", f32, {num(10), num(8), sym("s")})},
                      {{"starts", ints({-3, -1})},
                       {"ends", ints({-1, -100})},
                       {"axes", ints({0, 1})},
                       {"steps", ints({1, -2})}})
                .at("c")
                .describe(),
            "[2, 4, s]");
  // A backward slice of an empty axis is empty, as the kernel makes it.
  EXPECT_EQ(infer_one(make_node("Slice", {"a", "starts", "ends", "axes", "steps"}, {"c"}),
                      {declared("a", f32, {num(0), num(3)})},
                      {{"starts", ints({-5})},
                       {"ends", ints({-100})},
                       {"axes", ints({0})},
                       {"steps", ints({-1})}})
                .at("c")
                .describe(),
            "[0, 3]");
  EXPECT_EQ(infer_one(make_node("ReduceMean", {"a"}, {"c"}, {{"axes", int_list{-1}}}),
                      {declared("a", f32, {sym("batch"), num(5), num(768)})})
                .at("c")
                .describe(),
            "[batch, 5, 1]");
  EXPECT_EQ(infer_one(make_node("Unsqueeze", {"a", "axes"}, {"c"}),
                      {declared("a", f32, {sym("batch"), num(5)})}, {{"axes", ints({0, -1})}})
                .at("c")
                .describe(),
            "[1, batch, 5, 1]");
  EXPECT_EQ(infer_one(make_node("Cast", {"a"}, {"c"}, {{"to", std::int64_t{7}}}),
                      {declared("a", f32, {num(2)})})
                .at("c")
                .type,
            dtype::int64);
  // Unknown stays unknown: a shape computed at run time.
  EXPECT_EQ(infer_one(make_node("Reshape", {"a", "s"}, {"c"}),
                      {declared("a", f32, {num(6)}), declared("s", dtype::int64, {num(2)})})
                .at("c")
                .describe(),
            "[?, ?]");
  // A shape input whose declared length is absurd leaves the rank unknown
  // instead of sizing a vector by it (found by the fuzzer: out of memory).
  for (const char* op : {"Reshape", "Expand", "ConstantOfShape"}) {
    const bool shape_first = std::string_view(op) == "ConstantOfShape";
    const auto inputs =
        shape_first ? std::vector<std::string>{"s"} : std::vector<std::string>{"a", "s"};
    EXPECT_EQ(infer_one(make_node(op, inputs, {"c"}),
                        {declared("a", f32, {num(6)}),
                         declared("s", dtype::int64, {num(std::int64_t{1} << 40)})})
                  .at("c")
                  .describe(),
              "unknown rank")
        << op;
  }
}

std::string inconsistency(node n, std::vector<value_info> inputs) {
  try {
    (void)infer_one(std::move(n), std::move(inputs));
  } catch (const model_error& e) {
    return e.what();
  }
  return "no error";
}

TEST(passes, inconsistent_shapes_name_the_node_and_both_shapes) {
  const auto f32 = dtype::float32;
  const std::string add =
      inconsistency(make_node("Add", {"a", "b"}, {"sum"}),
                    {declared("a", f32, {num(2), num(3)}), declared("b", f32, {num(4), num(3)})});
  EXPECT_NE(add.find("inconsistent shapes in node 'sum' (Add)"), std::string::npos) << add;
  EXPECT_NE(add.find("[2, 3] and [4, 3] do not broadcast"), std::string::npos) << add;

  const std::string matmul = inconsistency(
      make_node("MatMul", {"a", "b"}, {"product"}),
      {declared("a", f32, {sym("batch"), num(3)}), declared("b", f32, {num(4), num(5)})});
  EXPECT_NE(matmul.find("node 'product' (MatMul)"), std::string::npos) << matmul;
  EXPECT_NE(matmul.find("A is [batch, 3], B is [4, 5]"), std::string::npos) << matmul;

  // The same mismatch through a session: the error comes when it is created.
  graph g;
  g.opset = 17;
  g.inputs = {declared("a", f32, {num(2), num(3)}), declared("b", f32, {num(4), num(3)})};
  g.outputs = {declared("sum", f32, {})};
  g.nodes = {make_node("Add", {"a", "b"}, {"sum"})};
  EXPECT_THROW(session{g}, model_error);
}

TEST(passes, big_results_are_not_folded) {
  graph g;
  g.opset = 17;
  g.inputs = {declared("x", dtype::float32, {num(512), num(512)})};
  g.outputs = {declared("y", dtype::float32, {}), declared("z", dtype::float32, {})};
  g.initializers["big_shape"] = ints({512, 512});
  g.initializers["weight"] = random_tensor({512, 512}, 3);
  g.initializers["small"] = random_tensor({4, 4}, 4);
  g.nodes = {
      make_node("ConstantOfShape", {"big_shape"}, {"zeros"}),
      make_node("Transpose", {"weight"}, {"weight_t"}),
      make_node("Add", {"zeros", "weight_t"}, {"sum"}),
      make_node("Add", {"x", "sum"}, {"y"}),
      make_node("Transpose", {"small"}, {"small_t"}),
      make_node("Relu", {"small_t"}, {"z"}),
  };
  const auto shapes = infer_shapes(g);
  EXPECT_EQ(shapes.at("sum").static_shape(), (shape_t{512, 512}));
  graph folded = g;
  EXPECT_EQ(fold_constants(folded), 2U);  // the small Transpose and Relu
  EXPECT_EQ(folded.nodes.size(), 4U);
  EXPECT_EQ(folded.initializers.at("z").shape(), (shape_t{4, 4}));
  EXPECT_FALSE(folded.initializers.contains("zeros"));
  EXPECT_FALSE(folded.initializers.contains("weight_t"));
  // The limit is a parameter.
  graph everything = g;
  EXPECT_EQ(fold_constants(everything, {}, 512 * 512), 5U);
}

}  // namespace
}  // namespace coolbench::engine

namespace coolbench::engine {
namespace {

// An even Split along a known axis gives each output a known shape (GPT-2's
// QKV split: without it nothing after the attention's split was static).
TEST(passes, an_even_split_has_static_outputs) {
  graph g;
  g.opset = 17;
  g.inputs.push_back({"x", dtype::float32, {{1, ""}, {8, ""}, {96, ""}}, true});
  node n;
  n.name = "split";
  n.op_type = "Split";
  n.inputs = {"x"};
  n.outputs = {"q", "k", "v"};
  n.attributes["axis"] = std::int64_t{-1};
  g.nodes.push_back(n);
  for (const auto& o : n.outputs) g.outputs.push_back({o, dtype::float32, {}, false});
  const auto shapes = infer_shapes(g);
  for (const auto& o : n.outputs) {
    ASSERT_TRUE(shapes.at(o).is_static()) << o << ": " << shapes.at(o).describe();
    EXPECT_EQ(shapes.at(o).static_shape(), (shape_t{1, 8, 32}));
  }
}

}  // namespace
}  // namespace coolbench::engine
