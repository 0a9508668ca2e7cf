// The product-transpose pass: MatMul(A, Transpose(B)) with B 2-D reads B
// transposed in place (FusedGemm with transB) instead of writing the
// transpose first. The dynamo export of GPT-2 ties the LM head to the token
// embedding this way: a Transpose of the [50257, 768] wte on every run, 77 MB
// written and read again (354 us of a 0.95 ms run on an H100, 2026-12-05),
// where cuBLASLt reads B transposed for free. A FusedGemm without transB
// (the epilogue pass's) takes the same rewrite. The Transpose stays for any
// other reader, and goes when the products were its only readers.
#include "engine/fusion/fusion_graph.hpp"
#include "engine/fusion/passes.hpp"

namespace coolbench::engine::fusion_detail {
namespace {

// The 2-D value `t` is transposed from, when a Transpose with perm [1, 0]
// (or none: rank 2 reversed) makes it.
std::optional<std::string> transposed_from(const graph& g, const graph_index& index,
                                           const fusion_context& context, const std::string& t) {
  const auto p = index.producer(t);
  if (!p) return std::nullopt;
  const node& n = g.nodes[*p];
  if (!n.domain.empty() || n.op_type != "Transpose" || n.inputs.size() != 1) return std::nullopt;
  const auto shape = static_shape(context, n.inputs[0]);
  if (!shape || shape->size() != 2) return std::nullopt;
  const auto perm = n.get<std::vector<std::int64_t>>("perm", {1, 0});
  if (perm != std::vector<std::int64_t>{1, 0}) return std::nullopt;
  return n.inputs[0];
}

// The product `n` reading B as transposed `b`, or nullopt when `n` is no
// product of that form.
std::optional<node> reading_transposed(const node& n, const std::string& b) {
  node fused;
  if (n.domain.empty() && n.op_type == "MatMul" && n.inputs.size() == 2 && n.outputs.size() == 1) {
    fused = fused_node("FusedGemm", n);
    fused.inputs = {n.inputs[0], b, ""};
    fused.outputs = n.outputs;
    fused.attributes["transA"] = std::int64_t{0};
    fused.attributes["alpha"] = 1.0F;
    fused.attributes["activation"] = std::string("none");
  } else if (n.domain == k_fused_domain && n.op_type == "FusedGemm" && n.inputs.size() >= 2 &&
             n.get<std::int64_t>("transB", 0) == 0 && n.get<std::int64_t>("b_columns", 0) == 0) {
    fused = n;
    fused.inputs[1] = b;
  } else {
    return std::nullopt;
  }
  fused.attributes["transB"] = std::int64_t{1};
  return fused;
}

bool fold_one(graph& g, const fusion_context& context) {
  const graph_index index(g);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const node& n = g.nodes[i];
    if (n.inputs.size() < 2 || n.inputs[0] == n.inputs[1]) continue;
    const auto b = transposed_from(g, index, context, n.inputs[1]);
    if (!b) continue;
    auto fused = reading_transposed(n, *b);
    if (!fused || !target_runs(context, *fused)) continue;
    std::set<std::size_t> removed{i};
    if (index.only_read_by(n.inputs[1], {i})) removed.insert(*index.producer(n.inputs[1]));
    replace_nodes(g, removed, std::move(*fused));
    return true;
  }
  return false;
}

}  // namespace

std::size_t fold_product_transposes(graph& g, const fusion_context& context) {
  std::size_t count = 0;
  while (fold_one(g, context)) ++count;
  return count;
}

}  // namespace coolbench::engine::fusion_detail
