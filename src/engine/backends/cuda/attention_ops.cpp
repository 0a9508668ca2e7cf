// coolbench.Attention on the CUDA backend: the shapes checked and turned
// into an attention_plan (either layout of attention.hpp), the split-K scratch from
// op_call::allocate, and the kernels of attention.cu.
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

// Batch, head and row strides of a dense k or v, 0 where it has one for all.
void kv_strides(const op_call& call, const shape_t& s, const shape_t& q, std::int64_t sk,
                std::int64_t (&stride)[3], const char* what) {
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
  stride[2] = s[3];
}

// The views form (attention.hpp): x read at offset + b·s_b + h·s_h + i·s_row
// + c for i < length; checks that every such element is inside x.
void view_strides(const op_call& call, const shape_t& x, const std::int64_t* view,
                  std::int64_t batch, std::int64_t heads, std::int64_t length,
                  std::int64_t head_dim, std::int64_t (&stride)[3], const char* what) {
  for (int a = 0; a < 4; ++a) {
    if (view[a] < 0) call.fail(std::string("views: a negative offset or stride for ") + what);
  }
  const std::int64_t last =
      view[0] + (batch - 1) * view[1] + (heads - 1) * view[2] + (length - 1) * view[3] + head_dim;
  std::int64_t size = 1;
  for (const auto d : x) size *= d;
  if (batch > 0 && heads > 0 && length > 0 && head_dim > 0 && last > size) {
    call.fail(std::string("views: ") + what + "'s view reaches element " + std::to_string(last) +
              " of " + to_string(x));
  }
  stride[0] = view[1], stride[1] = view[2], stride[2] = view[3];
}

// The plan's shape and strides of q, k, v and the output, by form; the
// output's shape; `offsets` the elements q, k and v start at in their inputs.
shape_t plan_layout(const op_call& call, const tensor& q, const tensor& k, const tensor& v,
                    attention_plan& p, std::int64_t (&offsets)[3]) {
  if (call.n.has("views")) {
    const auto& views = call.n.get<std::vector<std::int64_t>>("views");
    const auto& shape = call.n.get<std::vector<std::int64_t>>("shape");
    const auto& out_shape = call.n.get<std::vector<std::int64_t>>("output_shape");
    if (views.size() != 16 || shape.size() != 5) {
      call.fail("views needs 16 strides and shape [batch, heads, sq, sk, head_dim]");
    }
    p.batch = shape[0], p.heads = shape[1], p.sq = shape[2], p.sk = shape[3], p.head_dim = shape[4];
    view_strides(call, q.shape(), &views[0], p.batch, p.heads, p.sq, p.head_dim, p.q_stride, "q");
    view_strides(call, k.shape(), &views[4], p.batch, p.heads, p.sk, p.head_dim, p.k_stride, "k");
    view_strides(call, v.shape(), &views[8], p.batch, p.heads, p.sk, p.head_dim, p.v_stride, "v");
    std::int64_t out_size = 1;
    for (const auto d : out_shape) out_size *= d;
    if (out_size != p.batch * p.heads * p.sq * p.head_dim || views[12] != 0) {
      call.fail("views: output_shape " + to_string(shape_t(out_shape)) + " does not hold [" +
                std::to_string(p.batch) + ", " + std::to_string(p.heads) + ", " +
                std::to_string(p.sq) + ", " + std::to_string(p.head_dim) + "]");
    }
    view_strides(call, shape_t(out_shape), &views[12], p.batch, p.heads, p.sq, p.head_dim,
                 p.out_stride, "the output");
    offsets[0] = views[0], offsets[1] = views[4], offsets[2] = views[8];
    return shape_t(out_shape);
  }
  const shape_t qs = as_rank4(call, q, "q"), ks = as_rank4(call, k, "k"),
                vs = as_rank4(call, v, "v");
  p.batch = qs[0], p.heads = qs[1], p.sq = qs[2], p.sk = ks[2], p.head_dim = qs[3];
  kv_strides(call, ks, qs, p.sk, p.k_stride, "k");
  kv_strides(call, vs, qs, p.sk, p.v_stride, "v");
  p.q_stride[0] = p.out_stride[0] = p.heads * p.sq * p.head_dim;
  p.q_stride[1] = p.out_stride[1] = p.sq * p.head_dim;
  p.q_stride[2] = p.out_stride[2] = p.head_dim;
  return q.shape();
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
  attention_plan p;
  std::int64_t offsets[3] = {0, 0, 0};
  const shape_t out_shape = plan_layout(call, q, k, v, p, offsets);
  if (p.head_dim > 128) {
    call.fail("head_dim " + std::to_string(p.head_dim) + " is above the kernels' 128");
  }
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
  tensor out = call.allocate(q.type(), out_shape);
  tensor scratch;
  if (const std::int64_t floats = attention_scratch_floats(p); floats > 0) {
    scratch = call.allocate(dtype::float32, {floats});
  }
  const auto at = [&](const tensor& t, std::int64_t offset) -> const void* {
    return static_cast<const std::byte*>(t.device_data()) +
           offset * static_cast<std::int64_t>(size_of(t.type()));
  };
  launch_attention(
      q.type(), at(q, offsets[0]), at(k, offsets[1]), at(v, offsets[2]),
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
