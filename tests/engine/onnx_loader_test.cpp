// Loading ONNX: what a good file becomes, and a clear model_error — never a
// crash — for everything a broken or hostile one gets wrong.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "coolbench/engine/model.hpp"

namespace coolbench::engine {
namespace {

namespace fs = std::filesystem;

std::vector<std::byte> bytes_of(const onnx::ModelProto& model) {
  const std::string text = model.SerializeAsString();
  std::vector<std::byte> bytes(text.size());
  std::memcpy(bytes.data(), text.data(), text.size());
  return bytes;
}

onnx::ModelProto add_model() {
  onnx::ModelProto model;
  const auto bytes = make_add_model();
  EXPECT_TRUE(model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
  return model;
}

void expect_model_error(const onnx::ModelProto& model, const std::string& needle,
                        const fs::path& dir = ".") {
  try {
    (void)parse_onnx(bytes_of(model), dir, "test.onnx");
    ADD_FAILURE() << "loaded a model that should fail with: " << needle;
  } catch (const model_error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("test.onnx: ", 0), 0U) << e.what();
  }
}

onnx::TensorProto* add_initializer(onnx::GraphProto* g, const std::string& name,
                                   std::vector<float> values, std::vector<std::int64_t> dims) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto_DataType_FLOAT);
  for (const auto d : dims) t->add_dims(d);
  for (const float v : values) t->add_float_data(v);
  return t;
}

TEST(onnx_loader, the_add_model) {
  const graph g = parse_onnx(make_add_model(), ".", "add.onnx");
  EXPECT_EQ(g.opset, 13);
  ASSERT_EQ(g.inputs.size(), 2U);
  EXPECT_EQ(g.inputs[0].name, "A");
  EXPECT_EQ(g.inputs[0].type, dtype::float32);
  ASSERT_EQ(g.inputs[0].shape.size(), 4U);
  EXPECT_EQ(g.inputs[0].shape[2].value, 3);
  ASSERT_EQ(g.nodes.size(), 1U);
  EXPECT_EQ(g.nodes[0].op_type, "Add");
  ASSERT_EQ(g.outputs.size(), 1U);
  EXPECT_EQ(g.outputs[0].name, "C");
}

// Found by the fuzzer (seeded with PyTorch's GPT-2 export): an empty tensor
// given as raw_data made the loader memcpy into a null pointer.
TEST(onnx_loader, empty_raw_data_tensor) {
  onnx::ModelProto model = add_model();
  auto* t = add_initializer(model.mutable_graph(), "empty", {}, {0, 4});
  t->set_raw_data(std::string());
  const graph g = parse_onnx(bytes_of(model), ".", "empty.onnx");
  const tensor& empty = g.initializers.at("empty");
  EXPECT_EQ(empty.shape(), (shape_t{0, 4}));
  EXPECT_EQ(empty.size(), 0);
}

TEST(onnx_loader, initializers_attributes_symbols_and_order) {
  onnx::ModelProto model = add_model();
  auto* g = model.mutable_graph();
  g->mutable_input(1)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_param("batch");
  add_initializer(g, "W", {1, 2, 3, 4}, {2, 2});
  auto* raw = g->add_initializer();  // raw_data form
  raw->set_name("R");
  raw->set_data_type(onnx::TensorProto_DataType_INT64);
  raw->add_dims(2);
  const std::int64_t values[2] = {7, -8};
  raw->set_raw_data(values, sizeof values);
  // A node listed before its producer: the loader orders them.
  auto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->set_name("relu");
  relu->add_input("C");
  relu->add_output("D");
  auto* attr = relu->add_attribute();
  attr->set_name("alpha");
  attr->set_type(onnx::AttributeProto_AttributeType_FLOAT);
  attr->set_f(0.5F);
  g->mutable_node()->SwapElements(0, 1);
  g->mutable_output(0)->set_name("D");

  const graph loaded = parse_onnx(bytes_of(model), ".", "m.onnx");
  EXPECT_EQ(loaded.inputs[1].shape[0].symbol, "batch");
  EXPECT_EQ(loaded.initializers.at("W").data<float>()[3], 4.0F);
  EXPECT_EQ(loaded.initializers.at("R").data<std::int64_t>()[1], -8);
  ASSERT_EQ(loaded.nodes.size(), 2U);
  EXPECT_EQ(loaded.nodes[0].op_type, "Add");
  EXPECT_EQ(loaded.nodes[1].op_type, "Relu");
  EXPECT_EQ(loaded.nodes[1].get<float>("alpha"), 0.5F);
  EXPECT_EQ(loaded.nodes[1].get<std::int64_t>("missing", 3), 3);
  EXPECT_THROW((void)loaded.nodes[1].get<std::int64_t>("alpha"), invalid_argument);
}

TEST(onnx_loader, external_data_is_read_from_beside_the_model) {
  const fs::path dir = fs::temp_directory_path() / ("coolbench_ext_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const float weights[4] = {1.5F, 2.5F, 3.5F, 4.5F};
  {
    std::ofstream out(dir / "weights.bin", std::ios::binary);
    out.write("pad!", 4);
    out.write(reinterpret_cast<const char*>(weights), sizeof weights);  // NOLINT
  }
  onnx::ModelProto model = add_model();
  auto* t = model.mutable_graph()->add_initializer();
  t->set_name("W");
  t->set_data_type(onnx::TensorProto_DataType_FLOAT);
  t->add_dims(4);
  t->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  const auto entry = [&](const char* key, const std::string& value) {
    auto* e = t->add_external_data();
    e->set_key(key);
    e->set_value(value);
  };
  entry("location", "weights.bin");
  entry("offset", "4");
  entry("length", "16");
  const graph loaded = parse_onnx(bytes_of(model), dir, "m.onnx");
  EXPECT_EQ(loaded.initializers.at("W").data<float>()[2], 3.5F);

  t->mutable_external_data(0)->set_value("missing.bin");
  expect_model_error(model, "missing.bin", dir);
  t->mutable_external_data(0)->set_value("weights.bin");
  t->mutable_external_data(2)->set_value("400");
  expect_model_error(model, "asks for 400", dir);
  // A model must not read files outside its folder (ONNX's external-data
  // rule); noticed while writing the loader's fuzzer (tests/fuzz).
  t->mutable_external_data(2)->set_value("16");
  t->mutable_external_data(0)->set_value((dir / "weights.bin").string());
  expect_model_error(model, "must be a path inside the model's folder", dir);
  t->mutable_external_data(0)->set_value("../" + dir.filename().string() + "/weights.bin");
  expect_model_error(model, "must be a path inside the model's folder", dir);
  fs::remove_all(dir);
}

TEST(onnx_loader, corrupt_and_truncated_files) {
  auto bytes = make_add_model();
  bytes.resize(bytes.size() / 2);
  EXPECT_THROW((void)parse_onnx(bytes, ".", "half.onnx"), model_error);
  std::vector<std::byte> garbage(64, std::byte{0xFF});
  EXPECT_THROW((void)parse_onnx(garbage, ".", "garbage.onnx"), model_error);
  EXPECT_THROW((void)load_onnx("/nonexistent/model.onnx"), model_error);
}

TEST(onnx_loader, structural_errors_name_what_is_wrong) {
  {
    onnx::ModelProto model = add_model();
    model.mutable_graph()->mutable_node(0)->set_input(1, "nowhere");
    expect_model_error(model, "reads 'nowhere'");
  }
  {
    onnx::ModelProto model = add_model();  // C = Add(A, D), D = Relu(C)
    auto* g = model.mutable_graph();
    g->mutable_node(0)->set_input(1, "D");
    auto* relu = g->add_node();
    relu->set_op_type("Relu");
    relu->set_name("relu");
    relu->add_input("C");
    relu->add_output("D");
    expect_model_error(model, "cycle");
  }
  {
    onnx::ModelProto model = add_model();
    model.mutable_graph()->mutable_output(0)->set_name("Z");
    expect_model_error(model, "graph output 'Z' is never computed");
  }
  {
    onnx::ModelProto model = add_model();
    add_initializer(model.mutable_graph(), "W", {1, 2, 3}, {2, 2});
    expect_model_error(model, "needs 16 bytes");
  }
  {
    onnx::ModelProto model = add_model();
    add_initializer(model.mutable_graph(), "huge", {},
                    {std::int64_t{1} << 40, std::int64_t{1} << 40});
    expect_model_error(model, "more elements than fit");
  }
  {
    onnx::ModelProto model = add_model();
    model.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
        onnx::TensorProto_DataType_COMPLEX64);
    expect_model_error(model, "does not support");
  }
  {
    onnx::ModelProto model = add_model();
    model.clear_opset_import();
    expect_model_error(model, "imports no opset");
  }
}

}  // namespace
}  // namespace coolbench::engine
