#include "engine/fusion/fusion.hpp"

#include <vector>

#include "engine/fusion/attention.hpp"
#include "engine/fusion/passes.hpp"

namespace coolbench::engine {

std::span<const fusion_entry> fusion_passes() {
  // One line per pass, larger patterns first.
  static const std::vector<fusion_entry> passes = {
      // Attention first: it needs the MatMuls and the Softmax the others would take.
      {"attention", fuse_attention},
      // Right after it: the head transposes and the QKV split it can read through.
      {"attention_layout", fusion_detail::fuse_attention_layout},
      {"gemm_epilogue", fusion_detail::fuse_gemm_epilogues},
      // On the epilogues' FusedGemms and the layout pass's views.
      {"qkv_merge", fusion_detail::merge_qkv_products},
      {"layer_norm", fusion_detail::fuse_layer_norms},
      {"elementwise", fusion_detail::fuse_elementwise_chains},
      // After the epilogues (a FusedGemm with its bias reads B transposed too).
      {"product_transpose", fusion_detail::fold_product_transposes},
      // Last: every product is in its final form (MatMul, Gemm or FusedGemm).
      {"aligned_weights", fusion_detail::pad_weight_rows},
  };
  return passes;
}

std::map<std::string, std::size_t> fuse_for_backend(graph& g, const fusion_context& context) {
  std::map<std::string, std::size_t> counts;
  for (const auto& pass : fusion_passes()) {
    if (const std::size_t n = pass.apply(g, context); n > 0) counts[std::string(pass.name)] = n;
  }
  return counts;
}

}  // namespace coolbench::engine
