// The built-in GPT-2: the ONNX graph run on the CPU backend against a plain
// C++ GPT-2 forward pass written here from the same weights (read back from
// the graph's initializers by name), causality, determinism, and the
// config's validation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numbers>
#include <string>
#include <vector>

#include "coolbench/engine/model.hpp"
#include "coolbench/engine/session.hpp"

namespace coolbench::engine {
namespace {

// Small enough to build and run in milliseconds, large enough for several
// heads and positions. A wider init than HF's 0.02 makes attention far from
// uniform, so a wrong mask or head split shows in the logits.
gpt2_config tiny_config(dtype type = dtype::float32) {
  gpt2_config c;
  c.layers = 2;
  c.hidden = 32;
  c.heads = 4;
  c.vocab = 97;
  c.positions = 16;
  c.sequence = 8;
  c.element_type = type;
  c.init_std = 0.2F;
  return c;
}

std::vector<float> floats_of(const tensor& t) {
  std::vector<float> values(static_cast<std::size_t>(t.size()));
  if (t.type() == dtype::float32) {
    std::copy(t.data<float>().begin(), t.data<float>().end(), values.begin());
  } else {
    for (std::size_t i = 0; i < values.size(); ++i) {
      std::uint16_t bits = 0;
      std::memcpy(&bits, t.raw().data() + i * 2, 2);
      values[i] = half_to_float(bits);
    }
  }
  return values;
}

tensor token_ids(std::int64_t batch, std::int64_t sequence, std::int64_t vocab,
                 std::int64_t salt = 0) {
  tensor ids(dtype::int64, {batch, sequence});
  auto values = ids.data<std::int64_t>();
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = (static_cast<std::int64_t>(i) * 37 + 11 + salt) % vocab;
  }
  return ids;
}

// ---- The reference: GPT-2's forward pass, one sequence at a time, in double ------------------

using matrix = std::vector<double>;  // row-major [rows, columns]

class reference_gpt2 {
 public:
  reference_gpt2(const graph& g, const gpt2_config& c) : m_graph(g), m_config(c) {}

  // Logits [sequence, vocab] of one sequence of token ids.
  matrix logits(const std::vector<std::int64_t>& ids) const {
    const auto s = static_cast<std::int64_t>(ids.size());
    const std::int64_t h = m_config.hidden;
    const std::vector<float> wte = weight("transformer.wte.weight");
    const std::vector<float> wpe = weight("transformer.wpe.weight");
    matrix x(static_cast<std::size_t>(s * h));
    for (std::int64_t t = 0; t < s; ++t) {
      for (std::int64_t j = 0; j < h; ++j) x[t * h + j] = wte[ids[t] * h + j] + wpe[t * h + j];
    }
    for (std::int64_t layer = 0; layer < m_config.layers; ++layer) {
      const std::string block = "transformer.h." + std::to_string(layer);
      const matrix attended = attention(block + ".attn", layer_norm(block + ".ln_1", x), s);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] += attended[i];
      matrix fc = linear(block + ".mlp.c_fc", layer_norm(block + ".ln_2", x), s, h, 4 * h);
      for (double& v : fc) {
        v = 0.5 * v *
            (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
      }
      const matrix fed = linear(block + ".mlp.c_proj", fc, s, 4 * h, h);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] += fed[i];
    }
    const matrix final_x = layer_norm("transformer.ln_f", x);
    matrix out(static_cast<std::size_t>(s * m_config.vocab));
    for (std::int64_t t = 0; t < s; ++t) {
      for (std::int64_t v = 0; v < m_config.vocab; ++v) {
        double sum = 0.0;
        for (std::int64_t j = 0; j < h; ++j) sum += final_x[t * h + j] * wte[v * h + j];
        out[t * m_config.vocab + v] = sum;
      }
    }
    return out;
  }

 private:
  std::vector<float> weight(const std::string& name) const {
    const auto it = m_graph.initializers.find(name);
    if (it == m_graph.initializers.end()) {
      ADD_FAILURE() << "the model has no initializer " << name;
      return {};
    }
    return floats_of(it->second);
  }

  matrix layer_norm(const std::string& prefix, const matrix& x) const {
    const std::int64_t h = m_config.hidden;
    const std::vector<float> scale = weight(prefix + ".weight");
    const std::vector<float> bias = weight(prefix + ".bias");
    matrix out(x.size());
    for (std::size_t row = 0; row < x.size() / h; ++row) {
      double mean = 0.0;
      for (std::int64_t j = 0; j < h; ++j) mean += x[row * h + j];
      mean /= static_cast<double>(h);
      double variance = 0.0;
      for (std::int64_t j = 0; j < h; ++j) variance += std::pow(x[row * h + j] - mean, 2);
      variance /= static_cast<double>(h);
      for (std::int64_t j = 0; j < h; ++j) {
        out[row * h + j] =
            (x[row * h + j] - mean) / std::sqrt(variance + 1e-5) * scale[j] + bias[j];
      }
    }
    return out;
  }

  // HF's Conv1D: x [rows, in] @ W [in, out] + b.
  matrix linear(const std::string& prefix, const matrix& x, std::int64_t rows, std::int64_t in,
                std::int64_t out) const {
    const std::vector<float> w = weight(prefix + ".weight");
    const std::vector<float> b = weight(prefix + ".bias");
    matrix y(static_cast<std::size_t>(rows * out));
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t o = 0; o < out; ++o) {
        double sum = b[o];
        for (std::int64_t i = 0; i < in; ++i) sum += x[r * in + i] * w[i * out + o];
        y[r * out + o] = sum;
      }
    }
    return y;
  }

  matrix attention(const std::string& prefix, const matrix& x, std::int64_t s) const {
    const std::int64_t h = m_config.hidden;
    const std::int64_t head_dim = h / m_config.heads;
    const matrix qkv = linear(prefix + ".c_attn", x, s, h, 3 * h);  // [q | k | v] per row
    matrix context(static_cast<std::size_t>(s * h));
    for (std::int64_t head = 0; head < m_config.heads; ++head) {
      const std::int64_t q_at = head * head_dim;
      const std::int64_t k_at = h + head * head_dim;
      const std::int64_t v_at = 2 * h + head * head_dim;
      for (std::int64_t i = 0; i < s; ++i) {
        // Query i sees keys 0 … i only.
        std::vector<double> scores(static_cast<std::size_t>(i + 1));
        for (std::int64_t t = 0; t <= i; ++t) {
          double dot = 0.0;
          for (std::int64_t d = 0; d < head_dim; ++d) {
            dot += qkv[i * 3 * h + q_at + d] * qkv[t * 3 * h + k_at + d];
          }
          scores[t] = dot / std::sqrt(static_cast<double>(head_dim));
        }
        const double max = *std::max_element(scores.begin(), scores.end());
        double total = 0.0;
        for (double& v : scores) total += (v = std::exp(v - max));
        for (std::int64_t d = 0; d < head_dim; ++d) {
          double sum = 0.0;
          for (std::int64_t t = 0; t <= i; ++t)
            sum += scores[t] / total * qkv[t * 3 * h + v_at + d];
          context[i * h + head * head_dim + d] = sum;
        }
      }
    }
    return linear(prefix + ".c_proj", context, s, h, h);
  }

  const graph& m_graph;
  gpt2_config m_config;
};

// Runs the model on `ids` and returns the largest absolute difference of its
// logits from the reference's.
double largest_difference(const gpt2_config& c, const tensor& ids) {
  const graph g = parse_onnx(make_gpt2_model(c), ".", "gpt2.onnx");
  session s{graph(g)};
  s.set_input("input_ids", ids);
  s.run();
  const tensor& logits = s.output("logits");
  const std::int64_t batch = ids.shape()[0];
  const std::int64_t sequence = ids.shape()[1];
  EXPECT_EQ(logits.shape(), (shape_t{batch, sequence, c.vocab}));
  EXPECT_EQ(logits.type(), c.element_type);
  const std::vector<float> got = floats_of(logits);
  const reference_gpt2 reference(g, c);
  double largest = 0.0;
  for (std::int64_t b = 0; b < batch; ++b) {
    const auto row = ids.data<std::int64_t>().subspan(static_cast<std::size_t>(b * sequence),
                                                      static_cast<std::size_t>(sequence));
    const matrix expected = reference.logits({row.begin(), row.end()});
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const double difference = std::abs(got[b * sequence * c.vocab + i] - expected[i]);
      largest = std::max(largest, std::isnan(difference) ? INFINITY : difference);
    }
  }
  return largest;
}

TEST(gpt2_model, float32_logits_match_a_plain_forward_pass) {
  const gpt2_config c = tiny_config();
  EXPECT_LT(largest_difference(c, token_ids(2, 8, c.vocab)), 1e-4);
  // The dimensions are symbolic: other batches and sequences up to
  // `positions` run from the same model.
  EXPECT_LT(largest_difference(c, token_ids(1, 5, c.vocab)), 1e-4);
  EXPECT_LT(largest_difference(c, token_ids(3, 16, c.vocab)), 1e-4);
}

TEST(gpt2_model, float32_with_hf_init_matches_too) {
  gpt2_config c = tiny_config();
  c.init_std = 0.02F;
  c.layers = 3;
  EXPECT_LT(largest_difference(c, token_ids(2, 8, c.vocab)), 1e-5);
}

TEST(gpt2_model, float16_logits_match_within_half_precision) {
  const gpt2_config c = tiny_config(dtype::float16);
  // Every activation is rounded to 11 significant bits (relative 5e-4) on
  // logits of magnitude ~3.
  EXPECT_LT(largest_difference(c, token_ids(2, 8, c.vocab)), 3e-2);
}

TEST(gpt2_model, a_token_changes_no_logits_before_it) {
  const gpt2_config c = tiny_config();
  session s(parse_onnx(make_gpt2_model(c), ".", "gpt2.onnx"));
  const auto logits_of = [&](const tensor& ids) {
    s.release();
    s.set_input("input_ids", ids);
    s.run();
    return floats_of(s.output("logits"));
  };
  const tensor ids = token_ids(1, 8, c.vocab);
  const std::vector<float> before = logits_of(ids);
  for (const std::int64_t changed : {0, 3, 7}) {
    tensor other = ids;
    other.data<std::int64_t>()[static_cast<std::size_t>(changed)] += 1;
    const std::vector<float> after = logits_of(other);
    for (std::int64_t t = 0; t < 8; ++t) {
      const auto first = before.begin() + t * c.vocab;
      const bool same = std::equal(first, first + c.vocab, after.begin() + t * c.vocab);
      // Exactly equal before the change (nothing there reads it), different from it on.
      EXPECT_EQ(same, t < changed) << "token " << changed << " changed, position " << t;
    }
  }
}

TEST(gpt2_model, the_same_seed_gives_the_same_bytes) {
  gpt2_config c = tiny_config();
  EXPECT_EQ(make_gpt2_model(c), make_gpt2_model(c));
  const std::vector<std::byte> first = make_gpt2_model(c);
  c.seed = 2;
  EXPECT_NE(make_gpt2_model(c), first);
}

TEST(gpt2_model, declares_symbolic_or_fixed_shapes_and_stores_one_embedding) {
  gpt2_config c = tiny_config();
  graph g = parse_onnx(make_gpt2_model(c), ".", "gpt2.onnx");
  EXPECT_EQ(g.opset, 17);
  ASSERT_EQ(g.inputs.size(), 1U);
  EXPECT_EQ(g.inputs[0].name, "input_ids");
  EXPECT_EQ(g.inputs[0].type, dtype::int64);
  ASSERT_EQ(g.inputs[0].shape.size(), 2U);
  EXPECT_EQ(g.inputs[0].shape[0].symbol, "batch");
  EXPECT_EQ(g.inputs[0].shape[1].symbol, "sequence");
  ASSERT_EQ(g.outputs.size(), 1U);
  EXPECT_EQ(g.outputs[0].name, "logits");
  ASSERT_EQ(g.outputs[0].shape.size(), 3U);
  EXPECT_EQ(g.outputs[0].shape[2].value, c.vocab);

  // Parameters are the weights' elements; the LM head reuses wte.
  std::int64_t weights = 0;
  int vocab_sized = 0;
  for (const auto& [name, t] : g.initializers) {
    if (name.starts_with("transformer.")) weights += t.size();
    if (t.shape() == shape_t{c.vocab, c.hidden}) ++vocab_sized;
  }
  EXPECT_EQ(weights, parameter_count(c));
  EXPECT_EQ(vocab_sized, 1);

  c.fixed_shape = true;
  c.batch = 3;
  g = parse_onnx(make_gpt2_model(c), ".", "gpt2.onnx");
  EXPECT_EQ(g.inputs[0].shape[0].value, 3);
  EXPECT_EQ(g.inputs[0].shape[1].value, 8);
  EXPECT_EQ(g.outputs[0].shape[1].value, 8);
}

TEST(gpt2_model, the_default_is_gpt2_small) {
  // HF's gpt2 checkpoint: 124,439,808 parameters.
  EXPECT_EQ(parameter_count(gpt2_config{}), 124439808);
  EXPECT_NO_THROW(validate(gpt2_config{}));
}

TEST(gpt2_model, bad_configs_say_what_is_wrong) {
  const auto message = [](auto change) {
    gpt2_config c = tiny_config();
    change(c);
    try {
      validate(c);
    } catch (const invalid_argument& e) {
      // make_gpt2_model validates the same way.
      EXPECT_THROW((void)make_gpt2_model(c), invalid_argument);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const auto contains = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  EXPECT_PRED2(contains, message([](gpt2_config& c) { c.heads = 5; }),
               "hidden (32) must be a multiple of heads (5)");
  EXPECT_PRED2(contains, message([](gpt2_config& c) { c.sequence = 17; }),
               "sequence (17) must not exceed positions (16)");
  EXPECT_PRED2(contains, message([](gpt2_config& c) { c.layers = 0; }), "layers must be in");
  EXPECT_PRED2(contains, message([](gpt2_config& c) { c.hidden = -4; }), "hidden must be in");
  EXPECT_PRED2(contains, message([](gpt2_config& c) { c.vocab = 1; }), "vocab must be in [2, ");
  EXPECT_PRED2(contains, message([](gpt2_config& c) { c.sequence = 0; }), "sequence must be in");
  EXPECT_PRED2(contains, message([](gpt2_config& c) { c.batch = 0; }), "batch must be in");
  EXPECT_PRED2(contains, message([](gpt2_config& c) { c.positions = 0; }), "positions must be in");
  EXPECT_PRED2(contains, message([](gpt2_config& c) { c.element_type = dtype::int64; }),
               "float32 or float16, got int64");
  EXPECT_PRED2(contains, message([](gpt2_config& c) { c.init_std = 0.0F; }), "init_std");
  // GPT-2 large (774M parameters) as float32 is 3.1 GB: over protobuf's limit.
  EXPECT_PRED2(contains, message([](gpt2_config& c) {
                 c = gpt2_config{};
                 c.layers = 36;
                 c.hidden = 1280;
                 c.heads = 20;
               }),
               "over protobuf's 2 GB limit");
}

TEST(gpt2_model, a_sequence_past_the_positions_fails_when_run) {
  const gpt2_config c = tiny_config();
  session s(parse_onnx(make_gpt2_model(c), ".", "gpt2.onnx"));
  s.set_input("input_ids", token_ids(1, 17, c.vocab));
  EXPECT_THROW(s.run(), invalid_argument);
}

}  // namespace
}  // namespace coolbench::engine
