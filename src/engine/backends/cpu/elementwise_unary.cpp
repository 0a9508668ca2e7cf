// Unary elementwise kernels: math, activations (Relu, Sigmoid, Gelu), Clip,
// Cast, CastLike, IsNaN, CumSum, Identity and inference-mode Dropout.
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
    case 16: return dtype::bfloat16;
    default: break;
  }
  throw invalid_argument(n.describe() + ": unsupported cast target " + std::to_string(to) +
                         "; expected 1 (float), 10 (float16), 16 (bfloat16), 7 (int64), "
                         "6 (int32) or 9 (bool)");
}

// Cast takes its target from the attribute `to`; CastLike from its second
// input's dtype (its `saturate`, opset 19, only concerns float8 types).
template <bool Like>
void cast_kernel(const node& n, inputs_t inputs, outputs_t outputs) {
  require_inputs(n, inputs, Like ? 2 : 1, Like ? 2 : 1);
  require_outputs(n, outputs, 1);
  const tensor& x = input(n, inputs, 0);
  const dtype target = Like ? input(n, inputs, 1).type() : cast_target(n);
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
      if (r.type() == dtype::bfloat16) ratio = elem<bf16>::load(*read_ptr<bf16>(r));
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
    {"IsNaN", isnan_kernel},
    {"CumSum", cumsum_kernel},
    {"Not", unary_kernel<bool_types, not_op>},
    {"Clip", clip_kernel},
    {"Cast", cast_kernel<false>},
    {"CastLike", cast_kernel<true>},
    {"Identity", identity_kernel},
    {"Dropout", dropout_kernel},
};

}  // namespace
}  // namespace elementwise_detail

std::span<const kernel_entry> elementwise_unary_kernels() {
  return elementwise_detail::kernel_table;
}

}  // namespace coolbench::engine::cpu
