// GPT-2 as ONNX, built node by node with ONNX's protobuf classes, so a fresh
// machine has a realistic transformer to run with nothing downloaded. The
// graph follows Hugging Face's GPT2LMHeadModel: token plus learned position
// embeddings, pre-LayerNorm blocks (fused QKV in "Conv1D" [in, out] layout,
// causal attention, gelu_new MLP), a final LayerNorm and an LM head tied to
// the token embedding. Only operators the CPU backend runs are used.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numbers>
#include <string>
#include <variant>
#include <vector>

#include "coolbench/engine/model.hpp"

namespace coolbench::engine {
namespace {

static_assert(std::endian::native == std::endian::little,
              "ONNX raw_data is little-endian; this builder copies host bytes");

constexpr std::int64_t k_opset = 17;  // LayerNormalization needs 17
constexpr float k_layer_norm_epsilon = 1e-5F;
// One ONNX file is one protobuf message, which protobuf caps at 2 GiB.
constexpr std::int64_t k_protobuf_limit_bytes = std::numeric_limits<std::int32_t>::max();
// Room for the graph's nodes and small constants beside the weights.
constexpr std::int64_t k_graph_overhead_bytes = 1 << 20;

// Reproducible normal numbers: splitmix64 feeding Box–Muller. Unlike
// std::normal_distribution, the sequence is the same with every standard
// library.
class normal_stream {
 public:
  explicit normal_stream(std::uint64_t seed) : m_state(seed) {}

  float next() {
    if (m_has_spare) {
      m_has_spare = false;
      return m_spare;
    }
    const double u1 = 1.0 - uniform();  // (0, 1]: log(u1) is finite
    const double u2 = uniform();
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * std::numbers::pi * u2;
    m_spare = static_cast<float>(radius * std::sin(angle));
    m_has_spare = true;
    return static_cast<float>(radius * std::cos(angle));
  }

 private:
  std::uint64_t bits() {
    std::uint64_t z = (m_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31U);
  }
  double uniform() { return static_cast<double>(bits() >> 11U) * 0x1p-53; }  // [0, 1)

  std::uint64_t m_state;
  float m_spare = 0.0F;
  bool m_has_spare = false;
};

// Each weight draws from its own stream, seeded by the model seed and its
// name, so weights do not depend on the order they are built in (and a
// 2-layer model shares its first layer with a 12-layer one).
std::uint64_t stream_seed(std::uint64_t seed, const std::string& name) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a
  for (const char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return seed ^ hash;
}

int onnx_type(dtype type) {
  return type == dtype::float16 ? onnx::TensorProto_DataType_FLOAT16
                                : onnx::TensorProto_DataType_FLOAT;
}

void fail(const std::string& what) { throw invalid_argument("gpt2: " + what); }

void require_range(const char* name, std::int64_t value, std::int64_t low, std::int64_t high) {
  if (value < low || value > high) {
    fail(std::string(name) + " must be in [" + std::to_string(low) + ", " + std::to_string(high) +
         "], got " + std::to_string(value));
  }
}

// Builds the ModelProto: one helper per kind of graph element, so the
// forward pass below reads like the model.
class gpt2_builder {
 public:
  explicit gpt2_builder(const gpt2_config& config)
      : m_config(config), m_graph(m_model.mutable_graph()) {}

  onnx::ModelProto build() {
    declare_model();
    forward();
    return std::move(m_model);
  }

 private:
  // ---- graph elements ------------------------------------------------------------------

  struct attribute_value {
    std::string name;
    std::variant<std::int64_t, float, std::vector<std::int64_t>> value;
  };

  // Adds a node; its outputs are named after the node. Returns the first.
  std::string op(const std::string& op_type, const std::string& name,
                 const std::vector<std::string>& inputs,
                 const std::vector<attribute_value>& attributes = {}, int outputs = 1) {
    auto* n = m_graph->add_node();
    n->set_op_type(op_type);
    n->set_name(name);
    for (const auto& input : inputs) n->add_input(input);
    for (int i = 0; i < outputs; ++i) {
      n->add_output(outputs == 1 ? name : name + "_" + std::to_string(i));
    }
    for (const auto& [key, value] : attributes) {
      auto* a = n->add_attribute();
      a->set_name(key);
      if (const auto* integer = std::get_if<std::int64_t>(&value)) {
        a->set_type(onnx::AttributeProto_AttributeType_INT);
        a->set_i(*integer);
      } else if (const auto* real = std::get_if<float>(&value)) {
        a->set_type(onnx::AttributeProto_AttributeType_FLOAT);
        a->set_f(*real);
      } else {
        a->set_type(onnx::AttributeProto_AttributeType_INTS);
        for (const std::int64_t v : std::get<std::vector<std::int64_t>>(value)) a->add_ints(v);
      }
    }
    return n->output(0);
  }

  onnx::TensorProto* initializer(const std::string& name, int type, const shape_t& shape) {
    auto* t = m_graph->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (const std::int64_t d : shape) t->add_dims(d);
    return t;
  }

  std::string int64s(const std::string& name, const std::vector<std::int64_t>& values,
                     bool scalar = false) {
    auto* t = initializer(name, onnx::TensorProto_DataType_INT64,
                          scalar ? shape_t{} : shape_t{static_cast<std::int64_t>(values.size())});
    t->mutable_raw_data()->assign(reinterpret_cast<const char*>(values.data()),  // NOLINT
                                  values.size() * sizeof(std::int64_t));
    return name;
  }

  // A scalar in the model's float type.
  std::string scalar(const std::string& name, float value) {
    auto* t = initializer(name, onnx_type(m_config.element_type), {});
    put_floats(*t, std::vector<float>{value});
    return name;
  }

  void put_floats(onnx::TensorProto& t, const std::vector<float>& values) {
    std::string& raw = *t.mutable_raw_data();
    const std::size_t offset = raw.size();
    if (m_config.element_type == dtype::float16) {
      raw.resize(offset + values.size() * 2);
      for (std::size_t i = 0; i < values.size(); ++i) {
        const std::uint16_t bits = float_to_half(values[i]);
        std::memcpy(raw.data() + offset + i * 2, &bits, 2);
      }
    } else {
      raw.resize(offset + values.size() * 4);
      std::memcpy(raw.data() + offset, values.data(), values.size() * 4);
    }
  }

  // A weight drawn as mean + normal(0, std), written in chunks so only the
  // protobuf's copy is ever whole in memory.
  std::string weight(const std::string& name, const shape_t& shape, float mean, float std_dev) {
    auto* t = initializer(name, onnx_type(m_config.element_type), shape);
    const std::int64_t count = element_count(shape);
    t->mutable_raw_data()->reserve(static_cast<std::size_t>(count) *
                                   size_of(m_config.element_type));
    normal_stream normal(stream_seed(m_config.seed, name));
    constexpr std::int64_t chunk = 1 << 16;
    std::vector<float> values;
    for (std::int64_t done = 0; done < count; done += chunk) {
      values.resize(static_cast<std::size_t>(std::min(chunk, count - done)));
      for (float& v : values) v = mean + std_dev * normal.next();
      put_floats(*t, values);
    }
    return name;
  }

  // ---- the model -----------------------------------------------------------------------

  void declare_model() {
    m_model.set_ir_version(8);
    m_model.set_producer_name("coolbench");
    m_model.set_doc_string("GPT-2 (as Hugging Face's GPT2LMHeadModel) with seeded random weights");
    auto* opset = m_model.add_opset_import();
    opset->set_domain("");
    opset->set_version(k_opset);
    const auto metadata = [&](const char* key, std::int64_t value) {
      auto* entry = m_model.add_metadata_props();
      entry->set_key(key);
      entry->set_value(std::to_string(value));
    };
    metadata("coolbench.batch", m_config.batch);
    metadata("coolbench.sequence", m_config.sequence);
    metadata("coolbench.seed", static_cast<std::int64_t>(m_config.seed));
    m_graph->set_name("gpt2");

    const auto dim = [&](onnx::TensorShapeProto* shape, const char* symbol, std::int64_t value) {
      auto* d = shape->add_dim();
      if (m_config.fixed_shape) {
        d->set_dim_value(value);
      } else {
        d->set_dim_param(symbol);
      }
    };
    auto* ids = m_graph->add_input();
    ids->set_name("input_ids");
    auto* ids_type = ids->mutable_type()->mutable_tensor_type();
    ids_type->set_elem_type(onnx::TensorProto_DataType_INT64);
    dim(ids_type->mutable_shape(), "batch", m_config.batch);
    dim(ids_type->mutable_shape(), "sequence", m_config.sequence);

    auto* logits = m_graph->add_output();
    logits->set_name("logits");
    auto* logits_type = logits->mutable_type()->mutable_tensor_type();
    logits_type->set_elem_type(onnx_type(m_config.element_type));
    dim(logits_type->mutable_shape(), "batch", m_config.batch);
    dim(logits_type->mutable_shape(), "sequence", m_config.sequence);
    logits_type->mutable_shape()->add_dim()->set_dim_value(m_config.vocab);
  }

  std::string layer_norm(const std::string& prefix, const std::string& x) {
    const std::int64_t h = m_config.hidden;
    const float s = m_config.init_std;
    const auto scale = weight(prefix + ".weight", {h}, 1.0F, s);
    const auto bias = weight(prefix + ".bias", {h}, 0.0F, s);
    return op("LayerNormalization", prefix, {x, scale, bias},
              {{"axis", std::int64_t{-1}}, {"epsilon", k_layer_norm_epsilon}});
  }

  // HF's Conv1D: x @ W + b with W stored [in, out].
  std::string conv1d(const std::string& prefix, const std::string& x, std::int64_t in,
                     std::int64_t out, float std_dev) {
    const auto w = weight(prefix + ".weight", {in, out}, 0.0F, std_dev);
    const auto b = weight(prefix + ".bias", {out}, 0.0F, m_config.init_std);
    return op("Add", prefix, {op("MatMul", prefix + ".matmul", {x, w}), b});
  }

  std::string attention(const std::string& prefix, const std::string& x) {
    const std::int64_t h = m_config.hidden;
    const float s = m_config.init_std;
    const auto qkv = conv1d(prefix + ".c_attn", x, h, 3 * h, s);
    // Three equal parts of the last axis: query, key, value.
    op("Split", prefix + ".split", {qkv}, {{"axis", -1}}, 3);
    const auto heads = [&](int part, const std::vector<std::int64_t>& perm) {
      const std::string name = prefix + ".split_" + std::to_string(part);
      const auto shaped = op("Reshape", name + ".heads", {name, "heads_shape"});
      return op("Transpose", name + ".transpose", {shaped}, {{"perm", perm}});
    };
    const auto query = heads(0, {0, 2, 1, 3});  // [batch, heads, sequence, head]
    const auto key = heads(1, {0, 2, 3, 1});    // [batch, heads, head, sequence]
    const auto value = heads(2, {0, 2, 1, 3});  // [batch, heads, sequence, head]
    const auto scores = op("Div", prefix + ".scaled_scores",
                           {op("MatMul", prefix + ".scores", {query, key}), "head_dim_sqrt"});
    const auto masked =
        op("Where", prefix + ".masked_scores", {"future_positions", "mask_value", scores});
    const auto probs = op("Softmax", prefix + ".probs", {masked}, {{"axis", -1}});
    const auto context = op("MatMul", prefix + ".context", {probs, value});
    const auto merged = op("Reshape", prefix + ".merged",
                           {op("Transpose", prefix + ".context_transpose", {context},
                               {{"perm", std::vector<std::int64_t>{0, 2, 1, 3}}}),
                            "hidden_shape"});
    return conv1d(prefix + ".c_proj", merged, h, h, m_residual_std);
  }

  // gelu_new: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
  std::string gelu_new(const std::string& prefix, const std::string& x) {
    const auto cube = op("Mul", prefix + ".cube", {op("Mul", prefix + ".square", {x, x}), x});
    const auto inner =
        op("Add", prefix + ".inner", {x, op("Mul", prefix + ".cubic", {cube, "gelu_cubic"})});
    const auto tanh =
        op("Tanh", prefix + ".tanh", {op("Mul", prefix + ".scaled", {inner, "gelu_scale"})});
    return op(
        "Mul", prefix,
        {op("Mul", prefix + ".half", {x, "half"}), op("Add", prefix + ".one_plus", {tanh, "one"})});
  }

  std::string mlp(const std::string& prefix, const std::string& x) {
    const std::int64_t h = m_config.hidden;
    const auto fc = conv1d(prefix + ".c_fc", x, h, 4 * h, m_config.init_std);
    return conv1d(prefix + ".c_proj", gelu_new(prefix + ".gelu", fc), 4 * h, h, m_residual_std);
  }

  void constants() {
    const std::int64_t head_dim = m_config.hidden / m_config.heads;
    int64s("heads_shape", {0, 0, m_config.heads, head_dim});  // 0: keep batch and sequence
    int64s("hidden_shape", {0, 0, m_config.hidden});
    int64s("rows_shape", {-1, m_config.hidden});
    int64s("vocab_dim", {m_config.vocab});
    int64s("zero_axis", {0});
    int64s("one_axis", {1});
    int64s("position_start", {0}, true);
    int64s("position_step", {1}, true);
    scalar("head_dim_sqrt", std::sqrt(static_cast<float>(head_dim)));
    // Like HF's finfo(dtype).min: exp(min - max) is 0 without producing inf.
    scalar("mask_value", m_config.element_type == dtype::float16
                             ? -65504.0F
                             : std::numeric_limits<float>::lowest());
    scalar("gelu_cubic", 0.044715F);
    scalar("gelu_scale", static_cast<float>(std::sqrt(2.0 / std::numbers::pi)));
    scalar("half", 0.5F);
    scalar("one", 1.0F);
  }

  void forward() {
    const gpt2_config& c = m_config;
    m_residual_std = c.init_std / std::sqrt(2.0F * static_cast<float>(c.layers));
    constants();
    const auto wte = weight("transformer.wte.weight", {c.vocab, c.hidden}, 0.0F, c.init_std);
    const auto wpe = weight("transformer.wpe.weight", {c.positions, c.hidden}, 0.0F, c.init_std);

    // Positions 0 … sequence-1, and the causal mask from them: a query may
    // not see a key at a later position.
    const auto sequence_length =
        op("Squeeze", "sequence_length",
           {op("Shape", "sequence_dim", {"input_ids"}, {{"start", 1}, {"end", 2}}), "zero_axis"});
    const auto positions =
        op("Range", "position_ids", {"position_start", sequence_length, "position_step"});
    op("Greater", "future_positions",
       {op("Unsqueeze", "key_positions", {positions, "zero_axis"}),
        op("Unsqueeze", "query_positions", {positions, "one_axis"})});

    std::string hidden = op("Add", "transformer.embeddings",
                            {op("Gather", "transformer.wte", {wte, "input_ids"}),
                             op("Gather", "transformer.wpe", {wpe, positions})});
    for (std::int64_t i = 0; i < c.layers; ++i) {
      const std::string block = "transformer.h." + std::to_string(i);
      const auto attended = attention(block + ".attn", layer_norm(block + ".ln_1", hidden));
      hidden = op("Add", block + ".attn_residual", {hidden, attended});
      const auto fed = mlp(block + ".mlp", layer_norm(block + ".ln_2", hidden));
      hidden = op("Add", block + ".mlp_residual", {hidden, fed});
    }
    hidden = layer_norm("transformer.ln_f", hidden);

    // The LM head is x @ wte^T: a Gemm with transB reads the one stored
    // embedding, on rows flattened from [batch, sequence].
    const auto rows = op("Reshape", "lm_head.rows", {hidden, "rows_shape"});
    const auto flat_logits = op("Gemm", "lm_head", {rows, wte}, {{"transB", 1}});
    const auto logits_shape =
        op("Concat", "logits_shape", {op("Shape", "input_shape", {"input_ids"}), "vocab_dim"},
           {{"axis", 0}});
    op("Reshape", "logits", {flat_logits, logits_shape});
  }

  const gpt2_config& m_config;
  onnx::ModelProto m_model;
  onnx::GraphProto* m_graph;
  float m_residual_std = 0.0F;
};

onnx::ModelProto build_gpt2(const gpt2_config& config) {
  validate(config);
  return gpt2_builder(config).build();
}

}  // namespace

void validate(const gpt2_config& config) {
  // Upper bounds keep every size computation far from overflow.
  require_range("layers", config.layers, 1, 1000);
  require_range("hidden", config.hidden, 1, 1 << 16);
  require_range("heads", config.heads, 1, config.hidden);
  require_range("vocab", config.vocab, 2, 1 << 24);
  require_range("positions", config.positions, 1, 1 << 20);
  require_range("batch", config.batch, 1, 1 << 20);
  require_range("sequence", config.sequence, 1, 1 << 20);
  if (config.sequence > config.positions) {
    fail("sequence (" + std::to_string(config.sequence) + ") must not exceed positions (" +
         std::to_string(config.positions) + "), the number of learned position embeddings");
  }
  if (config.hidden % config.heads != 0) {
    fail("hidden (" + std::to_string(config.hidden) + ") must be a multiple of heads (" +
         std::to_string(config.heads) + "): each head gets hidden / heads dimensions");
  }
  if (config.element_type != dtype::float32 && config.element_type != dtype::float16) {
    fail("the element type must be float32 or float16, got " +
         std::string(to_string(config.element_type)));
  }
  if (!(config.init_std > 0.0F) || !std::isfinite(config.init_std)) {
    fail("init_std must be a positive number, got " + std::to_string(config.init_std));
  }
  const std::int64_t bytes =
      parameter_count(config) * static_cast<std::int64_t>(size_of(config.element_type)) +
      k_graph_overhead_bytes;
  if (bytes > k_protobuf_limit_bytes) {
    fail("the model would be " + std::to_string(bytes / 1000000) +
         " MB, over protobuf's 2 GB limit for one ONNX file; use float16, fewer layers or a "
         "smaller hidden size");
  }
}

std::int64_t parameter_count(const gpt2_config& config) {
  const std::int64_t h = config.hidden;
  const std::int64_t layer_norm = 2 * h;
  const std::int64_t block = layer_norm + (h * 3 * h + 3 * h) + (h * h + h) + layer_norm +
                             (h * 4 * h + 4 * h) + (4 * h * h + h);
  return config.vocab * h + config.positions * h + config.layers * block + layer_norm;
}

std::vector<std::byte> make_gpt2_model(const gpt2_config& config) {
  const std::string text = build_gpt2(config).SerializeAsString();
  std::vector<std::byte> bytes(text.size());
  std::memcpy(bytes.data(), text.data(), text.size());
  return bytes;
}

void write_gpt2_model(const gpt2_config& config, const std::filesystem::path& path) {
  const onnx::ModelProto model = build_gpt2(config);
  const auto temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw invalid_argument("cannot write " + temporary + ": " + std::strerror(errno));
    if (!model.SerializeToOstream(&out) || !out.flush()) {
      out.close();
      std::filesystem::remove(temporary);
      throw invalid_argument("cannot write " + temporary + " (disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) throw invalid_argument("cannot write " + path.string() + ": " + ec.message());
}

}  // namespace coolbench::engine
