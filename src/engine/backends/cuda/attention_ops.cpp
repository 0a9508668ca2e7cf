// coolbench.Attention on the CUDA backend: the shapes checked and turned
// into an attention_plan, the split-K scratch from op_call::allocate, and
// the kernels of attention.cu.
#include <string>

#include "engine/backends/cuda/attention.hpp"
#include "engine/backends/cuda/plan.hpp"
#include "engine/fusion/fusion.hpp"

namespace coolbench::engine::cuda {
namespace {

// q, k, v as [batch, heads, seq, head_dim]: rank 3 is [1, batch·heads, ..].
shape_t as_rank4(const op_call& call, const tensor& t, const char* what) {
  shape_t s = t.shape();
  if (s.size() == 3) s.insert(s.begin(), 1);
  if (s.size() != 4) {
    call.fail(std::string("expected ") + what + " of rank 3 or 4, got " + to_string(t.shape()));
  }
  return s;
}

// Batch and head strides of a dense k or v, 0 where it has one for all.
void kv_strides(const op_call& call, const shape_t& s, const shape_t& q, std::int64_t sk,
                std::int64_t (&stride)[2], const char* what) {
  for (int a = 0; a < 2; ++a) {
    if (s[a] != 1 && s[a] != q[a]) {
      call.fail(std::string("expected ") + what + "'s batch and head dims to be 1 or q's " +
                to_string(q) + ", got " + to_string(s));
    }
  }
  if (s[2] != sk || s[3] != q[3]) {
    call.fail(std::string("expected ") + what + " of [.., " + std::to_string(sk) + ", " +
              std::to_string(q[3]) + "], got " + to_string(s));
  }
  stride[0] = s[0] == 1 ? 0 : s[1] * s[2] * s[3];
  stride[1] = s[1] == 1 ? 0 : s[2] * s[3];
}

// Strides of a bias or mask broadcast to [batch, heads, sq, sk].
void broadcast_strides(const op_call& call, const tensor& t, const shape_t& scores,
                       std::int64_t (&stride)[4], const char* what) {
  const shape_t& s = t.shape();
  if (s.size() > 4) call.fail(std::string(what) + " of rank above 4: " + to_string(s));
  std::int64_t step = 1;
  for (int a = 3; a >= 0; --a) {
    const std::int64_t from_end = 3 - a;
    const bool present = from_end < static_cast<std::int64_t>(s.size());
    const std::int64_t d = present ? s[s.size() - 1 - static_cast<std::size_t>(from_end)] : 1;
    if (d != 1 && d != scores[static_cast<std::size_t>(a)]) {
      call.fail(std::string("expected ") + what + " broadcastable to " + to_string(scores) +
                ", got " + to_string(s));
    }
    stride[a] = d == 1 ? 0 : step;
    step *= d;
  }
}

void attention(const op_call& call) {
  const tensor &q = call.in(0), &k = call.in(1), &v = call.in(2);
  const tensor* bias = call.optional_in(3);
  const tensor* mask = call.optional_in(4);
  if (!is_float(q.type()) || k.type() != q.type() || v.type() != q.type()) {
    call.fail("expected q, k and v of one float dtype, got " + std::string(to_string(q.type())) +
              ", " + std::string(to_string(k.type())) + ", " + std::string(to_string(v.type())));
  }
  const shape_t qs = as_rank4(call, q, "q"), ks = as_rank4(call, k, "k"),
                vs = as_rank4(call, v, "v");
  attention_plan p;
  p.batch = qs[0], p.heads = qs[1], p.sq = qs[2], p.sk = ks[2], p.head_dim = qs[3];
  if (p.head_dim > 128) {
    call.fail("head_dim " + std::to_string(p.head_dim) + " is above the kernels' 128");
  }
  kv_strides(call, ks, qs, p.sk, p.k_stride, "k");
  kv_strides(call, vs, qs, p.sk, p.v_stride, "v");
  const shape_t scores{p.batch, p.heads, p.sq, p.sk};
  if (bias != nullptr) {
    if (bias->type() != q.type()) call.fail("expected a bias of q's dtype");
    broadcast_strides(call, *bias, scores, p.bias_stride, "bias");
  }
  if (mask != nullptr) {
    if (mask->type() != dtype::boolean) call.fail("expected a bool mask");
    broadcast_strides(call, *mask, scores, p.mask_stride, "mask");
  }
  p.scale = call.n.get<float>("scale", 1.0F);
  p.causal = call.n.get<std::int64_t>("causal", 0) != 0;
  p.mask_value = call.n.get<float>("mask_value", 0.0F);
  p.mask_keeps = call.n.get<std::int64_t>("mask_keeps", 0) != 0;
  p.zero_empty_rows = call.n.get<std::int64_t>("zero_empty_rows", 0) != 0;
  tensor out = call.allocate(q.type(), q.shape());
  tensor scratch;
  if (const std::int64_t floats = attention_scratch_floats(p); floats > 0) {
    scratch = call.allocate(dtype::float32, {floats});
  }
  launch_attention(
      q.type(), q.device_data(), k.device_data(), v.device_data(),
      bias != nullptr ? bias->device_data() : nullptr,
      mask != nullptr ? static_cast<const bool*>(mask->device_data()) : nullptr, out.device_data(),
      scratch.size() > 0 ? static_cast<float*>(scratch.device_data()) : nullptr, p, call.stream);
  call.outputs[0] = std::move(out);
}

}  // namespace

std::span<const op_entry> attention_ops() {
  static const op_entry entries[] = {
      {"Attention", attention, type_rule::floats, k_fused_domain},
  };
  return entries;
}

}  // namespace coolbench::engine::cuda
