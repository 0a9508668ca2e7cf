// Kernels that move elements without arithmetic: the strided copy behind
// Transpose, Expand, Slice, Split and a Concat of more than 8 parts; a
// Concat's pieces in one launch; Gather and GatherND; fills,
// ranges and triangles. They move elements as unsigned integers of the
// element's size, so one instantiation serves every dtype of that size.
#include <cstring>

#include "engine/backends/cuda/common.cuh"
#include "engine/backends/cuda/launch_shapes.hpp"

namespace coolbench::engine::cuda {
namespace {

// f(tag<C>) with C the unsigned type of a `bytes`-wide piece (1, 2, 4, 8 or
// 16): Concat and Gather move whole runs of elements as the widest piece
// their sizes and addresses allow.
template <class F>
void dispatch_piece(std::int64_t bytes, F&& f) {
  if (bytes == 16) {
    f(tag<uint4>{});
  } else {
    dispatch_bytes(static_cast<std::size_t>(bytes), f);
  }
}

template <class T>
__global__ void strided_copy_kernel(const T* in, T* out, index_plan plan) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < plan.count;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    out[offset_of(plan, 3, i)] = in[offset_of(plan, 0, i)];
  }
}

// The parts' addresses beside the launch's layout: a kernel argument, so
// the concat needs no device-side table.
struct concat_sources {
  const void* from[k_concat_parts];
};

template <class C>
__global__ void concat_kernel(concat_launch l, concat_sources s, C* out) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < l.count;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    int part = 0;
    const std::int64_t from = concat_source(l, i, part);
    out[i] = static_cast<const C*>(s.from[part])[from];
  }
}

// Gather moves whole rows of `inner` elements: each thread a chunk of up to
// 16 bytes of one (launch_gather picks the widest the rows and addresses
// allow), its index math in 32 bits where the tensors fit. Element by element
// in 64 bits, three 64-bit divisions an element took BERT's embedding
// gathers to 45 us a run on the H100 (docs/perf/engine.md).
template <class T, class I, class U>
__global__ void gather_kernel(const T* data, const I* indices, T* out, U axis_size, U inner,
                              U index_count, U count, int* error_flag, int error_code) {
  for (U i = blockIdx.x * U{blockDim.x} + threadIdx.x; i < count; i += U{gridDim.x} * blockDim.x) {
    const U row = i / inner, in_inner = i - row * inner;
    const U o = row / index_count, k = row - o * index_count;
    std::int64_t index = indices[k];
    if (index < 0) index += axis_size;
    if (index >= 0 && index < axis_size) {
      out[i] = data[(o * axis_size + static_cast<U>(index)) * inner + in_inner];
    } else {
      out[i] = T{};
      atomicCAS(error_flag, 0, error_code);
    }
  }
}

struct nd_dims {
  std::int64_t size[k_max_rank];
};

template <class T>
__global__ void gather_nd_kernel(const T* data, const std::int64_t* indices, T* out,
                                 std::int64_t per_batch, int depth, nd_dims dims,
                                 std::int64_t gathered, std::int64_t slice, std::int64_t count,
                                 int* error_flag, int error_code) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < count;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t s = i % slice;
    const std::int64_t tuple = i / slice;  // batch * per_batch + position
    const std::int64_t b = tuple / per_batch;
    std::int64_t offset = 0;
    bool inside = true;
    for (int d = 0; d < depth; ++d) {
      std::int64_t index = indices[tuple * depth + d];
      if (index < 0) index += dims.size[d];
      inside = inside && index >= 0 && index < dims.size[d];
      offset = offset * dims.size[d] + index;
    }
    if (inside) {
      out[i] = data[(b * gathered + offset) * slice + s];
    } else {
      out[i] = T{};
      atomicCAS(error_flag, 0, error_code);
    }
  }
}

template <class T>
__global__ void fill_kernel(T value, T* out, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < count;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    out[i] = value;
  }
}

template <class T>
__global__ void range_kernel(double start, double delta, std::uint64_t int_start,
                             std::uint64_t int_delta, T* out, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < count;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    if constexpr (std::is_floating_point_v<T>) {
      out[i] = static_cast<T>(start + static_cast<double>(i) * delta);
    } else {
      out[i] = static_cast<T>(
          static_cast<std::int64_t>(int_start + static_cast<std::uint64_t>(i) * int_delta));
    }
  }
}

template <class T>
__global__ void trilu_kernel(const T* in, T* out, std::int64_t rows, std::int64_t cols,
                             std::int64_t k, bool upper, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < count;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t col = i % cols;
    const std::int64_t row = (i / cols) % rows;
    const bool keep = upper ? col - row >= k : col - row <= k;
    out[i] = keep ? in[i] : T{};
  }
}

}  // namespace

void launch_strided_copy(std::size_t element, const void* in, void* out, const index_plan& plan,
                         void* stream) {
  if (plan.count == 0) return;
  dispatch_bytes(element, [&](auto t) {
    using T = typename decltype(t)::type;
    strided_copy_kernel<T><<<grid_for(plan.count), k_block, 0, as_stream(stream)>>>(
        static_cast<const T*>(in), static_cast<T*>(out), plan);
  });
  check_launch();
}

void launch_concat(const concat_launch& l, const void* const* from, void* out, void* stream) {
  if (l.count == 0) return;
  concat_sources s{};
  for (int p = 0; p < l.parts; ++p) s.from[p] = from[p];
  dispatch_piece(l.chunk, [&](auto t) {
    using C = typename decltype(t)::type;
    concat_kernel<<<grid_for(l.count), k_block, 0, as_stream(stream)>>>(l, s, static_cast<C*>(out));
  });
  check_launch();
}

void launch_gather(std::size_t element, const void* data, const void* indices, bool indices_int64,
                   void* out, std::int64_t outer, std::int64_t axis_size, std::int64_t inner,
                   std::int64_t index_count, int* error_flag, int error_code, void* stream) {
  if (outer * index_count * inner == 0) return;
  // The widest chunk a row of `inner` elements is a whole number of, at addresses it aligns.
  const std::int64_t row_bytes = inner * static_cast<std::int64_t>(element);
  std::int64_t chunk = 16;
  while (chunk > static_cast<std::int64_t>(element) &&
         (row_bytes % chunk != 0 || reinterpret_cast<std::uintptr_t>(data) % chunk != 0 ||
          reinterpret_cast<std::uintptr_t>(out) % chunk != 0)) {
    chunk /= 2;
  }
  const std::int64_t chunks = row_bytes / chunk;  // a row's
  const std::int64_t count = outer * index_count * chunks;
  // 32-bit index math where every offset fits (the data's and the output's).
  const bool narrow =
      count < 0x7FFFFFFF && outer * axis_size * chunks < 0x7FFFFFFF && axis_size < 0x7FFFFFFF;
  dispatch_piece(chunk, [&](auto t) {
    using T = typename decltype(t)::type;
    const auto run = [&](auto* typed_indices, auto index) {
      using U = decltype(index);
      gather_kernel<<<grid_for(count), k_block, 0, as_stream(stream)>>>(
          static_cast<const T*>(data), typed_indices, static_cast<T*>(out),
          static_cast<U>(axis_size), static_cast<U>(chunks), static_cast<U>(index_count),
          static_cast<U>(count), error_flag, error_code);
    };
    const auto with_index = [&](auto* typed_indices) {
      if (narrow) {
        run(typed_indices, std::uint32_t{});
      } else {
        run(typed_indices, std::int64_t{});
      }
    };
    if (indices_int64) {
      with_index(static_cast<const std::int64_t*>(indices));
    } else {
      with_index(static_cast<const std::int32_t*>(indices));
    }
  });
  check_launch();
}

void launch_gather_nd(std::size_t element, const void* data, const std::int64_t* indices, void* out,
                      std::int64_t batch, std::int64_t per_batch, int index_depth,
                      const std::int64_t* gathered_dims, std::int64_t slice, int* error_flag,
                      int error_code, void* stream) {
  const std::int64_t count = batch * per_batch * slice;
  if (count == 0) return;
  nd_dims dims{};
  std::int64_t gathered = 1;
  for (int d = 0; d < index_depth; ++d) {
    dims.size[d] = gathered_dims[d];
    gathered *= gathered_dims[d];
  }
  dispatch_bytes(element, [&](auto t) {
    using T = typename decltype(t)::type;
    gather_nd_kernel<T><<<grid_for(count), k_block, 0, as_stream(stream)>>>(
        static_cast<const T*>(data), indices, static_cast<T*>(out), per_batch, index_depth, dims,
        gathered, slice, count, error_flag, error_code);
  });
  check_launch();
}

void launch_fill(std::size_t element, const void* value, void* out, std::int64_t count,
                 void* stream) {
  if (count == 0) return;
  dispatch_bytes(element, [&](auto t) {
    using T = typename decltype(t)::type;
    T v{};
    std::memcpy(&v, value, sizeof v);
    fill_kernel<T>
        <<<grid_for(count), k_block, 0, as_stream(stream)>>>(v, static_cast<T*>(out), count);
  });
  check_launch();
}

void launch_range(dtype type, double start, double delta, std::int64_t int_start,
                  std::int64_t int_delta, void* out, std::int64_t count, void* stream) {
  if (count == 0) return;
  dispatch(type, type_list<float, std::int64_t, std::int32_t>{}, [&](auto t) {
    using T = typename decltype(t)::type;
    range_kernel<T><<<grid_for(count), k_block, 0, as_stream(stream)>>>(
        start, delta, static_cast<std::uint64_t>(int_start), static_cast<std::uint64_t>(int_delta),
        static_cast<T*>(out), count);
  });
  check_launch();
}

void launch_trilu(std::size_t element, const void* in, void* out, std::int64_t matrices,
                  std::int64_t rows, std::int64_t cols, std::int64_t k, bool upper, void* stream) {
  const std::int64_t count = matrices * rows * cols;
  if (count == 0) return;
  dispatch_bytes(element, [&](auto t) {
    using T = typename decltype(t)::type;
    trilu_kernel<T><<<grid_for(count), k_block, 0, as_stream(stream)>>>(
        static_cast<const T*>(in), static_cast<T*>(out), rows, cols, k, upper, count);
  });
  check_launch();
}

}  // namespace coolbench::engine::cuda
