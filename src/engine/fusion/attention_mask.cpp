// Constant masks of the attention fusion: recognising a folded mask that
// hides nothing (dropped) or exactly the future keys (a causal flag, which
// lets the kernel skip whole tiles instead of reading a mask).
#include <cmath>
#include <cstring>
#include <exception>
#include <map>
#include <set>
#include <vector>

#include "engine/fusion/attention.hpp"
#include "engine/shape_inference.hpp"

namespace coolbench::engine {
namespace {

double float_at(const tensor& t, std::size_t i) {
  switch (t.type()) {
    case dtype::float32: return t.data<float>()[i];
    case dtype::float16:
    case dtype::bfloat16: {
      std::uint16_t bits = 0;
      std::memcpy(&bits, t.raw().data() + i * 2, 2);
      return t.type() == dtype::float16 ? half_to_float(bits) : bfloat16_to_float(bits);
    }
    default: return std::nan("");
  }
}

// Calls hidden(i) for each element and classifies by its (query, key)
// position; `hidden` says whether the element hides its key.
template <class Hidden>
mask_shape classify(const tensor& t, std::int64_t sq, std::int64_t sk, Hidden hidden) {
  if (t.on_device() || t.size() == 0) return mask_shape::other;
  const shape_t& s = t.shape();
  const std::size_t r = s.size();
  bool any_hidden = false;
  for (std::int64_t i = 0; i < t.size(); ++i) any_hidden = any_hidden || hidden(i);
  if (!any_hidden) return mask_shape::none;
  const std::int64_t offset = sk - sq;
  if (r < 2 || s[r - 2] != sq || s[r - 1] != sk || offset < 0) return mask_shape::other;
  for (std::int64_t e = 0; e < t.size(); ++e) {
    const std::int64_t query = (e / sk) % sq;
    const std::int64_t key = e % sk;
    if (hidden(e) != (key > query + offset)) return mask_shape::other;
  }
  return mask_shape::causal;
}

}  // namespace

mask_shape classify_mask(const tensor& mask, bool keeps, std::int64_t sq, std::int64_t sk) {
  if (mask.type() != dtype::boolean) return mask_shape::other;
  const auto values = mask.data<bool>();
  return classify(mask, sq, sk,
                  [&](std::int64_t i) { return values[static_cast<std::size_t>(i)] != keeps; });
}

mask_shape classify_bias(const tensor& bias, std::int64_t sq, std::int64_t sk) {
  if (!is_float(bias.type())) return mask_shape::other;
  // float16 cannot hold -1e30: its exports fill with its lowest, -65504. Added to the scores
  // (float32 in the kernel) that leaves a hidden key the weight exp(-65504 + s_hidden - s_max),
  // 0 unless a row's scores spread by more than 65,000 (an overflow in the float16 model itself),
  // and a causal pattern keeps at least one key a row: then it hides as replacement does. A
  // pattern other than causal keeps its bias (a row hidden throughout differs).
  const bool half = bias.type() == dtype::float16;
  const auto hides = [&](double v) { return hides_like_replacement(v) || (half && v <= -65504.0); };
  // Neither 0 nor a hiding value: a real bias (ALiBi, relative positions).
  bool lowest_half = false;
  for (std::int64_t i = 0; i < bias.size(); ++i) {
    const double v = float_at(bias, static_cast<std::size_t>(i));
    if (v != 0 && !hides(v)) return mask_shape::other;
    lowest_half = lowest_half || (v != 0 && !hides_like_replacement(v));
  }
  const mask_shape shape = classify(bias, sq, sk, [&](std::int64_t i) {
    return float_at(bias, static_cast<std::size_t>(i)) != 0;
  });
  return lowest_half && shape != mask_shape::causal ? mask_shape::other : shape;
}

std::optional<tensor> evaluate_constant(const graph& g, const std::string& name,
                                        std::int64_t max_elements) {
  constexpr std::size_t max_nodes = 32;  // a mask's computation, not a model's
  std::map<std::string, std::size_t> producer;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    for (const auto& out : g.nodes[i].outputs) producer[out] = i;
  }
  std::set<std::size_t> cone;
  std::set<std::string> leaves;
  std::vector<std::string> open{name};
  while (!open.empty()) {
    const std::string value = open.back();
    open.pop_back();
    if (g.initializers.contains(value)) {
      leaves.insert(value);
      continue;
    }
    const auto it = producer.find(value);
    if (it == producer.end()) return std::nullopt;  // a graph input: not a constant
    if (!cone.insert(it->second).second) continue;
    if (cone.size() > max_nodes) return std::nullopt;
    for (const auto& in : g.nodes[it->second].inputs) {
      if (!in.empty()) open.push_back(in);
    }
  }
  graph sub;
  sub.name = "constant " + name;
  sub.opset = g.opset;
  for (const std::size_t i : cone) sub.nodes.push_back(g.nodes[i]);  // a set: in graph order
  for (const auto& leaf : leaves) sub.initializers.emplace(leaf, g.initializers.at(leaf));
  sub.outputs.push_back(value_info{name, dtype::float32, {}, false});
  try {
    graph_analysis analysis = analyze_graph(sub, {}, max_elements);
    const auto found = analysis.folded.find(name);
    if (found == analysis.folded.end()) return std::nullopt;
    return std::move(found->second);
  } catch (const std::exception&) {
    // The nodes the session could not fold either: the mask is then computed at run time,
    // as it was before, and any error in it is reported by the run.
    return std::nullopt;
  }
}

std::optional<double> scalar_value(const tensor& t) {
  if (t.size() != 1 || !is_float(t.type()) || t.on_device()) return std::nullopt;
  return float_at(t, 0);
}

}  // namespace coolbench::engine
