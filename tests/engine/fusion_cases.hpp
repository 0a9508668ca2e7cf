// What the fusion tests share (fusion_test.cpp on the CPU, cuda_fusion_test.cpp
// on a GPU): small graphs holding each pattern the passes match, the
// exported models of tests/data/models with inputs for them, and a plain
// executor that runs a graph's nodes in order on any backend.
#pragma once

#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "coolbench/engine/graph.hpp"
#include "coolbench/engine/model.hpp"
#include "coolbench/engine/passes.hpp"
#include "engine/backend.hpp"
#include "engine/fusion/fusion.hpp"

namespace coolbench::engine::fusion_cases {

inline node make_node(std::string op, std::vector<std::string> inputs,
                      std::vector<std::string> outputs,
                      std::map<std::string, attribute> attributes = {}) {
  node n;
  n.name = outputs.empty() ? op : outputs[0] + "_node";
  n.op_type = std::move(op);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attributes = std::move(attributes);
  return n;
}

inline value_info declared(std::string name, dtype type, const shape_t& shape) {
  value_info v{std::move(name), type, {}, true};
  for (const auto d : shape) v.shape.push_back(dimension{d, {}});
  return v;
}

inline float get(const tensor& t, std::size_t i) {
  switch (t.type()) {
    case dtype::float32: return t.data<float>()[i];
    case dtype::int64: return static_cast<float>(t.data<std::int64_t>()[i]);
    case dtype::int32: return static_cast<float>(t.data<std::int32_t>()[i]);
    case dtype::boolean: return t.data<bool>()[i] ? 1.0F : 0.0F;
    case dtype::float16:
    case dtype::bfloat16: {
      std::uint16_t bits = 0;
      std::memcpy(&bits, t.raw().data() + i * 2, 2);
      return t.type() == dtype::float16 ? half_to_float(bits) : bfloat16_to_float(bits);
    }
  }
  return 0;
}

inline void set(tensor& t, std::size_t i, float v) {
  switch (t.type()) {
    case dtype::float32: t.data<float>()[i] = v; break;
    case dtype::int64: t.data<std::int64_t>()[i] = static_cast<std::int64_t>(v); break;
    case dtype::int32: t.data<std::int32_t>()[i] = static_cast<std::int32_t>(v); break;
    case dtype::boolean: t.data<bool>()[i] = v != 0; break;
    case dtype::float16:
    case dtype::bfloat16: {
      const std::uint16_t bits =
          t.type() == dtype::float16 ? float_to_half(v) : float_to_bfloat16(v);
      std::memcpy(t.raw().data() + i * 2, &bits, 2);
      break;
    }
  }
}

/// Normal values (or integers in [0, int_range) for integer dtypes, or 0/1 for bool).
inline tensor random_tensor(dtype type, shape_t shape, unsigned seed, float scale = 1.0F,
                            std::int64_t int_range = 2) {
  tensor t(type, std::move(shape));
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0F, scale);
  std::uniform_int_distribution<std::int64_t> ints(0, int_range - 1);
  for (std::size_t i = 0; i < static_cast<std::size_t>(t.size()); ++i) {
    set(t, i, is_float(type) ? normal(rng) : static_cast<float>(ints(rng)));
  }
  return t;
}

/// Runs every node in order on `target` (inputs and initializers copied
/// in); returns the graph outputs as host tensors.
inline std::map<std::string, tensor> run_graph(const graph& g, backend& target,
                                               const std::map<std::string, tensor>& inputs) {
  std::map<std::string, tensor> values;
  for (const auto& [name, t] : g.initializers) values[name] = target.copy_in(t);
  for (const auto& [name, t] : inputs) values[name] = target.copy_in(t);
  for (const node& n : g.nodes) {
    std::vector<const tensor*> in;
    for (const auto& name : n.inputs) in.push_back(name.empty() ? nullptr : &values.at(name));
    std::vector<tensor> out(n.outputs.size());
    target.run(n, in, out);
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (!n.outputs[i].empty()) values[n.outputs[i]] = std::move(out[i]);
    }
  }
  std::map<std::string, tensor> outputs;
  for (const auto& v : g.outputs) outputs[v.name] = target.copy_out(values.at(v.name));
  target.synchronize();
  return outputs;
}

/// Specializes `g` as a session does (fold, drop dead nodes) and runs the
/// fusion passes for `target`; returns the rewrites per pass.
inline std::map<std::string, std::size_t> specialize_and_fuse(graph& g, const backend& target,
                                                              const symbol_bindings& bound = {}) {
  fold_constants(g, bound);
  remove_dead_nodes(g);
  const auto shapes = infer_shapes(g, bound);
  return fuse_for_backend(g, fusion_context{shapes, target});
}

inline std::size_t count_ops(const graph& g, const std::string& op) {
  std::size_t n = 0;
  for (const auto& x : g.nodes) n += x.op_type == op ? 1 : 0;
  return n;
}

// ---- small graphs, one per pattern; inputs "x" (and others) declared --------

inline tensor scalar(dtype type, float v) {
  tensor t(type, {});
  set(t, 0, v);
  return t;
}

/// MatMul x[batch..., K] by a weight [K, N], + bias[N], then `tail`:
/// "none", "relu", "gelu" (Gelu op, approximate none), "gelu_tanh_op",
/// "gelu_new" (HF's tanh decomposition), "gelu_erf_parts" (BERT's erf
/// decomposition), "residual" (+ r of the output's shape), "almost_gelu"
/// (gelu_new with 0.05 for 0.044715: no GELU).
inline graph gemm_graph(dtype type, const shape_t& x_shape, std::int64_t n, const std::string& tail,
                        bool gemm_op = false) {
  graph g;
  g.name = "gemm_" + tail;
  g.opset = 20;
  const std::int64_t k = x_shape.back();
  shape_t y_shape = x_shape;
  y_shape.back() = n;
  g.inputs = {declared("x", type, x_shape)};
  g.initializers["w"] = random_tensor(type, {k, n}, 11, 1.0F / std::sqrt(static_cast<float>(k)));
  g.initializers["bias"] = random_tensor(type, {n}, 12);
  if (gemm_op) {
    g.nodes.push_back(make_node("Gemm", {"x", "w", "bias"}, {"h"}));
  } else {
    g.nodes.push_back(make_node("MatMul", {"x", "w"}, {"p"}));
    g.nodes.push_back(make_node("Add", {"bias", "p"}, {"h"}));
  }
  const auto c = [&](const std::string& name, float v) { g.initializers[name] = scalar(type, v); };
  std::string out = "h";
  if (tail == "relu") {
    g.nodes.push_back(make_node("Relu", {"h"}, {"y"}));
    out = "y";
  } else if (tail == "gelu" || tail == "gelu_tanh_op") {
    g.nodes.push_back(make_node("Gelu", {"h"}, {"y"},
                                {{"approximate", std::string(tail == "gelu" ? "none" : "tanh")}}));
    out = "y";
  } else if (tail == "gelu_new" || tail == "almost_gelu") {
    c("half", 0.5F);
    c("three", 3.0F);
    c("cubic", tail == "gelu_new" ? 0.044715F : 0.05F);
    c("root", 0.7978845608F);
    c("one", 1.0F);
    g.nodes.push_back(make_node("Mul", {"h", "half"}, {"g0"}));
    g.nodes.push_back(make_node("Pow", {"h", "three"}, {"g1"}));
    g.nodes.push_back(make_node("Mul", {"g1", "cubic"}, {"g2"}));
    g.nodes.push_back(make_node("Add", {"h", "g2"}, {"g3"}));
    g.nodes.push_back(make_node("Mul", {"g3", "root"}, {"g4"}));
    g.nodes.push_back(make_node("Tanh", {"g4"}, {"g5"}));
    g.nodes.push_back(make_node("Add", {"g5", "one"}, {"g6"}));
    g.nodes.push_back(make_node("Mul", {"g0", "g6"}, {"y"}));
    out = "y";
  } else if (tail == "gelu_erf_parts") {
    c("sqrt2", 1.4142135381698608F);
    c("one", 1.0F);
    c("half", 0.5F);
    g.nodes.push_back(make_node("Div", {"h", "sqrt2"}, {"e0"}));
    g.nodes.push_back(make_node("Erf", {"e0"}, {"e1"}));
    g.nodes.push_back(make_node("Add", {"e1", "one"}, {"e2"}));
    g.nodes.push_back(make_node("Mul", {"h", "e2"}, {"e3"}));
    g.nodes.push_back(make_node("Mul", {"e3", "half"}, {"y"}));
    out = "y";
  } else if (tail == "residual") {
    g.inputs.push_back(declared("r", type, y_shape));
    g.nodes.push_back(make_node("Add", {"r", "h"}, {"y"}));
    out = "y";
  }
  g.outputs = {declared(out, type, y_shape)};
  return g;
}

/// Add(a, b) then LayerNormalization over the last axis (the opset-17 op,
/// or with `decomposed` the opset-14 export's nodes); with `sum_out` the sum
/// is a graph output too; `residual` false: LayerNorm of a alone.
inline graph layer_norm_graph(dtype type, const shape_t& shape, bool decomposed, bool residual,
                              bool sum_out) {
  graph g;
  g.name = "layer_norm";
  g.opset = decomposed ? 14 : 17;
  const std::int64_t n = shape.back();
  g.inputs = {declared("a", type, shape)};
  std::string x = "a";
  if (residual) {
    g.inputs.push_back(declared("b", type, shape));
    g.nodes.push_back(make_node("Add", {"a", "b"}, {"x"}));
    x = "x";
  }
  g.initializers["scale"] = random_tensor(type, {n}, 21);
  g.initializers["bias"] = random_tensor(type, {n}, 22);
  if (decomposed) {
    const std::vector<std::int64_t> last{-1};
    g.initializers["two"] = scalar(type, 2.0F);
    g.initializers["eps"] = scalar(type, 1e-5F);
    g.nodes.push_back(make_node("ReduceMean", {x}, {"m"}, {{"axes", last}}));
    g.nodes.push_back(make_node("Sub", {x, "m"}, {"d"}));
    g.nodes.push_back(make_node("Pow", {"d", "two"}, {"d2"}));
    g.nodes.push_back(make_node("ReduceMean", {"d2"}, {"v"}, {{"axes", last}}));
    g.nodes.push_back(make_node("Add", {"v", "eps"}, {"ve"}));
    g.nodes.push_back(make_node("Sqrt", {"ve"}, {"s"}));
    g.nodes.push_back(make_node("Div", {"d", "s"}, {"nrm"}));
    g.nodes.push_back(make_node("Mul", {"nrm", "scale"}, {"sc"}));
    g.nodes.push_back(make_node("Add", {"sc", "bias"}, {"y"}));
  } else {
    g.nodes.push_back(make_node("LayerNormalization", {x, "scale", "bias"}, {"y"},
                                {{"epsilon", 1e-5F}, {"axis", std::int64_t{-1}}}));
  }
  g.outputs = {declared("y", type, shape)};
  if (sum_out) g.outputs.push_back(declared(x, type, shape));
  return g;
}

/// An elementwise tree: y = Where(mask, tanh((x + c) * 0.5) - sqrt(|x|), -3)
/// cast to `type`, over x [shape] (type), and c (type) and a bool mask of
/// `side` (broadcast to shape; empty: [shape[-1]]).
inline graph elementwise_graph(dtype type, const shape_t& shape, const shape_t& side = {}) {
  graph g;
  g.name = "elementwise";
  g.opset = 17;
  const shape_t row = side.empty() ? shape_t{shape.back()} : side;
  g.inputs = {declared("x", type, shape), declared("c", type, row),
              declared("mask", dtype::boolean, row)};
  g.initializers["half"] = scalar(type, 0.5F);
  g.initializers["low"] = scalar(type, -3.0F);
  g.nodes.push_back(make_node("Add", {"x", "c"}, {"t0"}));
  g.nodes.push_back(make_node("Mul", {"t0", "half"}, {"t1"}));
  g.nodes.push_back(make_node("Tanh", {"t1"}, {"t2"}));
  g.nodes.push_back(make_node("Abs", {"x"}, {"t3"}));
  g.nodes.push_back(make_node("Sqrt", {"t3"}, {"t4"}));
  g.nodes.push_back(make_node("Sub", {"t2", "t4"}, {"t5"}));
  g.nodes.push_back(make_node("Where", {"mask", "t5", "low"}, {"t6"}));
  g.nodes.push_back(make_node("Cast", {"t6"}, {"y"}, {{"to", std::int64_t{1}}}));  // ONNX's FLOAT
  g.outputs = {declared("y", dtype::float32, shape)};
  return g;
}

// ---- the exported models ----------------------------------------------------

struct model_case {
  std::string folder;
  symbol_bindings bound;
};

inline std::vector<model_case> model_cases() {
  const symbol_bindings text = {{"batch", 2}, {"sequence", 16}};
  const symbol_bindings past = {{"batch", 2}, {"sequence", 4}, {"past_sequence", 8}};
  const symbol_bindings images = {{"batch", 2}};
  std::vector<model_case> cases;
  for (const char* m :
       {"bert_dynamo_op18", "bert_torchscript_op14", "bert_torchscript_op18",
        "distilbert_dynamo_op18", "distilbert_torchscript_op14", "distilbert_torchscript_op18",
        "gpt2_dynamo_op18_nopast", "gpt2_torchscript_op18_nopast"}) {
    cases.push_back({m, text});
  }
  cases.push_back({"gpt2_dynamo_op18_past", past});
  cases.push_back({"gpt2_torchscript_op18_past", past});
  for (const char* m : {"resnet_dynamo_op18", "resnet_torchscript_op14", "resnet_torchscript_op18",
                        "vit_dynamo_op18", "vit_torchscript_op18"}) {
    cases.push_back({m, images});
  }
  return cases;
}

inline std::filesystem::path model_path(const model_case& c) {
  return std::filesystem::path(COOLBENCH_MODELS_DIR) / ("test_" + c.folder) / "model.onnx";
}

/// Seeded inputs of the model's declared shapes: token ids in [0, 16), an
/// attention mask with the second row's last five masked, zero token types.
inline std::map<std::string, tensor> model_inputs(const graph& g, const symbol_bindings& bound) {
  std::map<std::string, tensor> inputs;
  unsigned seed = 100;
  for (const auto& v : g.inputs) {
    shape_t shape;
    for (const auto& d : v.shape) shape.push_back(d.value >= 0 ? d.value : bound.at(d.symbol));
    tensor t = random_tensor(v.type, shape, seed++, 1.0F, 16);
    if (v.name == "attention_mask" || v.name == "token_type_ids") {
      for (std::int64_t i = 0; i < t.size(); ++i) {
        const std::int64_t col = i % shape.back();
        const bool masked = i >= shape.back() && col >= shape.back() - 5;
        set(t, static_cast<std::size_t>(i), v.name == "attention_mask" && !masked ? 1.0F : 0.0F);
      }
    }
    inputs[v.name] = std::move(t);
  }
  return inputs;
}

}  // namespace coolbench::engine::fusion_cases
