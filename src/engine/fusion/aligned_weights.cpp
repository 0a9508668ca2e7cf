// The aligned-weights pass: a product by a constant [K, N] weight whose rows
// break 16-byte alignment (N times the element size not a multiple of 16:
// the lm_head of GPT-2 exports, [768, 50257] in fp16) makes a device's BLAS
// fall back to its slow unaligned kernels. The weight is padded once, here,
// to aligned rows (zeros after column N), and each product reading it
// becomes a FusedGemm with b_columns = N, which reads the first N columns.
// Only when every reader of the weight is such a product: the original then
// leaves the plan (the session gives it back to the model), so the device
// holds the padded copy alone. A's rows must be aligned too, or the product
// would stay unaligned anyway; Y's rows the backend pads itself.
#include <cstring>

#include "engine/fusion/fusion_graph.hpp"
#include "engine/fusion/passes.hpp"

namespace coolbench::engine::fusion_detail {
namespace {

constexpr std::size_t k_row_bytes = 16;

bool rows_aligned(std::int64_t ld, std::size_t element) {
  return (static_cast<std::size_t>(ld) * element) % k_row_bytes == 0;
}

// Whether `n` reads `weight` as an untransposed B (and nowhere else) with
// aligned rows of A, in a form FusedGemm computes with a padded B.
bool takes_padded(const fusion_context& context, const node& n, const std::string& weight,
                  std::size_t element) {
  if (n.inputs.size() < 2 || n.inputs[1] != weight || n.outputs.size() != 1) return false;
  for (std::size_t i = 0; i < n.inputs.size(); ++i) {
    if (i != 1 && n.inputs[i] == weight) return false;
  }
  const bool fused = n.domain == k_fused_domain && n.op_type == "FusedGemm";
  const bool matmul = n.domain.empty() && n.op_type == "MatMul";
  const bool gemm = n.domain.empty() && n.op_type == "Gemm";
  if (!fused && !matmul && !gemm) return false;
  if (!matmul && n.get<std::int64_t>("transB", 0) != 0) return false;
  if (fused && n.get<std::int64_t>("b_columns", 0) != 0) return false;
  // A Gemm's C stays with Gemm (the epilogue pass takes it when it is a bias).
  if (gemm && n.inputs.size() > 2 && !n.inputs[2].empty()) return false;
  const auto a = static_shape(context, n.inputs[0]);
  if (!a || a->size() < 2 || a->size() > 8 || element_count(*a) == 0) return false;
  const bool trans_a = !matmul && n.get<std::int64_t>("transA", 0) != 0;
  if ((gemm || trans_a) && a->size() != 2) return false;
  const std::int64_t k = trans_a ? (*a)[0] : a->back();
  return rows_aligned(trans_a ? element_count(*a) / k : k, element);
}

// The FusedGemm reading `padded` in place of node `n`'s weight.
node padded_product(const node& n, const std::string& padded, std::int64_t columns) {
  node fused = n;
  if (n.domain != k_fused_domain) {
    fused = fused_node("FusedGemm", n);
    fused.inputs = {n.inputs[0], n.inputs[1], ""};
    fused.outputs = n.outputs;
    fused.attributes["transA"] = std::int64_t{n.get<std::int64_t>("transA", 0) != 0};
    fused.attributes["transB"] = std::int64_t{0};
    fused.attributes["alpha"] = n.get<float>("alpha", 1.0F);
    fused.attributes["activation"] = std::string("none");
  }
  fused.inputs[1] = padded;
  fused.attributes["b_columns"] = columns;
  return fused;
}

tensor padded_rows(const tensor& w, std::int64_t columns) {
  const std::size_t element = size_of(w.type());
  const std::int64_t rows = w.shape()[0], n = w.shape()[1];
  tensor padded(w.type(), {rows, columns});
  std::byte* to = padded.raw().data();
  std::memset(to, 0, padded.bytes());
  const std::byte* from = w.raw().data();
  for (std::int64_t r = 0; r < rows; ++r) {
    std::memcpy(to + static_cast<std::size_t>(r * columns) * element,
                from + static_cast<std::size_t>(r * n) * element,
                static_cast<std::size_t>(n) * element);
  }
  return padded;
}

std::string unused_name(const graph& g, const graph_index& index, const std::string& base) {
  std::string name = base + "/aligned";
  while (g.initializers.contains(name) || index.producer(name) || !index.readers(name).empty()) {
    name += "_";
  }
  return name;
}

}  // namespace

std::size_t pad_weight_rows(graph& g, const fusion_context& context) {
  std::vector<std::string> weights;
  for (const auto& [name, value] : g.initializers) {
    if (value.rank() == 2 && is_float(value.type()) && value.size() > 0 &&
        !rows_aligned(value.shape()[1], size_of(value.type()))) {
      weights.push_back(name);
    }
  }
  std::size_t count = 0;
  for (const auto& weight : weights) {
    const graph_index index(g);
    const tensor& w = g.initializers.at(weight);
    const std::size_t element = size_of(w.type());
    const auto& readers = index.readers(weight);
    if (readers.empty() || index.is_graph_output(weight)) continue;
    const std::int64_t n = w.shape()[1];
    const auto step = static_cast<std::int64_t>(k_row_bytes / element);
    const std::int64_t columns = (n + step - 1) / step * step;
    const std::string padded = unused_name(g, index, weight);
    std::vector<node> rewritten;
    for (const std::size_t r : readers) {
      if (!takes_padded(context, g.nodes[r], weight, element)) break;
      rewritten.push_back(padded_product(g.nodes[r], padded, n));
      if (!target_runs(context, rewritten.back())) break;
    }
    if (rewritten.size() != readers.size() || !target_runs(context, rewritten.back())) continue;
    g.initializers.emplace(padded, padded_rows(w, columns));
    for (std::size_t i = 0; i < readers.size(); ++i) g.nodes[readers[i]] = std::move(rewritten[i]);
    count += readers.size();
  }
  return count;
}

}  // namespace coolbench::engine::fusion_detail
