// The elementwise ops of the CUDA backend: argument checks and shapes here,
// the arithmetic in elementwise.cu.
#include <limits>
#include <optional>
#include <string>

#include "engine/backends/cuda/plan.hpp"

namespace coolbench::engine::cuda {
namespace {

void same_types(const op_call& call, const tensor& a, const tensor& b) {
  if (a.type() != b.type()) {
    call.fail("expected inputs of one dtype, got " + std::string(to_string(a.type())) + " and " +
              std::string(to_string(b.type())));
  }
}

void require(const op_call& call, const tensor& t, type_rule rule) {
  const bool ok = rule == type_rule::floats     ? is_float(t.type())
                  : rule == type_rule::numeric  ? t.type() != dtype::boolean
                  : rule == type_rule::booleans ? t.type() == dtype::boolean
                                                : true;
  if (!ok) call.fail("unsupported dtype " + std::string(to_string(t.type())));
}

template <unary_op Op, type_rule Rule>
void unary(const op_call& call) {
  const tensor& x = call.in(0);
  require(call, x, Rule);
  tensor y = call.allocate(Op == unary_op::isnan ? dtype::boolean : x.type(), x.shape());
  launch_unary(Op, x.type(), x.device_data(), y.device_data(), x.size(), call.stream);
  call.outputs[0] = std::move(y);
}

void binary_into(const op_call& call, binary_op op, const tensor& a, const tensor& b,
                 dtype out_type, tensor& out) {
  const shape_t* shapes[] = {&a.shape(), &b.shape()};
  shape_t out_shape;
  const index_plan plan = broadcast_plan(call, shapes, out_shape);
  out = call.allocate(out_type, out_shape);
  launch_binary(op, a.type(), b.type(), a.device_data(), b.device_data(), out.device_data(), plan,
                call.stream);
}

template <binary_op Op, type_rule Rule>
void binary(const op_call& call) {
  const tensor& a = call.in(0);
  const tensor& b = call.in(1);
  require(call, a, Rule);
  if (Op == binary_op::pow) {
    require(call, b, type_rule::numeric);
  } else {
    same_types(call, a, b);
  }
  constexpr bool to_bool = Op == binary_op::equal || Op == binary_op::less ||
                           Op == binary_op::greater || Op == binary_op::less_equal ||
                           Op == binary_op::greater_equal;
  binary_into(call, Op, a, b, to_bool ? dtype::boolean : a.type(), call.outputs[0]);
}

// Min and Max take one or more inputs: folded pairwise.
template <binary_op Op>
void extremum(const op_call& call) {
  const tensor& first = call.in(0);
  require(call, first, type_rule::numeric);
  tensor acc = first;
  for (std::size_t i = 1; i < call.inputs.size(); ++i) {
    same_types(call, first, call.in(i));
    tensor next;
    binary_into(call, Op, acc, call.in(i), first.type(), next);
    acc = std::move(next);
  }
  if (call.inputs.size() == 1) {  // the input itself: tensors are immutable once written
    acc = first;
  }
  call.outputs[0] = std::move(acc);
}

void gelu(const op_call& call) {
  const auto approximate = call.n.get<std::string>("approximate", "none");
  if (approximate == "none") return unary<unary_op::gelu_erf, type_rule::floats>(call);
  if (approximate == "tanh") return unary<unary_op::gelu_tanh, type_rule::floats>(call);
  call.fail("expected approximate \"none\" or \"tanh\", got \"" + approximate + "\"");
}

void where(const op_call& call) {
  const tensor& cond = call.in(0);
  const tensor& a = call.in(1);
  const tensor& b = call.in(2);
  if (cond.type() != dtype::boolean) call.fail("expected a bool condition");
  same_types(call, a, b);
  const shape_t* shapes[] = {&cond.shape(), &a.shape(), &b.shape()};
  shape_t out_shape;
  const index_plan plan = broadcast_plan(call, shapes, out_shape);
  tensor y = call.allocate(a.type(), out_shape);
  launch_where(a.type(), cond.device_data(), a.device_data(), b.device_data(), y.device_data(),
               plan, call.stream);
  call.outputs[0] = std::move(y);
}

dtype cast_target(const op_call& call) {
  switch (call.n.get<std::int64_t>("to")) {
    case 1: return dtype::float32;
    case 10: return dtype::float16;
    case 16: return dtype::bfloat16;
    case 7: return dtype::int64;
    case 6: return dtype::int32;
    case 9: return dtype::boolean;
    default: break;
  }
  call.fail("unsupported cast target " + std::to_string(call.n.get<std::int64_t>("to")) +
            "; expected 1, 10, 16, 7, 6 or 9");
}

// CastLike takes the dtype of its second input.
template <bool Like>
void cast(const op_call& call) {
  const tensor& x = call.in(0);
  const dtype to = Like ? call.in(1).type() : cast_target(call);
  tensor y = call.allocate(to, x.shape());
  launch_cast(x.type(), to, x.device_data(), y.device_data(), x.size(), call.stream);
  call.outputs[0] = std::move(y);
}

void clip(const op_call& call) {
  const tensor& x = call.in(0);
  require(call, x, type_rule::numeric);
  std::optional<double> lo, hi;
  if (const tensor* t = call.optional_in(1); t != nullptr && t->size() > 0)
    lo = call.host_scalar(*t);
  if (const tensor* t = call.optional_in(2); t != nullptr && t->size() > 0)
    hi = call.host_scalar(*t);
  if (call.n.has("min")) lo = call.n.get<float>("min");  // opset < 11
  if (call.n.has("max")) hi = call.n.get<float>("max");
  tensor y = call.allocate(x.type(), x.shape());
  launch_clip(x.type(), x.device_data(), y.device_data(), x.size(), lo.has_value(), lo.value_or(0),
              hi.has_value(), hi.value_or(0), call.stream);
  call.outputs[0] = std::move(y);
}

// Identity and inference-mode Dropout hand their input on: tensors are
// immutable once written, so sharing the storage is safe.
void identity(const op_call& call) { call.outputs[0] = call.in(0); }

void dropout(const op_call& call) {
  const tensor& x = call.in(0);
  if (const tensor* training = call.optional_in(2); training != nullptr && training->size() > 0) {
    const double ratio =
        call.optional_in(1) != nullptr ? call.host_scalar(*call.optional_in(1)) : 0.5;
    if (call.host_scalar(*training) != 0 && ratio != 0) {
      call.fail(
          "unsupported training_mode true with a non-zero ratio (random dropout); the "
          "engine runs inference only");
    }
  }
  call.outputs[0] = x;
  if (call.outputs.size() > 1) {
    tensor mask = call.allocate(dtype::boolean, x.shape());
    const std::uint8_t one = 1;
    launch_fill(1, &one, mask.device_data(), x.size(), call.stream);
    call.outputs[1] = std::move(mask);
  }
}

constexpr op_entry k_ops[] = {
    {"Abs", unary<unary_op::abs, type_rule::numeric>, type_rule::numeric},
    {"Add", binary<binary_op::add, type_rule::numeric>, type_rule::numeric},
    {"And", binary<binary_op::logical_and, type_rule::booleans>, type_rule::booleans},
    {"Cast", cast<false>, type_rule::any},
    {"CastLike", cast<true>, type_rule::any},
    {"Clip", clip, type_rule::numeric},
    {"Div", binary<binary_op::div, type_rule::numeric>, type_rule::numeric},
    {"Dropout", dropout, type_rule::any},
    {"Equal", binary<binary_op::equal, type_rule::any>, type_rule::any},
    {"Erf", unary<unary_op::erf, type_rule::floats>, type_rule::floats},
    {"Exp", unary<unary_op::exp, type_rule::floats>, type_rule::floats},
    {"Gelu", gelu, type_rule::floats},
    {"Greater", binary<binary_op::greater, type_rule::numeric>, type_rule::numeric},
    {"GreaterOrEqual", binary<binary_op::greater_equal, type_rule::numeric>, type_rule::numeric},
    {"Identity", identity, type_rule::any},
    {"IsNaN", unary<unary_op::isnan, type_rule::floats>, type_rule::floats},
    {"Less", binary<binary_op::less, type_rule::numeric>, type_rule::numeric},
    {"LessOrEqual", binary<binary_op::less_equal, type_rule::numeric>, type_rule::numeric},
    {"Log", unary<unary_op::log, type_rule::floats>, type_rule::floats},
    {"Max", extremum<binary_op::max>, type_rule::numeric},
    {"Min", extremum<binary_op::min>, type_rule::numeric},
    {"Mul", binary<binary_op::mul, type_rule::numeric>, type_rule::numeric},
    {"Neg", unary<unary_op::neg, type_rule::numeric>, type_rule::numeric},
    {"Not", unary<unary_op::logical_not, type_rule::booleans>, type_rule::booleans},
    {"Or", binary<binary_op::logical_or, type_rule::booleans>, type_rule::booleans},
    {"Pow", binary<binary_op::pow, type_rule::numeric>, type_rule::numeric},
    {"Reciprocal", unary<unary_op::reciprocal, type_rule::floats>, type_rule::floats},
    {"Relu", unary<unary_op::relu, type_rule::numeric>, type_rule::numeric},
    {"Sigmoid", unary<unary_op::sigmoid, type_rule::floats>, type_rule::floats},
    {"Sqrt", unary<unary_op::sqrt, type_rule::floats>, type_rule::floats},
    {"Sub", binary<binary_op::sub, type_rule::numeric>, type_rule::numeric},
    {"Tanh", unary<unary_op::tanh, type_rule::floats>, type_rule::floats},
    {"Where", where, type_rule::any},
    {"Xor", binary<binary_op::logical_xor, type_rule::booleans>, type_rule::booleans},
};

}  // namespace

std::span<const op_entry> elementwise_ops() { return k_ops; }

}  // namespace coolbench::engine::cuda
