// Binary and variadic elementwise kernels: arithmetic, Pow, comparisons,
// logic, Where, Min and Max, broadcasting multidirectionally.
#include "engine/backends/cpu/elementwise.hpp"

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numbers>
#include <string>
#include <type_traits>

#include "engine/backends/cpu/elementwise_support.hpp"

namespace coolbench::engine::cpu {
namespace elementwise_detail {
namespace {

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

// ---------------------------------------------------------------------------
// Kernels.

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

constexpr kernel_entry kernel_table[] = {
    {"Add", binary_kernel<numeric_types, add_op>},
    {"Sub", binary_kernel<numeric_types, sub_op>},
    {"Mul", binary_kernel<numeric_types, mul_op>},
    {"Div", div_kernel},
    {"Pow", pow_kernel},
    {"Equal", binary_kernel<any_types, equal_op, true>},
    {"Less", binary_kernel<numeric_types, less_op, true>},
    {"Greater", binary_kernel<numeric_types, greater_op, true>},
    {"LessOrEqual", binary_kernel<numeric_types, less_or_equal_op, true>},
    {"GreaterOrEqual", binary_kernel<numeric_types, greater_or_equal_op, true>},
    {"And", binary_kernel<bool_types, and_op>},
    {"Or", binary_kernel<bool_types, or_op>},
    {"Xor", binary_kernel<bool_types, xor_op>},
    {"Where", where_kernel},
    {"Min", extremum_kernel<false>},
    {"Max", extremum_kernel<true>},
};

}  // namespace
}  // namespace elementwise_detail

std::span<const kernel_entry> elementwise_binary_kernels() {
  return elementwise_detail::kernel_table;
}

}  // namespace coolbench::engine::cpu
