// The elementwise kernels: one grid-stride map per arity over op functors and
// element types, with the broadcast indexer of common.cuh. Arithmetic runs in
// math_t<T> (float32 for float16 and bfloat16).
#include <cmath>

#include "engine/backends/cuda/common.cuh"

namespace coolbench::engine::cuda {
namespace {

template <unary_op Op, class V>
__device__ __forceinline__ auto apply_unary(V x) {
  if constexpr (Op == unary_op::sqrt) return sqrtf(x);
  if constexpr (Op == unary_op::reciprocal) return 1.0F / x;
  if constexpr (Op == unary_op::exp) return expf(x);
  if constexpr (Op == unary_op::log) return logf(x);
  if constexpr (Op == unary_op::tanh) return tanhf(x);
  if constexpr (Op == unary_op::erf) return erff(x);
  if constexpr (Op == unary_op::sigmoid) return 1.0F / (1.0F + expf(-x));
  if constexpr (Op == unary_op::gelu_erf) return 0.5F * x * (1.0F + erff(x * 0.70710678118654752F));
  if constexpr (Op == unary_op::gelu_tanh) {
    return 0.5F * x * (1.0F + tanhf(0.79788456080286536F * (x + 0.044715F * x * x * x)));
  }
  if constexpr (Op == unary_op::neg) return static_cast<V>(-x);
  if constexpr (Op == unary_op::abs) return x < V{} ? static_cast<V>(-x) : x;
  if constexpr (Op == unary_op::relu) return x < V{} ? V{} : x;
  if constexpr (Op == unary_op::logical_not) return !x;
  if constexpr (Op == unary_op::isnan) return isnan(x);
}

template <unary_op Op, class T, class Out>
__global__ void unary_kernel(const T* x, Out* y, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < count;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    y[i] = narrow<Out>(apply_unary<Op>(load(x, i)));
  }
}

template <unary_op Op, class List>
void unary_over(List list, dtype type, const void* x, void* y, std::int64_t count,
                cudaStream_t stream) {
  dispatch(type, list, [&](auto t) {
    using T = typename decltype(t)::type;
    using Out = std::conditional_t<Op == unary_op::isnan, bool, T>;
    unary_kernel<Op, T, Out><<<grid_for(count), k_block, 0, stream>>>(static_cast<const T*>(x),
                                                                      static_cast<Out*>(y), count);
  });
}

template <binary_op Op, class V, class W>
__device__ __forceinline__ auto apply_binary(V a, W b) {
  if constexpr (Op == binary_op::add) return static_cast<V>(a + b);
  if constexpr (Op == binary_op::sub) return static_cast<V>(a - b);
  if constexpr (Op == binary_op::mul) return static_cast<V>(a * b);
  if constexpr (Op == binary_op::div) {
    if constexpr (std::is_integral_v<V>) {
      return b == W{} ? V{} : static_cast<V>(a / b);  // the CPU backend refuses; no trap here
    } else {
      return a / b;
    }
  }
  if constexpr (Op == binary_op::pow) {
    if constexpr (std::is_integral_v<V>) {
      return static_cast<V>(pow(static_cast<double>(a), static_cast<double>(b)));
    } else {
      return powf(a, static_cast<float>(b));
    }
  }
  if constexpr (Op == binary_op::min) return a < b ? a : b;
  if constexpr (Op == binary_op::max) return a < b ? b : a;
  if constexpr (Op == binary_op::equal) return a == b;
  if constexpr (Op == binary_op::less) return a < b;
  if constexpr (Op == binary_op::greater) return a > b;
  if constexpr (Op == binary_op::less_equal) return a <= b;
  if constexpr (Op == binary_op::greater_equal) return a >= b;
  if constexpr (Op == binary_op::logical_and) return a && b;
  if constexpr (Op == binary_op::logical_or) return a || b;
  if constexpr (Op == binary_op::logical_xor) return a != b;
}

constexpr bool yields_bool(binary_op op) {
  return op == binary_op::equal || op == binary_op::less || op == binary_op::greater ||
         op == binary_op::less_equal || op == binary_op::greater_equal;
}

template <binary_op Op, class A, class B, class Out>
__global__ void binary_kernel(const A* a, const B* b, Out* y, index_plan plan) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < plan.count;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    y[i] = narrow<Out>(
        apply_binary<Op>(load(a, offset_of(plan, 0, i)), load(b, offset_of(plan, 1, i))));
  }
}

template <binary_op Op, class List>
void binary_over(List list, dtype a_type, dtype b_type, const void* a, const void* b, void* y,
                 const index_plan& plan, cudaStream_t stream) {
  dispatch(a_type, list, [&](auto ta) {
    using A = typename decltype(ta)::type;
    using Out = std::conditional_t<yields_bool(Op), bool, A>;
    const auto launch = [&](auto tb) {
      using B = typename decltype(tb)::type;
      binary_kernel<Op, A, B, Out><<<grid_for(plan.count), k_block, 0, stream>>>(
          static_cast<const A*>(a), static_cast<const B*>(b), static_cast<Out*>(y), plan);
    };
    if constexpr (Op == binary_op::pow) {
      dispatch(b_type, numeric_list{}, launch);
    } else {
      launch(tag<A>{});
    }
  });
}

template <class T>
__global__ void where_kernel(const bool* cond, const T* a, const T* b, T* y, index_plan plan) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < plan.count;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    y[i] = cond[offset_of(plan, 0, i)] ? a[offset_of(plan, 1, i)] : b[offset_of(plan, 2, i)];
  }
}

template <class From, class To>
__global__ void cast_kernel(const From* x, To* y, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < count;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    if constexpr (std::is_same_v<To, bool>) {
      y[i] = load(x, i) != math_t<From>{};
    } else if constexpr (std::is_integral_v<To> && !std::is_integral_v<math_t<From>>) {
      const float v = load(x, i);  // C++'s truncation; NaN becomes 0 like the CPU's saturating cast
      y[i] = isnan(v) ? To{} : static_cast<To>(v);
    } else {
      y[i] = narrow<To>(load(x, i));
    }
  }
}

template <class T>
__global__ void clip_kernel(const T* x, T* y, std::int64_t count, bool has_lo, math_t<T> lo,
                            bool has_hi, math_t<T> hi) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < count;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    math_t<T> v = load(x, i);
    if (has_lo && v < lo) v = lo;
    if (has_hi && hi < v) v = hi;
    y[i] = narrow<T>(v);
  }
}

}  // namespace

void launch_unary(unary_op op, dtype type, const void* x, void* y, std::int64_t count,
                  void* stream) {
  if (count == 0) return;
  const cudaStream_t s = as_stream(stream);
  switch (op) {
    case unary_op::sqrt: unary_over<unary_op::sqrt>(float_list{}, type, x, y, count, s); break;
    case unary_op::reciprocal:
      unary_over<unary_op::reciprocal>(float_list{}, type, x, y, count, s);
      break;
    case unary_op::exp: unary_over<unary_op::exp>(float_list{}, type, x, y, count, s); break;
    case unary_op::log: unary_over<unary_op::log>(float_list{}, type, x, y, count, s); break;
    case unary_op::tanh: unary_over<unary_op::tanh>(float_list{}, type, x, y, count, s); break;
    case unary_op::erf: unary_over<unary_op::erf>(float_list{}, type, x, y, count, s); break;
    case unary_op::sigmoid:
      unary_over<unary_op::sigmoid>(float_list{}, type, x, y, count, s);
      break;
    case unary_op::gelu_erf:
      unary_over<unary_op::gelu_erf>(float_list{}, type, x, y, count, s);
      break;
    case unary_op::gelu_tanh:
      unary_over<unary_op::gelu_tanh>(float_list{}, type, x, y, count, s);
      break;
    case unary_op::neg: unary_over<unary_op::neg>(numeric_list{}, type, x, y, count, s); break;
    case unary_op::abs: unary_over<unary_op::abs>(numeric_list{}, type, x, y, count, s); break;
    case unary_op::relu: unary_over<unary_op::relu>(numeric_list{}, type, x, y, count, s); break;
    case unary_op::logical_not:
      unary_over<unary_op::logical_not>(type_list<bool>{}, type, x, y, count, s);
      break;
    case unary_op::isnan: unary_over<unary_op::isnan>(float_list{}, type, x, y, count, s); break;
  }
  check_launch();
}

void launch_binary(binary_op op, dtype a_type, dtype b_type, const void* a, const void* b, void* y,
                   const index_plan& plan, void* stream) {
  if (plan.count == 0) return;
  const cudaStream_t s = as_stream(stream);
  const auto numeric = [&](auto op_tag) {
    binary_over<decltype(op_tag)::value>(numeric_list{}, a_type, b_type, a, b, y, plan, s);
  };
  const auto logical = [&](auto op_tag) {
    binary_over<decltype(op_tag)::value>(type_list<bool>{}, a_type, b_type, a, b, y, plan, s);
  };
  switch (op) {
    case binary_op::add: numeric(std::integral_constant<binary_op, binary_op::add>{}); break;
    case binary_op::sub: numeric(std::integral_constant<binary_op, binary_op::sub>{}); break;
    case binary_op::mul: numeric(std::integral_constant<binary_op, binary_op::mul>{}); break;
    case binary_op::div: numeric(std::integral_constant<binary_op, binary_op::div>{}); break;
    case binary_op::pow: numeric(std::integral_constant<binary_op, binary_op::pow>{}); break;
    case binary_op::min: numeric(std::integral_constant<binary_op, binary_op::min>{}); break;
    case binary_op::max: numeric(std::integral_constant<binary_op, binary_op::max>{}); break;
    case binary_op::equal:
      binary_over<binary_op::equal>(any_list{}, a_type, b_type, a, b, y, plan, s);
      break;
    case binary_op::less: numeric(std::integral_constant<binary_op, binary_op::less>{}); break;
    case binary_op::greater:
      numeric(std::integral_constant<binary_op, binary_op::greater>{});
      break;
    case binary_op::less_equal:
      numeric(std::integral_constant<binary_op, binary_op::less_equal>{});
      break;
    case binary_op::greater_equal:
      numeric(std::integral_constant<binary_op, binary_op::greater_equal>{});
      break;
    case binary_op::logical_and:
      logical(std::integral_constant<binary_op, binary_op::logical_and>{});
      break;
    case binary_op::logical_or:
      logical(std::integral_constant<binary_op, binary_op::logical_or>{});
      break;
    case binary_op::logical_xor:
      logical(std::integral_constant<binary_op, binary_op::logical_xor>{});
      break;
  }
  check_launch();
}

void launch_where(dtype type, const void* cond, const void* a, const void* b, void* y,
                  const index_plan& plan, void* stream) {
  if (plan.count == 0) return;
  dispatch_bytes(size_of(type), [&](auto t) {
    using T = typename decltype(t)::type;
    where_kernel<T><<<grid_for(plan.count), k_block, 0, as_stream(stream)>>>(
        static_cast<const bool*>(cond), static_cast<const T*>(a), static_cast<const T*>(b),
        static_cast<T*>(y), plan);
  });
  check_launch();
}

void launch_cast(dtype from, dtype to, const void* x, void* y, std::int64_t count, void* stream) {
  if (count == 0) return;
  dispatch(from, any_list{}, [&](auto f) {
    dispatch(to, any_list{}, [&](auto t) {
      using From = typename decltype(f)::type;
      using To = typename decltype(t)::type;
      cast_kernel<From, To><<<grid_for(count), k_block, 0, as_stream(stream)>>>(
          static_cast<const From*>(x), static_cast<To*>(y), count);
    });
  });
  check_launch();
}

void launch_clip(dtype type, const void* x, void* y, std::int64_t count, bool has_lo, double lo,
                 bool has_hi, double hi, void* stream) {
  if (count == 0) return;
  dispatch(type, numeric_list{}, [&](auto t) {
    using T = typename decltype(t)::type;
    using V = math_t<T>;
    // An absent bound is never converted (an infinity has no integer value).
    clip_kernel<T><<<grid_for(count), k_block, 0, as_stream(stream)>>>(
        static_cast<const T*>(x), static_cast<T*>(y), count, has_lo,
        has_lo ? static_cast<V>(lo) : V{}, has_hi, has_hi ? static_cast<V>(hi) : V{});
  });
  check_launch();
}

}  // namespace coolbench::engine::cuda
