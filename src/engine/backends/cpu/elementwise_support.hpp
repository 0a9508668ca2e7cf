// What the elementwise kernel files share: element storage per dtype (float16
// and bfloat16 load to float), dtype dispatch, argument checks, the
// broadcasting plan, the unary/binary map loops and wrapping integer
// arithmetic. Internal to elementwise_unary.cpp and elementwise_binary.cpp.
#pragma once

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

namespace coolbench::engine::cpu::elementwise_detail {

// ---------------------------------------------------------------------------
// Element storage. Kernels are written against a storage tag S: elem<S>::raw
// is what the buffer holds, elem<S>::value what the math runs on. float16 has
// no C++ type, so it gets a tag that loads to float and stores back as bits.

struct half {};
struct bf16 {};

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

template <>
struct elem<bf16> {
  using raw = std::uint16_t;
  using value = float;
  static value load(raw r) { return bfloat16_to_float(r); }
  static raw store(value v) { return float_to_bfloat16(v); }
};

template <class S>
inline constexpr dtype dtype_for = dtype_of<S>();
template <>
inline constexpr dtype dtype_for<half> = dtype::float16;
template <>
inline constexpr dtype dtype_for<bf16> = dtype::bfloat16;

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
using float_types = types<float, half, bf16>;
using numeric_types = types<float, half, bf16, std::int64_t, std::int32_t>;
using any_types = types<float, half, bf16, std::int64_t, std::int32_t, bool>;
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

inline void require_inputs(const node& n, inputs_t inputs, std::size_t min, std::size_t max) {
  if (inputs.size() < min || inputs.size() > max) {
    const std::string expected = min == max ? std::to_string(min)
                                 : max == std::numeric_limits<std::size_t>::max()
                                     ? "at least " + std::to_string(min)
                                     : std::to_string(min) + " to " + std::to_string(max);
    throw invalid_argument(n.describe() + ": expected " + expected + " inputs, got " +
                           std::to_string(inputs.size()));
  }
}

inline void require_outputs(const node& n, outputs_t outputs, std::size_t max) {
  if (outputs.empty() || outputs.size() > max) {
    throw invalid_argument(n.describe() + ": expected 1 to " + std::to_string(max) +
                           " outputs, got " + std::to_string(outputs.size()));
  }
}

inline void require_same_type(const node& n, const tensor& a, std::size_t ia, const tensor& b,
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

inline broadcast_plan plan_broadcast(const node& n, inputs_t operands) {
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

}  // namespace coolbench::engine::cpu::elementwise_detail
