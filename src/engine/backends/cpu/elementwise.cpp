#include "engine/backends/cpu/elementwise.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numbers>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/backends/cpu/kernel_args.hpp"

namespace coolbench::engine::cpu {
namespace {

// ---------------------------------------------------------------------------
// Element storage. Kernels are written against a storage tag S: elem<S>::raw
// is what the buffer holds, elem<S>::value what the math runs on. float16 has
// no C++ type, so it gets a tag that loads to float and stores back as bits.

struct half {};

template <class S>
struct elem {
  using raw = S;
  using value = S;
  static value load(raw r) { return r; }
  static raw store(value v) { return v; }
};

template <>
struct elem<half> {
  using raw = std::uint16_t;
  using value = float;
  static value load(raw r) { return half_to_float(r); }
  static raw store(value v) { return float_to_half(v); }
};

template <class S>
constexpr dtype dtype_for = dtype_of<S>();
template <>
constexpr dtype dtype_for<half> = dtype::float16;

template <class S>
const typename elem<S>::raw* read_ptr(const tensor& t) {
  return reinterpret_cast<const typename elem<S>::raw*>(t.raw().data());  // NOLINT: typed view
}

template <class S>
typename elem<S>::raw* write_ptr(tensor& t) {
  return reinterpret_cast<typename elem<S>::raw*>(t.raw().data());  // NOLINT: typed view
}

template <class... S>
struct types {};
using float_types = types<float, half>;
using numeric_types = types<float, half, std::int64_t, std::int32_t>;
using any_types = types<float, half, std::int64_t, std::int32_t, bool>;
using bool_types = types<bool>;

template <class... S>
std::string names(types<S...> /*list*/) {
  std::string text;
  ((text += (text.empty() ? "" : ", ") + std::string(to_string(dtype_for<S>))), ...);
  return text;
}

// Calls f(std::type_identity<S>{}) for the tag S of `type`, so the loop inside
// f is compiled per dtype instead of switching per element.
template <class... S, class F>
void dispatch(const node& n, dtype type, const std::string& role, types<S...> list, F&& f) {
  const bool matched = ((type == dtype_for<S> && (f(std::type_identity<S>{}), true)) || ...);
  if (!matched) {
    throw invalid_argument(n.describe() + ": " + role + " must be one of " + names(list) +
                           "; got " + std::string(to_string(type)));
  }
}

// ---------------------------------------------------------------------------
// Argument checks.

void require_inputs(const node& n, inputs_t inputs, std::size_t min, std::size_t max) {
  if (inputs.size() < min || inputs.size() > max) {
    const std::string expected = min == max ? std::to_string(min)
                                 : max == std::numeric_limits<std::size_t>::max()
                                     ? "at least " + std::to_string(min)
                                     : std::to_string(min) + " to " + std::to_string(max);
    throw invalid_argument(n.describe() + ": expected " + expected + " inputs, got " +
                           std::to_string(inputs.size()));
  }
}

void require_outputs(const node& n, outputs_t outputs, std::size_t max) {
  if (outputs.empty() || outputs.size() > max) {
    throw invalid_argument(n.describe() + ": expected 1 to " + std::to_string(max) +
                           " outputs, got " + std::to_string(outputs.size()));
  }
}

void require_same_type(const node& n, const tensor& a, std::size_t ia, const tensor& b,
                       std::size_t ib) {
  if (a.type() != b.type()) {
    throw invalid_argument(n.describe() + ": expected inputs " + std::to_string(ia) + " and " +
                           std::to_string(ib) + " to share a dtype, got " +
                           std::string(to_string(a.type())) + " and " +
                           std::string(to_string(b.type())));
  }
}

// ---------------------------------------------------------------------------
// Broadcasting: the output shape and, per operand, the stride of each output
// dimension (0 where the operand repeats along it), computed once per call.

struct broadcast_plan {
  shape_t shape;
  std::int64_t count = 0;
  bool same_shapes = true;  // every operand has the output shape: offsets equal the index
  std::vector<std::vector<std::int64_t>> strides;
};

broadcast_plan plan_broadcast(const node& n, inputs_t operands) {
  broadcast_plan plan;
  std::size_t rank = 0;
  for (const tensor* t : operands) rank = std::max(rank, t->rank());
  plan.shape.assign(rank, 1);
  for (const tensor* t : operands) {
    const shape_t& shape = t->shape();
    const std::size_t lead = rank - shape.size();
    for (std::size_t d = 0; d < shape.size(); ++d) {
      std::int64_t& out = plan.shape[lead + d];
      if (shape[d] == out || shape[d] == 1) continue;
      if (out == 1) {
        out = shape[d];
        continue;
      }
      std::string got;
      for (const tensor* u : operands) got += (got.empty() ? "" : " and ") + to_string(u->shape());
      throw invalid_argument(n.describe() +
                             ": expected input shapes that broadcast (each trailing dimension "
                             "equal or 1), got " +
                             got);
    }
  }
  plan.count = element_count(plan.shape);
  for (const tensor* t : operands) {
    const shape_t& shape = t->shape();
    const std::size_t lead = rank - shape.size();
    std::vector<std::int64_t> strides(rank, 0);
    std::int64_t stride = 1;
    for (std::size_t d = shape.size(); d-- > 0;) {
      if (shape[d] != 1) strides[lead + d] = stride;
      stride *= shape[d];
    }
    plan.same_shapes = plan.same_shapes && shape == plan.shape;
    plan.strides.push_back(std::move(strides));
  }
  return plan;
}

// Calls f(output_index, operand_offsets) for every output element, in order.
template <class F>
void for_each_element(const broadcast_plan& plan, F&& f) {
  const std::size_t operands = plan.strides.size();
  std::vector<std::int64_t> offsets(operands, 0);
  if (plan.same_shapes) {
    for (std::int64_t i = 0; i < plan.count; ++i) {
      std::ranges::fill(offsets, i);
      f(i, offsets.data());
    }
    return;
  }
  const std::size_t rank = plan.shape.size();
  std::vector<std::int64_t> index(rank, 0);
  for (std::int64_t i = 0; i < plan.count; ++i) {
    f(i, offsets.data());
    // Odometer: step the last dimension, carry into earlier ones.
    for (std::size_t d = rank; d-- > 0;) {
      for (std::size_t j = 0; j < operands; ++j) offsets[j] += plan.strides[j][d];
      if (++index[d] < plan.shape[d]) break;
      for (std::size_t j = 0; j < operands; ++j) offsets[j] -= plan.strides[j][d] * plan.shape[d];
      index[d] = 0;
    }
  }
}

template <class R, class V>
typename elem<R>::raw store_as(V v) {
  return elem<R>::store(static_cast<typename elem<R>::value>(v));
}

template <class S, class Op>
tensor map_unary(const tensor& x, Op op) {
  tensor out(x.type(), x.shape());
  const auto* in = read_ptr<S>(x);
  auto* o = write_ptr<S>(out);
  for (std::int64_t i = 0; i < x.size(); ++i) o[i] = store_as<S>(op(elem<S>::load(in[i])));
  return out;
}

// Calls f(first_output_index, operand_offsets) for every row along the last
// output dimension (the whole output for a scalar), in order: per row an
// operand steps by its last stride, 1 or 0, so the caller's loop is tight.
template <class F>
void for_each_row(const broadcast_plan& plan, F&& f) {
  const std::size_t operands = plan.strides.size();
  std::vector<std::int64_t> offsets(operands, 0);
  const std::size_t rank = plan.shape.size();
  if (rank == 0) {
    f(std::int64_t{0}, offsets.data());
    return;
  }
  const std::int64_t row = plan.shape.back();
  std::vector<std::int64_t> index(rank, 0);
  for (std::int64_t start = 0; start < plan.count; start += row) {
    f(start, offsets.data());
    // Odometer over the dimensions before the last.
    for (std::size_t d = rank - 1; d-- > 0;) {
      for (std::size_t j = 0; j < operands; ++j) offsets[j] += plan.strides[j][d];
      if (++index[d] < plan.shape[d]) break;
      for (std::size_t j = 0; j < operands; ++j) offsets[j] -= plan.strides[j][d] * plan.shape[d];
      index[d] = 0;
    }
  }
}

template <class A, class B, class R, class Op>
tensor map_binary(const node& n, const tensor& a, const tensor& b, Op op) {
  const std::array<const tensor*, 2> operands{&a, &b};
  const broadcast_plan plan = plan_broadcast(n, operands);
  tensor out(dtype_for<R>, plan.shape);
  if (plan.count == 0) return out;
  const auto* x = read_ptr<A>(a);
  const auto* y = read_ptr<B>(b);
  auto* o = write_ptr<R>(out);
  // Each case is a plain loop the compiler can vectorize: the binary ops are
  // most of a transformer's elementwise time (bias adds, residuals, scales).
  const auto run_row = [&](std::int64_t start, std::int64_t length, const auto* xa,
                           std::int64_t step_a, const auto* yb, std::int64_t step_b) {
    auto* out_row = o + start;
    if (step_a == 1 && step_b == 1) {
      for (std::int64_t j = 0; j < length; ++j) {
        out_row[j] = store_as<R>(op(elem<A>::load(xa[j]), elem<B>::load(yb[j])));
      }
    } else if (step_a == 1) {
      const auto y0 = elem<B>::load(yb[0]);
      for (std::int64_t j = 0; j < length; ++j) {
        out_row[j] = store_as<R>(op(elem<A>::load(xa[j]), y0));
      }
    } else if (step_b == 1) {
      const auto x0 = elem<A>::load(xa[0]);
      for (std::int64_t j = 0; j < length; ++j) {
        out_row[j] = store_as<R>(op(x0, elem<B>::load(yb[j])));
      }
    } else {
      const auto value = store_as<R>(op(elem<A>::load(xa[0]), elem<B>::load(yb[0])));
      std::fill(out_row, out_row + length, value);
    }
  };
  if (plan.same_shapes) {
    run_row(0, plan.count, x, 1, y, 1);
    return out;
  }
  const std::int64_t row = plan.shape.empty() ? 1 : plan.shape.back();
  const std::int64_t step_a = plan.shape.empty() ? 0 : plan.strides[0].back();
  const std::int64_t step_b = plan.shape.empty() ? 0 : plan.strides[1].back();
  for_each_row(plan, [&](std::int64_t start, const std::int64_t* offsets) {
    run_row(start, row, x + offsets[0], step_a, y + offsets[1], step_b);
  });
  return out;
}

// ---------------------------------------------------------------------------
// Functors.

// Signed overflow is undefined in C++; ONNX runtimes wrap, so integer
// arithmetic goes through the unsigned type.
template <class V, class F>
V wrapping(V a, V b, F f) {
  using U = std::make_unsigned_t<V>;
  return static_cast<V>(f(static_cast<U>(a), static_cast<U>(b)));
}

template <class F>
struct arithmetic_op {
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (std::is_integral_v<V>) {
      return wrapping(a, b, F{});
    } else {
      return F{}(a, b);
    }
  }
};
using add_op = arithmetic_op<std::plus<>>;
using sub_op = arithmetic_op<std::minus<>>;
using mul_op = arithmetic_op<std::multiplies<>>;

struct division_by_zero {};

struct div_op {
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (std::is_integral_v<V>) {
      // Both trap on x86; C++ division already truncates toward zero like ONNX.
      if (b == 0) throw division_by_zero{};
      if (b == -1) return wrapping(V{0}, a, std::minus<>{});
    }
    return static_cast<V>(a / b);
  }
};

// The result takes the base's type (ONNX Pow). Integer powers are exact and
// wrap like the other integer arithmetic; an integer base with a float
// exponent goes through double and truncates, as numpy's astype does.
struct pow_op {
  template <class V, class E>
  V operator()(V base, E exponent) const {
    if constexpr (std::is_integral_v<V> && std::is_integral_v<E>) {
      if (exponent < 0) return base == 1 ? 1 : base == -1 ? (exponent % 2 == 0 ? 1 : -1) : 0;
      using U = std::make_unsigned_t<V>;
      U result = 1;
      U factor = static_cast<U>(base);
      for (auto e = static_cast<std::uint64_t>(exponent); e != 0; e >>= 1) {
        if ((e & 1U) != 0) result = static_cast<U>(result * factor);
        factor = static_cast<U>(factor * factor);
      }
      return static_cast<V>(result);
    } else if constexpr (std::is_integral_v<V>) {
      const double r = std::pow(static_cast<double>(base), static_cast<double>(exponent));
      // Out of range (or NaN) is undefined as a cast: clamp instead.
      if (!(r > static_cast<double>(std::numeric_limits<V>::min()))) {
        return std::numeric_limits<V>::min();
      }
      if (r >= static_cast<double>(std::numeric_limits<V>::max())) {
        return std::numeric_limits<V>::max();
      }
      return static_cast<V>(r);
    } else {
      return static_cast<V>(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
    }
  }
};

// NaN wins, as in numpy.minimum / numpy.maximum.
template <bool Max>
struct extremum_op {
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (std::is_floating_point_v<V>) {
      if (std::isnan(a)) return a;
      if (std::isnan(b)) return b;
    }
    return (Max ? a < b : b < a) ? b : a;
  }
};

struct equal_op {
  template <class V>
  bool operator()(V a, V b) const {
    return a == b;
  }
};
struct less_op {
  template <class V>
  bool operator()(V a, V b) const {
    return a < b;
  }
};
struct greater_op {
  template <class V>
  bool operator()(V a, V b) const {
    return a > b;
  }
};
struct less_or_equal_op {
  template <class V>
  bool operator()(V a, V b) const {
    return a <= b;
  }
};
struct greater_or_equal_op {
  template <class V>
  bool operator()(V a, V b) const {
    return a >= b;
  }
};
struct and_op {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct or_op {
  bool operator()(bool a, bool b) const { return a || b; }
};
struct xor_op {
  bool operator()(bool a, bool b) const { return a != b; }
};
struct not_op {
  bool operator()(bool x) const { return !x; }
};

struct neg_op {
  template <class V>
  V operator()(V x) const {
    if constexpr (std::is_integral_v<V>) {
      return wrapping(V{0}, x, std::minus<>{});
    } else {
      return -x;
    }
  }
};
struct abs_op {
  template <class V>
  V operator()(V x) const {
    return x < V{0} ? neg_op{}(x) : x;
  }
};
struct relu_op {
  template <class V>
  V operator()(V x) const {
    return x < V{0} ? V{0} : x;
  }  // keeps NaN
};

struct sqrt_op {
  float operator()(float x) const { return std::sqrt(x); }
};
struct reciprocal_op {
  float operator()(float x) const { return 1.0F / x; }
};
struct exp_op {
  float operator()(float x) const { return std::exp(x); }
};
struct log_op {
  float operator()(float x) const { return std::log(x); }
};
// tanh without libm's tanhf, which costs ~20 ns (it goes through expm1f) and
// was the largest non-GEMM cost of GPT-2 (its GELU). Below |x| = 0.5 the
// Taylor series to x^17 (next term under 1e-9 relative); above, 1 - 2/(e^2|x|+1)
// with expf, whose subtraction loses at most a bit there. Both within a few
// ulp of tanhf; NaN stays NaN, large |x| gives ±1.
struct tanh_op {
  float operator()(float x) const {
    const float a = std::fabs(x);
    float t = 0.0F;
    if (a < 0.5F) {
      const float z = a * a;
      float p = 6404582.0F / 10854718875.0F;
      p = p * z - 929569.0F / 638512875.0F;
      p = p * z + 21844.0F / 6081075.0F;
      p = p * z - 1382.0F / 155925.0F;
      p = p * z + 62.0F / 2835.0F;
      p = p * z - 17.0F / 315.0F;
      p = p * z + 2.0F / 15.0F;
      p = p * z - 1.0F / 3.0F;
      t = a + a * z * p;
    } else {
      t = 1.0F - 2.0F / (std::exp(2.0F * a) + 1.0F);
    }
    return std::copysign(t, x);
  }
};
struct erf_op {
  float operator()(float x) const { return std::erf(x); }
};
struct sigmoid_op {
  // Two branches so exp never overflows.
  float operator()(float x) const {
    if (x >= 0) return 1.0F / (1.0F + std::exp(-x));
    const float e = std::exp(x);
    return e / (1.0F + e);
  }
};
struct gelu_erf_op {
  float operator()(float x) const {
    return 0.5F * x * (1.0F + std::erf(x * static_cast<float>(std::numbers::sqrt2 / 2)));
  }
};
struct gelu_tanh_op {
  float operator()(float x) const {
    const auto k = static_cast<float>(std::numbers::sqrt2 * std::numbers::inv_sqrtpi);  // √(2/π)
    return 0.5F * x * (1.0F + std::tanh(k * (x + 0.044715F * x * x * x)));
  }
};

// Float to integer is undefined out of range in C++; saturate (NaN → 0)
// instead. Integer narrowing wraps, as numpy's astype does.
template <class D, class V>
typename elem<D>::value convert(V v) {
  using T = typename elem<D>::value;
  if constexpr (std::is_same_v<T, bool>) {
    return v != V{0};
  } else if constexpr (std::is_floating_point_v<T> || !std::is_floating_point_v<V>) {
    return static_cast<T>(v);
  } else {
    if (std::isnan(v)) return 0;
    if (v <= static_cast<V>(std::numeric_limits<T>::lowest())) {
      return std::numeric_limits<T>::lowest();
    }
    if (v >= static_cast<V>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

// ---------------------------------------------------------------------------
// Kernels.

template <class Types, class Op>
void unary_kernel(const node& n, inputs_t inputs, outputs_t outputs) {
  require_inputs(n, inputs, 1, 1);
  require_outputs(n, outputs, 1);
  const tensor& x = input(n, inputs, 0);
  dispatch(n, x.type(), "input 0", Types{},
           [&](auto tag) { outputs[0] = map_unary<typename decltype(tag)::type>(x, Op{}); });
}

template <class Types, class Op, bool ToBool = false>
void binary_kernel(const node& n, inputs_t inputs, outputs_t outputs) {
  require_inputs(n, inputs, 2, 2);
  require_outputs(n, outputs, 1);
  const tensor& a = input(n, inputs, 0);
  const tensor& b = input(n, inputs, 1);
  require_same_type(n, a, 0, b, 1);
  dispatch(n, a.type(), "input 0", Types{}, [&](auto tag) {
    using S = typename decltype(tag)::type;
    outputs[0] = map_binary<S, S, std::conditional_t<ToBool, bool, S>>(n, a, b, Op{});
  });
}

void div_kernel(const node& n, inputs_t inputs, outputs_t outputs) {
  try {
    binary_kernel<numeric_types, div_op>(n, inputs, outputs);
  } catch (const division_by_zero&) {
    throw invalid_argument(n.describe() + ": integer division by zero");
  }
}

void pow_kernel(const node& n, inputs_t inputs, outputs_t outputs) {
  require_inputs(n, inputs, 2, 2);
  require_outputs(n, outputs, 1);
  const tensor& base = input(n, inputs, 0);
  const tensor& exponent = input(n, inputs, 1);
  dispatch(n, base.type(), "input 0 (base)", numeric_types{}, [&](auto base_tag) {
    dispatch(n, exponent.type(), "input 1 (exponent)", numeric_types{}, [&](auto exp_tag) {
      using B = typename decltype(base_tag)::type;
      outputs[0] = map_binary<B, typename decltype(exp_tag)::type, B>(n, base, exponent, pow_op{});
    });
  });
}

template <bool Max>
void extremum_kernel(const node& n, inputs_t inputs, outputs_t outputs) {
  require_inputs(n, inputs, 1, std::numeric_limits<std::size_t>::max());
  require_outputs(n, outputs, 1);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    require_same_type(n, input(n, inputs, 0), 0, input(n, inputs, i), i);
  }
  // Validate all shapes together so the message lists every input.
  (void)plan_broadcast(n, inputs);
  dispatch(n, inputs[0]->type(), "input 0", numeric_types{}, [&](auto tag) {
    using S = typename decltype(tag)::type;
    tensor result = *inputs[0];
    for (std::size_t i = 1; i < inputs.size(); ++i) {
      result = map_binary<S, S, S>(n, result, *inputs[i], extremum_op<Max>{});
    }
    outputs[0] = std::move(result);
  });
}

void where_kernel(const node& n, inputs_t inputs, outputs_t outputs) {
  require_inputs(n, inputs, 3, 3);
  require_outputs(n, outputs, 1);
  const tensor& condition = input(n, inputs, 0);
  const tensor& x = input(n, inputs, 1);
  const tensor& y = input(n, inputs, 2);
  dispatch(n, condition.type(), "input 0 (condition)", bool_types{}, [](auto /*tag*/) {});
  require_same_type(n, x, 1, y, 2);
  const broadcast_plan plan = plan_broadcast(n, inputs);
  dispatch(n, x.type(), "input 1", any_types{}, [&](auto tag) {
    using S = typename decltype(tag)::type;
    tensor out(x.type(), plan.shape);
    const auto* c = read_ptr<bool>(condition);
    const auto* xs = read_ptr<S>(x);
    const auto* ys = read_ptr<S>(y);
    auto* o = write_ptr<S>(out);
    for_each_element(plan, [&](std::int64_t i, const std::int64_t* off) {
      o[i] = c[off[0]] ? xs[off[1]] : ys[off[2]];  // raw copy: no conversion needed
    });
    outputs[0] = std::move(out);
  });
}

void clip_kernel(const node& n, inputs_t inputs, outputs_t outputs) {
  require_inputs(n, inputs, 1, 3);
  require_outputs(n, outputs, 1);
  const tensor& x = input(n, inputs, 0);
  dispatch(n, x.type(), "input 0", numeric_types{}, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using V = typename elem<S>::value;
    V bounds[2] = {std::numeric_limits<V>::lowest(), std::numeric_limits<V>::max()};
    const char* const bound_names[2] = {"min", "max"};
    for (std::size_t i = 0; i < 2; ++i) {
      // Opset >= 11 passes bounds as optional scalar inputs, older opsets as
      // float attributes; a node uses one form or the other.
      if (i + 1 < inputs.size() && inputs[i + 1] != nullptr) {
        const tensor& bound = *inputs[i + 1];
        require_same_type(n, x, 0, bound, i + 1);
        if (bound.size() != 1) {
          throw invalid_argument(n.describe() + ": expected " + bound_names[i] +
                                 " to be a scalar, got shape " + to_string(bound.shape()));
        }
        bounds[i] = elem<S>::load(read_ptr<S>(bound)[0]);
      } else if (n.has(bound_names[i])) {
        if constexpr (std::is_floating_point_v<V>) {
          bounds[i] = n.get<float>(bound_names[i]);
        } else {
          throw invalid_argument(n.describe() + ": expected a float input for the '" +
                                 bound_names[i] + "' attribute, got " +
                                 std::string(to_string(x.type())));
        }
      }
    }
    // min > max yields max everywhere, as the spec says; NaN stays NaN.
    outputs[0] = map_unary<S>(x, [lo = bounds[0], hi = bounds[1]](V v) {
      const V raised = v < lo ? lo : v;
      return hi < raised ? hi : raised;
    });
  });
}

void gelu_kernel(const node& n, inputs_t inputs, outputs_t outputs) {
  const auto approximate = n.get<std::string>("approximate", "none");
  if (approximate == "none") return unary_kernel<float_types, gelu_erf_op>(n, inputs, outputs);
  if (approximate == "tanh") return unary_kernel<float_types, gelu_tanh_op>(n, inputs, outputs);
  throw invalid_argument(n.describe() + ": expected approximate \"none\" or \"tanh\", got \"" +
                         approximate + "\"");
}

dtype cast_target(const node& n) {
  const auto to = n.get<std::int64_t>("to");
  switch (to) {
    case 1: return dtype::float32;
    case 10: return dtype::float16;
    case 7: return dtype::int64;
    case 6: return dtype::int32;
    case 9: return dtype::boolean;
    default: break;
  }
  throw invalid_argument(n.describe() + ": unsupported cast target " + std::to_string(to) +
                         "; expected 1 (float), 10 (float16), 7 (int64), 6 (int32) or 9 (bool)");
}

void cast_kernel(const node& n, inputs_t inputs, outputs_t outputs) {
  require_inputs(n, inputs, 1, 1);
  require_outputs(n, outputs, 1);
  const tensor& x = input(n, inputs, 0);
  const dtype target = cast_target(n);
  dispatch(n, x.type(), "input 0", any_types{}, [&](auto from_tag) {
    dispatch(n, target, "cast target", any_types{}, [&](auto to_tag) {
      using S = typename decltype(from_tag)::type;
      using D = typename decltype(to_tag)::type;
      tensor out(target, x.shape());
      const auto* in = read_ptr<S>(x);
      auto* o = write_ptr<D>(out);
      for (std::int64_t i = 0; i < x.size(); ++i) {
        o[i] = elem<D>::store(convert<D>(elem<S>::load(in[i])));
      }
      outputs[0] = std::move(out);
    });
  });
}

// Exporters test attention scores for NaN (torch's masked softmax).
void isnan_kernel(const node& n, inputs_t inputs, outputs_t outputs) {
  require_inputs(n, inputs, 1, 1);
  require_outputs(n, outputs, 1);
  const tensor& x = input(n, inputs, 0);
  dispatch(n, x.type(), "input 0", float_types{}, [&](auto tag) {
    using S = typename decltype(tag)::type;
    tensor out(dtype::boolean, x.shape());
    const auto* in = read_ptr<S>(x);
    auto* o = write_ptr<bool>(out);
    for (std::int64_t i = 0; i < x.size(); ++i) o[i] = std::isnan(elem<S>::load(in[i]));
    outputs[0] = std::move(out);
  });
}

// Running sums along one axis (dynamo's exports compute positions with it).
// Integers wrap like the other integer arithmetic; float16 sums in float32.
void cumsum_kernel(const node& n, inputs_t inputs, outputs_t outputs) {
  require_inputs(n, inputs, 2, 2);
  require_outputs(n, outputs, 1);
  const tensor& x = input(n, inputs, 0);
  const tensor& axis_tensor = input(n, inputs, 1);
  std::int64_t axis = 0;
  if (axis_tensor.size() != 1 ||
      (axis_tensor.type() != dtype::int64 && axis_tensor.type() != dtype::int32)) {
    throw invalid_argument(n.describe() + ": expected axis as one int32 or int64 value, got " +
                           std::string(to_string(axis_tensor.type())) + " " +
                           to_string(axis_tensor.shape()));
  }
  axis = axis_tensor.type() == dtype::int64 ? axis_tensor.data<std::int64_t>()[0]
                                            : axis_tensor.data<std::int32_t>()[0];
  const auto rank = static_cast<std::int64_t>(x.rank());
  axis = static_cast<std::int64_t>(normalize_axis(n, axis, x.rank()));
  const bool exclusive = n.get<std::int64_t>("exclusive", 0) != 0;
  const bool reverse = n.get<std::int64_t>("reverse", 0) != 0;
  std::int64_t outer = 1;
  std::int64_t inner = 1;
  for (std::int64_t d = 0; d < rank; ++d) {
    const std::int64_t extent = x.shape()[static_cast<std::size_t>(d)];
    if (d < axis) outer *= extent;
    if (d > axis) inner *= extent;
  }
  const std::int64_t length = x.shape()[static_cast<std::size_t>(axis)];
  dispatch(n, x.type(), "input 0", numeric_types{}, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using V = typename elem<S>::value;
    tensor out(x.type(), x.shape());
    const auto* in = read_ptr<S>(x);
    auto* o = write_ptr<S>(out);
    for (std::int64_t b = 0; b < outer; ++b) {
      for (std::int64_t j = 0; j < inner; ++j) {
        V sum{};
        for (std::int64_t step = 0; step < length; ++step) {
          const std::int64_t k = reverse ? length - 1 - step : step;
          const std::int64_t at = (b * length + k) * inner + j;
          const V value = elem<S>::load(in[at]);
          if (!exclusive) sum = add_op{}(sum, value);
          o[at] = store_as<S>(sum);
          if (exclusive) sum = add_op{}(sum, value);
        }
      }
    }
    outputs[0] = std::move(out);
  });
}

void identity_kernel(const node& n, inputs_t inputs, outputs_t outputs) {
  require_inputs(n, inputs, 1, 1);
  require_outputs(n, outputs, 1);
  outputs[0] = input(n, inputs, 0);
}

void dropout_kernel(const node& n, inputs_t inputs, outputs_t outputs) {
  require_inputs(n, inputs, 1, 3);
  require_outputs(n, outputs, 2);
  const tensor& x = input(n, inputs, 0);
  // The engine only runs inference: training mode with ratio 0 keeps every
  // value (deterministic), any other ratio would need random masks.
  if (inputs.size() > 2 && inputs[2] != nullptr) {
    const auto training = inputs[2]->data<bool>();
    float ratio = 0.5F;  // ONNX's default
    if (inputs[1] != nullptr && inputs[1]->size() == 1) {
      const tensor& r = *inputs[1];
      if (r.type() == dtype::float32) ratio = r.data<float>()[0];
      if (r.type() == dtype::float16) ratio = elem<half>::load(*read_ptr<half>(r));
    }
    if (!training.empty() && training[0] && ratio != 0.0F) {
      throw invalid_argument(n.describe() +
                             ": unsupported training_mode true with a non-zero ratio (random "
                             "dropout); the engine runs inference only");
    }
  }
  outputs[0] = x;
  if (outputs.size() > 1) {
    tensor mask(dtype::boolean, x.shape());
    std::ranges::fill(mask.data<bool>(), true);
    outputs[1] = std::move(mask);
  }
}

constexpr kernel_entry kernel_table[] = {
    {"Add", binary_kernel<numeric_types, add_op>},
    {"Sub", binary_kernel<numeric_types, sub_op>},
    {"Mul", binary_kernel<numeric_types, mul_op>},
    {"Div", div_kernel},
    {"Pow", pow_kernel},
    {"Sqrt", unary_kernel<float_types, sqrt_op>},
    {"Reciprocal", unary_kernel<float_types, reciprocal_op>},
    {"Exp", unary_kernel<float_types, exp_op>},
    {"Log", unary_kernel<float_types, log_op>},
    {"Tanh", unary_kernel<float_types, tanh_op>},
    {"Erf", unary_kernel<float_types, erf_op>},
    {"Neg", unary_kernel<numeric_types, neg_op>},
    {"Abs", unary_kernel<numeric_types, abs_op>},
    {"Relu", unary_kernel<numeric_types, relu_op>},
    {"Sigmoid", unary_kernel<float_types, sigmoid_op>},
    {"Gelu", gelu_kernel},
    {"Equal", binary_kernel<any_types, equal_op, true>},
    {"Less", binary_kernel<numeric_types, less_op, true>},
    {"Greater", binary_kernel<numeric_types, greater_op, true>},
    {"LessOrEqual", binary_kernel<numeric_types, less_or_equal_op, true>},
    {"GreaterOrEqual", binary_kernel<numeric_types, greater_or_equal_op, true>},
    {"IsNaN", isnan_kernel},
    {"CumSum", cumsum_kernel},
    {"Not", unary_kernel<bool_types, not_op>},
    {"And", binary_kernel<bool_types, and_op>},
    {"Or", binary_kernel<bool_types, or_op>},
    {"Xor", binary_kernel<bool_types, xor_op>},
    {"Where", where_kernel},
    {"Min", extremum_kernel<false>},
    {"Max", extremum_kernel<true>},
    {"Clip", clip_kernel},
    {"Cast", cast_kernel},
    {"Identity", identity_kernel},
    {"Dropout", dropout_kernel},
};

}  // namespace

std::span<const kernel_entry> elementwise_kernels() { return kernel_table; }

}  // namespace coolbench::engine::cpu
