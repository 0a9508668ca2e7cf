// The aligned-weights pass: a product by a constant weight whose N is not a
// whole number of 16-byte steps (the lm_head of GPT-2: N = 50257 in fp16)
// runs 3.3 times slower in cuBLASLt than one with N rounded up to 8 (130 us
// against 39 us on an H100, the same for B stored [K, N] or [N, K]). Two
// forms, both padded once here, with zeros:
//   - B read as [K, N] (MatMul, Gemm and FusedGemm without transB): its rows
//     also break 16-byte alignment; padded to aligned rows (zeros after
//     column N);
//   - B read as [N, K] (Gemm and FusedGemm with transB, no bias): rows of K
//     are aligned; padded with zero rows up to an aligned N.
// A [K, N] weight read without a bias (MatMul: the lm_head of an exported
// GPT-2) takes the second form: it is copied transposed, [N, K] padded with
// zero rows, and read with transB. cuBLASLt runs both forms alike, and only
// this one lets the backend write Y's unaligned rows in place, in row phases
// (gemm_choice.hpp), where a column offset into B must keep its rows aligned.
// Each product reading it becomes a FusedGemm with b_columns = N over the
// padded copy: the backend then computes the aligned N columns (the zeros
// give zeros) and keeps the first N. The original weight leaves the plan
// when nothing else reads it (the session gives it back to the model), so
// the device holds the padded copy alone; where another op reads it too (a
// tied embedding's Gather) both stay. A's rows must be aligned too, or the
// product would stay unaligned anyway; Y's rows the backend pads itself.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "engine/fusion/fusion_graph.hpp"
#include "engine/fusion/passes.hpp"

namespace coolbench::engine::fusion_detail {
namespace {

constexpr std::size_t k_row_bytes = 16;

bool rows_aligned(std::int64_t ld, std::size_t element) {
  return (static_cast<std::size_t>(ld) * element) % k_row_bytes == 0;
}

// Whether `n` reads `weight` as its B (and nowhere else), transposed as
// `transposed` says, with aligned rows of A, in a form FusedGemm computes
// with a padded B.
bool takes_padded(const fusion_context& context, const node& n, const std::string& weight,
                  bool transposed, std::size_t element) {
  if (n.inputs.size() < 2 || n.inputs[1] != weight || n.outputs.size() != 1) return false;
  for (std::size_t i = 0; i < n.inputs.size(); ++i) {
    if (i != 1 && n.inputs[i] == weight) return false;
  }
  const bool fused = n.domain == k_fused_domain && n.op_type == "FusedGemm";
  const bool matmul = n.domain.empty() && n.op_type == "MatMul";
  const bool gemm = n.domain.empty() && n.op_type == "Gemm";
  if (!fused && !matmul && !gemm) return false;
  const bool trans_b = !matmul && n.get<std::int64_t>("transB", 0) != 0;
  if (trans_b != transposed) return false;
  if (fused && n.get<std::int64_t>("b_columns", 0) != 0) return false;
  // A Gemm's C stays with Gemm (the epilogue pass takes it when it is a bias).
  // Read transposed, B's rows are aligned already, and the padding pays only
  // where all the aligned N is computed, which a bias of N values prevents.
  if ((gemm || transposed) && n.inputs.size() > 2 && !n.inputs[2].empty()) return false;
  const auto a = static_shape(context, n.inputs[0]);
  if (!a || a->size() < 2 || a->size() > 8 || element_count(*a) == 0) return false;
  const bool trans_a = !matmul && n.get<std::int64_t>("transA", 0) != 0;
  if ((gemm || trans_a) && a->size() != 2) return false;
  const std::int64_t k = trans_a ? (*a)[0] : a->back();
  return rows_aligned(trans_a ? element_count(*a) / k : k, element);
}

// The FusedGemm reading `padded` in place of node `n`'s weight.
node padded_product(const node& n, const std::string& padded, std::int64_t columns,
                    bool transposed) {
  node fused = n;
  if (n.domain != k_fused_domain) {
    fused = fused_node("FusedGemm", n);
    fused.inputs = {n.inputs[0], n.inputs[1], ""};
    fused.outputs = n.outputs;
    fused.attributes["transA"] = std::int64_t{n.get<std::int64_t>("transA", 0) != 0};
    fused.attributes["alpha"] = n.get<float>("alpha", 1.0F);
    fused.attributes["activation"] = std::string("none");
  }
  fused.attributes["transB"] = std::int64_t{transposed};
  fused.inputs[1] = padded;
  fused.attributes["b_columns"] = columns;
  return fused;
}

// `from` [rows, cols] into `to` [cols, rows], elements of `element` bytes, in tiles so that both
// sides are read and written a cache line at a time. `Word`, where not void, is an unsigned
// type of the element's size, so that a copy is one load and one store.
template <class Word>
void transpose_into(std::byte* to, const std::byte* from, std::int64_t rows, std::int64_t cols,
                    std::size_t element) {
  constexpr std::int64_t tile = 64;
  for (std::int64_t r0 = 0; r0 < rows; r0 += tile) {
    for (std::int64_t c0 = 0; c0 < cols; c0 += tile) {
      for (std::int64_t c = c0; c < std::min(c0 + tile, cols); ++c) {
        for (std::int64_t r = r0; r < std::min(r0 + tile, rows); ++r) {
          std::byte* target = to + static_cast<std::size_t>(c * rows + r) * element;
          const std::byte* source = from + static_cast<std::size_t>(r * cols + c) * element;
          if constexpr (std::is_void_v<Word>) {
            std::memcpy(target, source, element);
          } else {
            Word word;
            std::memcpy(&word, source, sizeof(Word));
            std::memcpy(target, &word, sizeof(Word));
          }
        }
      }
    }
  }
}

// `w` [rows, cols] transposed into a [padded_rows, rows] tensor, zero rows after its cols.
tensor padded_transposed_copy(const tensor& w, std::int64_t padded_rows) {
  const std::int64_t rows = w.shape()[0], cols = w.shape()[1];
  tensor padded(w.type(), {padded_rows, rows});
  std::byte* to = padded.raw().data();
  std::memset(to, 0, padded.bytes());
  const std::byte* from = w.raw().data();
  const std::size_t element = size_of(w.type());
  switch (element) {
    case 2: transpose_into<std::uint16_t>(to, from, rows, cols, element); break;
    case 4: transpose_into<std::uint32_t>(to, from, rows, cols, element); break;
    case 8: transpose_into<std::uint64_t>(to, from, rows, cols, element); break;
    default: transpose_into<void>(to, from, rows, cols, element); break;
  }
  return padded;
}

// `w` [rows, cols] copied into a [padded_rows, padded_cols] tensor, zeros after.
tensor padded_copy(const tensor& w, std::int64_t padded_rows, std::int64_t padded_cols) {
  const std::size_t element = size_of(w.type());
  const std::int64_t rows = w.shape()[0], cols = w.shape()[1];
  tensor padded(w.type(), {padded_rows, padded_cols});
  std::byte* to = padded.raw().data();
  std::memset(to, 0, padded.bytes());
  const std::byte* from = w.raw().data();
  for (std::int64_t r = 0; r < rows; ++r) {
    std::memcpy(to + static_cast<std::size_t>(r * padded_cols) * element,
                from + static_cast<std::size_t>(r * cols) * element,
                static_cast<std::size_t>(cols) * element);
  }
  return padded;
}

std::string unused_name(const graph& g, const graph_index& index, const std::string& base,
                        const char* suffix) {
  std::string name = base + suffix;
  while (g.initializers.contains(name) || index.producer(name) || !index.readers(name).empty()) {
    name += "_";
  }
  return name;
}

// Pads `weight` for its readers that take it as B transposed as
// `transposed` says; returns how many products now read the padded copy.
std::size_t pad_for_readers(graph& g, const fusion_context& context, const std::string& weight,
                            bool transposed) {
  const tensor& w = g.initializers.at(weight);
  const std::size_t element = size_of(w.type());
  const std::int64_t n = w.shape()[transposed ? 0 : 1];
  if (rows_aligned(n, element)) return 0;  // before the index: most weights stop here
  const graph_index index(g);
  if (index.is_graph_output(weight)) return 0;
  const auto step = static_cast<std::int64_t>(k_row_bytes / element);
  const std::int64_t columns = (n + step - 1) / step * step;
  const std::string padded = unused_name(g, index, weight, "/aligned");
  // A reader of the [K, N] form without a bias takes the transposed copy (above), under a
  // name of its own; one with a bias the copy with padded rows.
  const std::string turned = transposed ? padded : unused_name(g, index, weight, "/aligned_t");
  std::vector<std::pair<std::size_t, node>> rewritten;
  bool wants_padded = false, wants_turned = false;
  for (const std::size_t r : index.readers(weight)) {
    const node& reader = g.nodes[r];
    if (!takes_padded(context, reader, weight, transposed, element)) continue;
    const bool turn = !transposed && (reader.inputs.size() <= 2 || reader.inputs[2].empty());
    node fused = padded_product(reader, turn ? turned : padded, n, transposed || turn);
    if (!target_runs(context, fused)) continue;
    (turn ? wants_turned : wants_padded) = true;
    rewritten.emplace_back(r, std::move(fused));
  }
  if (rewritten.empty()) return 0;
  if (wants_padded) {
    g.initializers.emplace(padded, transposed ? padded_copy(w, columns, w.shape()[1])
                                              : padded_copy(w, w.shape()[0], columns));
  }
  if (wants_turned) g.initializers.emplace(turned, padded_transposed_copy(w, columns));
  for (auto& [r, fused] : rewritten) g.nodes[r] = std::move(fused);
  return rewritten.size();
}

}  // namespace

std::size_t pad_weight_rows(graph& g, const fusion_context& context) {
  std::vector<std::string> weights;
  for (const auto& [name, value] : g.initializers) {
    if (value.rank() == 2 && is_float(value.type()) && value.size() > 0) weights.push_back(name);
  }
  std::size_t count = 0;
  for (const auto& weight : weights) {
    for (const bool transposed : {false, true})
      count += pad_for_readers(g, context, weight, transposed);
  }
  return count;
}

}  // namespace coolbench::engine::fusion_detail
