// The attention fusion: scores = MatMul(Q, Kᵀ), a constant scale, an
// optional mask, Softmax over the keys and MatMul with V become one
// coolbench.Attention node (docs/engine.md, "Fusion").
//
//   coolbench.Attention(q, k, v, [bias], [mask]) -> out
//     q [B, H, Sq, D], k and v [B, H, Sk, D] (rank 3: [B·H, S, D]);
//     bias: added to the scaled scores, broadcast to [B, H, Sq, Sk];
//     mask: bool, broadcast likewise; a masked score becomes mask_value.
//   attributes: scale (float), causal (int: key j is hidden from query i
//     when j > i + Sk - Sq), mask_value (float), mask_keeps (int: 1 when the
//     mask's true elements are the kept ones), zero_empty_rows (int: a row
//     with every score -inf gives 0, as the exporters' IsNaN guard makes it;
//     else NaN, as Softmax gives).
//   the views form (attribute views, made by the attention_layout pass):
//     q, k and v are any tensors the attention reads in place, and out is
//     written in place of the transposes and reshapes that followed it.
//     shape = [B, H, Sq, Sk, D]; views = 16 ints, [offset, batch stride,
//     head stride, row stride] of q, k, v and out in that order (element
//     (b, h, i, c) of q is q's element offset + b·s_b + h·s_h + i·s_row + c;
//     out's offset is 0); output_shape is out's shape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "coolbench/engine/tensor.hpp"
#include "engine/fusion/fusion.hpp"

namespace coolbench::engine {

/// The largest head dimension the CUDA kernels take.
inline constexpr std::int64_t k_attention_max_head_dim = 128;

/// The fusion pass (fusion_passes() runs it first).
std::size_t fuse_attention(graph& g, const fusion_context& context);

/// What a constant mask does to scores of [.., sq, sk]: hides nothing,
/// hides exactly the keys after each query (causal, offset sk - sq >= 0),
/// or something else.
enum class mask_shape : std::uint8_t { none, causal, other };

/// A bool mask (`keeps`: true elements are kept) or an additive bias (0
/// kept, <= -1e30 or -inf hidden; in float16 also -65504, float16's lowest,
/// for the causal pattern only), broadcast to [.., sq, sk].
[[nodiscard]] mask_shape classify_mask(const tensor& mask, bool keeps, std::int64_t sq,
                                       std::int64_t sk);
[[nodiscard]] mask_shape classify_bias(const tensor& bias, std::int64_t sq, std::int64_t sk);

/// A fill value so low that adding a score to it in float32 leaves it (or
/// -inf): Add(scores, Where(m, 0, fill)) then equals replacing the score.
[[nodiscard]] constexpr bool hides_like_replacement(double fill) noexcept { return fill <= -1e30; }

/// The value of `name` when the graph computes it from initializers alone (no graph input
/// upstream), by evaluating the few nodes it depends on (each output at most `max_elements`
/// elements); nullopt otherwise. For a mask too large for the session to fold: GPT-2's causal
/// mask at 1024 tokens has a million elements, k_fold_max_elements is 64 Ki.
[[nodiscard]] std::optional<tensor> evaluate_constant(const graph& g, const std::string& name,
                                                      std::int64_t max_elements);

/// The one value of a one-element float tensor, as double.
[[nodiscard]] std::optional<double> scalar_value(const tensor& t);

}  // namespace coolbench::engine
