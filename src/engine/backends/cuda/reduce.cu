// Reductions: one block per output row, threads striding over the row and a
// shared-memory tree to finish (block_reduce). ReduceSum/Mean/Max, Softmax,
// LogSoftmax and LayerNormalization accumulate in float32 for float dtypes.
#include <cfloat>

#include "engine/backends/cuda/common.cuh"

namespace coolbench::engine::cuda {
namespace {

struct sum_op {
  template <class V>
  __device__ V operator()(V a, V b) const {
    return a + b;
  }
};
struct max_op {
  template <class V>
  __device__ V operator()(V a, V b) const {
    return a < b ? b : a;
  }
};

/// Combines every thread's value; all threads get the result.
template <class V, class Op>
__device__ V block_reduce(V value, Op op) {
  static_assert(sizeof(V) <= sizeof(double));
  __shared__ double scratch_storage[k_block];  // 8-byte aligned for every V
  V* scratch = reinterpret_cast<V*>(scratch_storage);
  __syncthreads();  // the previous call's readers are done with scratch
  scratch[threadIdx.x] = value;
  __syncthreads();
  for (unsigned step = k_block / 2; step > 0; step /= 2) {
    if (threadIdx.x < step)
      scratch[threadIdx.x] = op(scratch[threadIdx.x], scratch[threadIdx.x + step]);
    __syncthreads();
  }
  return scratch[0];
}

template <class V>
__device__ V lowest() {
  if constexpr (std::is_same_v<V, float>) {
    return -INFINITY;
  } else {
    return static_cast<V>(V{1} << (sizeof(V) * 8 - 1));  // the most negative integer
  }
}

template <reduce_kind Kind, class T>
__global__ void reduce_kernel(const T* x, T* y, index_plan kept, index_plan reduced) {
  using V = math_t<T>;
  const std::int64_t base = offset_of(kept, 0, blockIdx.x);
  V acc = Kind == reduce_kind::max ? lowest<V>() : V{};
  for (std::int64_t r = threadIdx.x; r < reduced.count; r += blockDim.x) {
    const V v = load(x, base + offset_of(reduced, 0, r));
    if constexpr (Kind == reduce_kind::max) {
      acc = acc < v || v != v ? v : acc;  // NaN wins, as on the CPU
    } else {
      acc += v;
    }
  }
  if constexpr (Kind == reduce_kind::max) {
    acc = block_reduce(acc, max_op{});
  } else {
    acc = block_reduce(acc, sum_op{});
  }
  if (threadIdx.x == 0) {
    if constexpr (Kind == reduce_kind::mean) {
      y[blockIdx.x] = narrow<T>(reduced.count > 0 ? acc / static_cast<V>(reduced.count) : V{});
    } else {
      y[blockIdx.x] = narrow<T>(acc);
    }
  }
}

template <class T>
__global__ void softmax_kernel(const T* x, T* y, std::int64_t n, std::int64_t inner, bool log) {
  const std::int64_t row = blockIdx.x;
  const std::int64_t base = (row / inner) * n * inner + row % inner;
  float peak = -INFINITY;
  for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x)
    peak = fmaxf(peak, load(x, base + j * inner));
  peak = block_reduce(peak, max_op{});
  float total = 0;
  for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x)
    total += expf(load(x, base + j * inner) - peak);
  total = block_reduce(total, sum_op{});
  const float log_total = logf(total);
  for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float shifted = load(x, base + j * inner) - peak;
    y[base + j * inner] = narrow<T>(log ? shifted - log_total : expf(shifted) / total);
  }
}

template <class T>
__global__ void layer_norm_kernel(const T* x, const T* scale, const T* bias, T* y, float* mean_out,
                                  float* inv_std_out, std::int64_t n, float epsilon) {
  const std::int64_t base = blockIdx.x * n;
  float total = 0;
  for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) total += load(x, base + j);
  const float mean = block_reduce(total, sum_op{}) / static_cast<float>(n);
  float squares = 0;
  for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float d = load(x, base + j) - mean;
    squares += d * d;
  }
  const float inv_std = rsqrtf(block_reduce(squares, sum_op{}) / static_cast<float>(n) + epsilon);
  for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    float v = (load(x, base + j) - mean) * inv_std * load(scale, j);
    if (bias != nullptr) v += load(bias, j);
    y[base + j] = narrow<T>(v);
  }
  if (threadIdx.x == 0) {
    if (mean_out != nullptr) mean_out[blockIdx.x] = mean;
    if (inv_std_out != nullptr) inv_std_out[blockIdx.x] = inv_std;
  }
}

template <class T>
__global__ void cumsum_kernel(const T* x, T* y, std::int64_t outer, std::int64_t n,
                              std::int64_t inner, bool exclusive, bool reverse) {
  for (std::int64_t line = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x;
       line < outer * inner; line += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t base = (line / inner) * n * inner + line % inner;
    math_t<T> sum{};
    for (std::int64_t step = 0; step < n; ++step) {
      const std::int64_t at = base + (reverse ? n - 1 - step : step) * inner;
      const math_t<T> v = load(x, at);
      if (!exclusive) sum += v;
      y[at] = narrow<T>(sum);
      if (exclusive) sum += v;
    }
  }
}

unsigned blocks_for_rows(std::int64_t rows) {
  if (rows > 0x7FFFFFFF) throw invalid_argument("the CUDA reductions take at most 2^31-1 rows");
  return static_cast<unsigned>(rows);
}

}  // namespace

void launch_reduce(reduce_kind kind, dtype type, const void* x, void* y, std::int64_t outputs,
                   const index_plan& kept, const index_plan& reduced, void* stream) {
  if (outputs == 0) return;
  dispatch(type, numeric_list{}, [&](auto t) {
    using T = typename decltype(t)::type;
    const auto launch = [&](auto kernel) {
      kernel<<<blocks_for_rows(outputs), k_block, 0, as_stream(stream)>>>(
          static_cast<const T*>(x), static_cast<T*>(y), kept, reduced);
    };
    switch (kind) {
      case reduce_kind::sum: launch(reduce_kernel<reduce_kind::sum, T>); break;
      case reduce_kind::mean: launch(reduce_kernel<reduce_kind::mean, T>); break;
      case reduce_kind::max: launch(reduce_kernel<reduce_kind::max, T>); break;
    }
  });
  check_launch();
}

void launch_softmax(dtype type, bool log, const void* x, void* y, std::int64_t outer,
                    std::int64_t n, std::int64_t inner, void* stream) {
  if (outer * inner == 0 || n == 0) return;
  dispatch(type, float_list{}, [&](auto t) {
    using T = typename decltype(t)::type;
    softmax_kernel<T><<<blocks_for_rows(outer * inner), k_block, 0, as_stream(stream)>>>(
        static_cast<const T*>(x), static_cast<T*>(y), n, inner, log);
  });
  check_launch();
}

void launch_layer_norm(dtype type, const void* x, const void* scale, const void* bias, void* y,
                       float* mean, float* inv_std, std::int64_t rows, std::int64_t n,
                       float epsilon, void* stream) {
  if (rows == 0 || n == 0) return;
  dispatch(type, float_list{}, [&](auto t) {
    using T = typename decltype(t)::type;
    layer_norm_kernel<T><<<blocks_for_rows(rows), k_block, 0, as_stream(stream)>>>(
        static_cast<const T*>(x), static_cast<const T*>(scale), static_cast<const T*>(bias),
        static_cast<T*>(y), mean, inv_std, n, epsilon);
  });
  check_launch();
}

void launch_cumsum(dtype type, const void* x, void* y, std::int64_t outer, std::int64_t n,
                   std::int64_t inner, bool exclusive, bool reverse, void* stream) {
  if (outer * inner == 0 || n == 0) return;
  dispatch(type, numeric_list{}, [&](auto t) {
    using T = typename decltype(t)::type;
    cumsum_kernel<T><<<grid_for(outer * inner), k_block, 0, as_stream(stream)>>>(
        static_cast<const T*>(x), static_cast<T*>(y), outer, n, inner, exclusive, reverse);
  });
  check_launch();
}

}  // namespace coolbench::engine::cuda
