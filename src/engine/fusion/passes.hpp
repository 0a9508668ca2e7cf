// The fusion passes (fusion.cpp lists them in the order they run). Each
// rewrites every match it finds and returns how many it replaced.
#pragma once

#include <cstddef>

#include "engine/fusion/fusion.hpp"

namespace coolbench::engine::fusion_detail {

/// MatMul by a 2-D weight or Gemm, plus a bias, then Relu, GELU (either
/// form, as one op or decomposed) or a residual Add: FusedGemm.
std::size_t fuse_gemm_epilogues(graph& g, const fusion_context& context);

/// Attention over the heads of [B, S, H·D] projections reads and writes them
/// in place (the views form of attention.hpp): attention_layout.cpp.
std::size_t fuse_attention_layout(graph& g, const fusion_context& context);

/// An attention reading q, k and v in place from three FusedGemms of one activation (BERT,
/// ViT) reads them from one FusedGemm by the weights side by side (qkv_merge.cpp).
std::size_t merge_qkv_products(graph& g, const fusion_context& context);

/// LayerNormalization over the last axis (the opset-17 op or the opset-14
/// decomposition), with the residual Add before it: FusedLayerNorm.
std::size_t fuse_layer_norms(graph& g, const fusion_context& context);

/// Trees of elementwise nodes over one output shape: FusedElementwise.
std::size_t fuse_elementwise_chains(graph& g, const fusion_context& context);

/// MatMul(A, Transpose(B)) and a FusedGemm by a transpose, B 2-D, read B in
/// place with transB (product_transpose.cpp).
std::size_t fold_product_transposes(graph& g, const fusion_context& context);

/// Products by a constant weight whose N is not a whole number of 16-byte
/// steps read a copy padded with zeros to an aligned N ([K, N] or, read
/// transposed, [N, K]): FusedGemm with b_columns (aligned_weights.cpp).
std::size_t pad_weight_rows(graph& g, const fusion_context& context);

}  // namespace coolbench::engine::fusion_detail
