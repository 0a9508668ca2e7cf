// The skinny product's kernels (skinny_gemm.hpp): Y[M,N] = act(alpha x W + beta C + bias) for
// M of 1 to 8, reading W once in 16-byte pieces. At M <= 8 a product is W's bytes over the
// memory bandwidth (GPT-2's 1.2-4.7 MB layer weights: 0.4-1.6 us on an H100), so the kernels
// are built for bandwidth: 8 lanes read a 128-byte run of one row of W, every load
// instruction of a warp reads whole 128-byte lines, each thread has its next step's loads in
// flight while it multiplies the current one, and K is split over the block's 32 lane groups
// and over blocks until the grid is one wave of 2 blocks an SM (plan_skinny). x's slice
// waits in shared memory as float32, read by every lane of the block; the accumulation is
// float32 throughout.
//
// Two layouts. [K, N] (nn_kernel): a lane group takes a row of K at a time and each lane 8
// columns (4 in float32) of the tile, so a thread holds rows x 8 sums; the 4 groups of a warp
// meet in a butterfly of shuffles, the 8 warps in shared memory. [N, K] (nt_kernel, the tied
// lm_head): a lane group takes 2 or 4 rows of W and its lanes 16-byte pieces along K, so a
// piece of x from shared memory serves every row the thread holds; the 8 lanes of a group meet
// in a butterfly.
//
// Where K is split the blocks of a column tile write float32 partial sums to the workspace;
// the last block to finish (an atomic counter per tile, which it sets back to 0) adds them up
// in split order, so the result does not depend on which block came last, and applies the
// epilogue in cuBLASLt's order: act(alpha AB + beta C + bias).
#include <type_traits>

#include "engine/backends/cuda/common.cuh"
#include "engine/backends/cuda/skinny_gemm.hpp"

namespace coolbench::engine::cuda {
namespace {

constexpr int k_threads = k_skinny_threads;
constexpr int k_across = skinny_detail::k_lanes_across;  // lanes across a run of 16-byte pieces
constexpr int k_groups = skinny_detail::k_groups;        // groups of them in a block
constexpr unsigned k_all_lanes = 0xffffffffU;

// Rows of K a [K, N] thread loads a step: fewer at 8 rows of Y, whose 64 sums take the
// registers (the next step's loads are in flight too, so twice these).
template <int Rows>
constexpr int k_nn_unroll = Rows >= 8 ? 2 : 4;
// Rows of W a [N, K] lane group takes: 2 at 8 rows of Y, for the same reason.
template <int Rows>
constexpr int k_nt_rows = Rows >= 8 ? 2 : 4;
static_assert(k_nt_rows<8> == skinny_detail::transposed_rows_a_group(8) &&
                  k_nt_rows<4> == skinny_detail::transposed_rows_a_group(4),
              "the plan's tiles are the kernel's");

struct skinny_args {
  const void* x;
  const void* w;
  void* y;
  const void* c;
  const void* bias;
  float* partials;
  unsigned* counters;
  std::int64_t m, n, k, ldb, ldy, depth;
  float alpha, beta;
  int activation;
};

// The piece of W at `at` of which `count` elements are in the product (the rest read as 0):
// one 16-byte load where all are, an element a load at the edge of N or K, none past it.
template <class T>
__device__ __forceinline__ uint4 load_piece(const T* at, std::int64_t count) {
  if (count >= k_piece<T>) return __ldg(reinterpret_cast<const uint4*>(at));
  unsigned words[4] = {0, 0, 0, 0};
  if constexpr (sizeof(T) == 2) {
    const auto* bits = reinterpret_cast<const unsigned short*>(at);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      if (i < count) words[i / 2] |= static_cast<unsigned>(__ldg(bits + i)) << (16 * (i % 2));
    }
  } else {
    const auto* bits = reinterpret_cast<const unsigned*>(at);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if (i < count) words[i] = __ldg(bits + i);
    }
  }
  return make_uint4(words[0], words[1], words[2], words[3]);
}

// Sums v[0, Count) over the lanes that differ in bit Mask and the Steps - 1 bits above it: a
// butterfly in which each lane sends its partner the half the partner keeps, so a lane keeps
// Count >> Steps sums (while there are two or more; past that the steps add whole values,
// leaving copies). kept_from says where a lane's sums start, keeper whether it holds the copy
// that is stored.
template <int Size, int Count, int Mask, int Steps>
__device__ __forceinline__ void halve(float (&v)[Size], int lane) {
  if constexpr (Steps > 0) {
    if constexpr (Count >= 2) {
      constexpr int half = Count / 2;
      const bool upper = (lane & Mask) != 0;
#pragma unroll
      for (int i = 0; i < half; ++i) {
        const float send = upper ? v[i] : v[i + half];
        const float keep = upper ? v[i + half] : v[i];
        v[i] = keep + __shfl_xor_sync(k_all_lanes, send, Mask);
      }
      halve<Size, half, Mask * 2, Steps - 1>(v, lane);
    } else {
      v[0] += __shfl_xor_sync(k_all_lanes, v[0], Mask);
      halve<Size, 1, Mask * 2, Steps - 1>(v, lane);
    }
  }
}

template <int Count, int Mask, int Steps>
__device__ __forceinline__ int kept_from(int lane) {
  if constexpr (Steps == 0 || Count < 2) {
    return 0;
  } else {
    return ((lane & Mask) != 0 ? Count / 2 : 0) + kept_from<Count / 2, Mask * 2, Steps - 1>(lane);
  }
}

template <int Count, int Mask, int Steps>
__device__ __forceinline__ bool keeper(int lane) {
  if constexpr (Steps == 0) {
    return true;
  } else if constexpr (Count >= 2) {
    return keeper<Count / 2, Mask * 2, Steps - 1>(lane);
  } else {
    return (lane & Mask) == 0 && keeper<1, Mask * 2, Steps - 1>(lane);
  }
}

// Y[row, column] = act(alpha sum + beta C + bias), as cuBLASLt's epilogues compute it; the
// GELU's tanh form as the CPU backend's (tanhf, not a fast approximation).
template <class T>
__device__ __forceinline__ void store_output(const skinny_args& a, int row, std::int64_t column,
                                             float sum) {
  if (row >= a.m || column >= a.n) return;
  const std::int64_t at = row * a.ldy + column;
  float v = a.alpha * sum;
  if (a.beta != 0.0F) v += a.beta * load(static_cast<const T*>(a.c), at);
  if (a.bias != nullptr) v += load(static_cast<const T*>(a.bias), column);
  if (a.activation == 1) {
    v = fmaxf(v, 0.0F);
  } else if (a.activation == 2) {
    v = 0.5F * v * (1.0F + tanhf(0.79788456080286536F * (v + 0.044715F * v * v * v)));
  }
  static_cast<T*>(a.y)[at] = narrow<T>(v);
}

// Where the block's split of K leaves output (row, tile-local column c) of tile blockIdx.x.
template <int Rows>
__device__ __forceinline__ float* partial_at(const skinny_args& a, int tile, int row, int c) {
  const std::int64_t split = std::int64_t{blockIdx.x} * gridDim.y + blockIdx.y;
  return a.partials + (split * Rows + row) * tile + c;
}

// After every block of the tile has written its partial sums: the last one to arrive adds
// them up in split order, stores Y and sets the tile's counter back to 0. Each block's
// writes are fenced before its arrival counts, and the last block reads from L2.
template <class T, int Rows>
__device__ void finish_split_tile(const skinny_args& a, int tile) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned arrived = atomicAdd(a.counters + blockIdx.x, 1U);
    last = arrived == gridDim.y - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  const std::int64_t splits = gridDim.y;
  const float* tile_sums = a.partials + std::int64_t{blockIdx.x} * splits * Rows * tile;
  for (int o = static_cast<int>(threadIdx.x); o < Rows * tile; o += k_threads) {
    float sum = 0;
#pragma unroll 4
    for (std::int64_t s = 0; s < splits; ++s) sum += __ldcg(tile_sums + s * Rows * tile + o);
    store_output<T>(a, o / tile, std::int64_t{blockIdx.x} * tile + o % tile, sum);
  }
  if (threadIdx.x == 0) a.counters[blockIdx.x] = 0;
}

// The block's rows of K: [k0, k0 + span).
struct k_range {
  std::int64_t k0;
  int span;
};

__device__ __forceinline__ k_range block_range(const skinny_args& a) {
  const std::int64_t k0 = std::int64_t{blockIdx.y} * a.depth;
  const std::int64_t end = k0 + a.depth < a.k ? k0 + a.depth : a.k;
  return {k0, static_cast<int>(end - k0)};
}

// x[0..Rows)[k0, k0 + padded) into shared memory as float32, zero past M and past the range:
// at [k][row] for the [K, N] kernel (a lane reads a row of K's Rows values), [row][k] for the
// [N, K] kernel (a lane reads a piece of K of one row). Read row by row from memory.
template <class T, int Rows, bool ByRow>
__device__ __forceinline__ void stage_x(const skinny_args& a, k_range r, int padded,
                                        float* shared) {
  const T* x = static_cast<const T*>(a.x);
  for (int i = static_cast<int>(threadIdx.x); i < padded * Rows; i += k_threads) {
    const int row = i / padded, kk = i % padded;
    const float v = row < a.m && kk < r.span ? load(x, row * a.k + r.k0 + kk) : 0.0F;
    shared[ByRow ? i : kk * Rows + row] = v;
  }
}

// Rows values of x at shared[at...] (16-byte aligned for Rows >= 4).
template <int Rows>
__device__ __forceinline__ void read_x(const float* at, float (&out)[Rows]) {
  if constexpr (Rows >= 4) {
#pragma unroll
    for (int q = 0; q < Rows / 4; ++q) {
      const float4 v = reinterpret_cast<const float4*>(at)[q];
      out[4 * q] = v.x;
      out[4 * q + 1] = v.y;
      out[4 * q + 2] = v.z;
      out[4 * q + 3] = v.w;
    }
  } else if constexpr (Rows == 2) {
    const float2 v = *reinterpret_cast<const float2*>(at);
    out[0] = v.x;
    out[1] = v.y;
  } else {
    out[0] = at[0];
  }
}

// W [K, N]: a tile of 8 pieces of N (64 columns, 32 in float32) over the block's rows of K.
// Lane (group g, across a) takes rows g, g + 32, ... of the range and columns a x piece on;
// the group's rows step by 32 x unroll, the next step's loads issued before this step's
// products.
template <class T, int Rows>
__global__ void __launch_bounds__(k_threads, k_skinny_blocks_per_sm) nn_kernel(skinny_args a) {
  constexpr int piece = k_piece<T>, tile = k_across * piece, unroll = k_nn_unroll<Rows>;
  constexpr int step = k_groups * unroll, sums = Rows * piece;
  extern __shared__ float4 shared_words[];
  auto* const shared = reinterpret_cast<float*>(shared_words);
  const int across = static_cast<int>(threadIdx.x) % k_across;
  const int group = static_cast<int>(threadIdx.x) / k_across;
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const k_range range = block_range(a);
  const int padded = (range.span + step - 1) / step * step;
  const std::int64_t column = std::int64_t{blockIdx.x} * tile + across * piece;
  const std::int64_t columns = a.n - column;  // of this lane's piece, if under a piece
  const T* w = static_cast<const T*>(a.w) + column + (range.k0 + group) * a.ldb;
  const auto fetch = [&](uint4(&to)[unroll], int base) {
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const int kk = base + u * k_groups + group;
      to[u] = kk < range.span ? load_piece(w + std::int64_t{base + u * k_groups} * a.ldb, columns)
                              : make_uint4(0, 0, 0, 0);
    }
  };
  uint4 now[unroll];
  fetch(now, 0);  // in flight while x is staged
  stage_x<T, Rows, false>(a, range, padded, shared);
  __syncthreads();
  float acc[sums] = {};  // [row][element of the piece]
  for (int base = 0; base < range.span; base += step) {
    uint4 next[unroll];
    fetch(next, base + step);
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      float wf[piece], xv[Rows];
      widen<T>(now[u], wf);
      read_x<Rows>(shared + (base + u * k_groups + group) * Rows, xv);
#pragma unroll
      for (int r = 0; r < Rows; ++r) {
#pragma unroll
        for (int e = 0; e < piece; ++e) acc[r * piece + e] = fmaf(xv[r], wf[e], acc[r * piece + e]);
      }
    }
#pragma unroll
    for (int u = 0; u < unroll; ++u) now[u] = next[u];
  }
  // The 4 groups of the warp (lanes 8 and 16 apart), then the 8 warps in shared memory
  // ([warp][sum][across]), summed in warp order.
  halve<sums, sums, k_across, 2>(acc, lane);
  constexpr int kept = sums / 4;
  const int from = kept_from<sums, k_across, 2>(lane);
  __syncthreads();  // every lane is done with x
#pragma unroll
  for (int i = 0; i < kept; ++i) shared[(warp * sums + from + i) * k_across + across] = acc[i];
  __syncthreads();
  constexpr int warps = k_threads / 32;
  const bool split = gridDim.y > 1;
  for (int o = static_cast<int>(threadIdx.x); o < Rows * tile; o += k_threads) {
    const int row = o / tile, c = o % tile;
    const int at = (row * piece + c % piece) * k_across + c / piece;
    float sum = 0;
#pragma unroll
    for (int v = 0; v < warps; ++v) sum += shared[v * sums * k_across + at];
    if (split) {
      *partial_at<Rows>(a, tile, row, c) = sum;
    } else {
      store_output<T>(a, row, std::int64_t{blockIdx.x} * tile + c, sum);
    }
  }
  if (split) finish_split_tile<T, Rows>(a, tile);
}

// W [N, K]: a tile of 32 groups x PerGroup rows of W (group g takes rows g, g + 32, ...); the
// 8 lanes of a group take 16-byte pieces along the block's range of K, 8 pieces a step, the
// next step's loads issued before this step's products.
template <class T, int Rows>
__global__ void __launch_bounds__(k_threads, k_skinny_blocks_per_sm) nt_kernel(skinny_args a) {
  constexpr int piece = k_piece<T>, per_group = k_nt_rows<Rows>;
  constexpr int tile = k_groups * per_group, step = k_across * piece, sums = per_group * Rows;
  extern __shared__ float4 shared_words[];
  auto* const shared = reinterpret_cast<float*>(shared_words);
  const int across = static_cast<int>(threadIdx.x) % k_across;
  const int group = static_cast<int>(threadIdx.x) / k_across;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const k_range range = block_range(a);
  const int padded = (range.span + step - 1) / step * step;
  const std::int64_t first_row = std::int64_t{blockIdx.x} * tile + group;
  const T* w = static_cast<const T*>(a.w) + range.k0 + across * piece;
  const auto fetch = [&](uint4(&to)[per_group], int base) {
    const int kk = base + across * piece;
#pragma unroll
    for (int j = 0; j < per_group; ++j) {
      const std::int64_t n = first_row + j * k_groups;
      to[j] = n < a.n && kk < range.span ? load_piece(w + n * a.ldb + base, range.span - kk)
                                         : make_uint4(0, 0, 0, 0);
    }
  };
  uint4 now[per_group];
  fetch(now, 0);  // in flight while x is staged
  stage_x<T, Rows, true>(a, range, padded, shared);
  __syncthreads();
  float acc[sums] = {};  // [row of W][row of Y]
  for (int base = 0; base < range.span; base += step) {
    uint4 next[per_group];
    fetch(next, base + step);
    float wf[per_group][piece];
#pragma unroll
    for (int j = 0; j < per_group; ++j) widen<T>(now[j], wf[j]);
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      float xv[piece];
      const float4* at =
          reinterpret_cast<const float4*>(shared + r * padded + base + across * piece);
#pragma unroll
      for (int q = 0; q < piece / 4; ++q) {
        const float4 v = at[q];
        xv[4 * q] = v.x;
        xv[4 * q + 1] = v.y;
        xv[4 * q + 2] = v.z;
        xv[4 * q + 3] = v.w;
      }
#pragma unroll
      for (int j = 0; j < per_group; ++j) {
#pragma unroll
        for (int e = 0; e < piece; ++e)
          acc[j * Rows + r] = fmaf(wf[j][e], xv[e], acc[j * Rows + r]);
      }
    }
#pragma unroll
    for (int j = 0; j < per_group; ++j) now[j] = next[j];
  }
  // The 8 lanes of the group (lanes 1, 2 and 4 apart).
  halve<sums, sums, 1, 3>(acc, lane);
  constexpr int kept = sums >= 8 ? sums / 8 : 1;
  const int from = kept_from<sums, 1, 3>(lane);
  const bool split = gridDim.y > 1;
  if (keeper<sums, 1, 3>(lane)) {
#pragma unroll
    for (int i = 0; i < kept; ++i) {
      const int j = (from + i) / Rows, row = (from + i) % Rows, c = group + j * k_groups;
      if (split) {
        *partial_at<Rows>(a, tile, row, c) = acc[i];
      } else {
        store_output<T>(a, row, std::int64_t{blockIdx.x} * tile + c, acc[i]);
      }
    }
  }
  if (split) finish_split_tile<T, Rows>(a, tile);
}

}  // namespace

void launch_skinny(const skinny_plan& plan, const skinny_operands& o, float* partials,
                   unsigned* counters, void* stream) {
  const skinny_args args{o.x,        o.w,      o.y,      o.c != nullptr ? o.c : o.y,
                         o.bias,     partials, counters, o.m,
                         o.n,        o.k,      o.ldb,    o.ldy,
                         plan.depth, o.alpha,  o.beta,   o.activation};
  const dim3 grid(static_cast<unsigned>(plan.tiles), static_cast<unsigned>(plan.splits));
  const std::size_t shared = skinny_shared_bytes(plan);
  const cudaStream_t s = as_stream(stream);
  dispatch(o.type, float_list{}, [&](auto t) {
    using T = typename decltype(t)::type;
    const auto run = [&](auto kernel) { kernel<<<grid, k_threads, shared, s>>>(args); };
    const auto by_rows = [&](auto rows) {
      constexpr int r = decltype(rows)::value;
      if (plan.transposed) {
        run(nt_kernel<T, r>);
      } else {
        run(nn_kernel<T, r>);
      }
    };
    switch (plan.rows) {
      case 1: by_rows(std::integral_constant<int, 1>{}); break;
      case 2: by_rows(std::integral_constant<int, 2>{}); break;
      case 4: by_rows(std::integral_constant<int, 4>{}); break;
      default: by_rows(std::integral_constant<int, 8>{}); break;
    }
  });
  check_launch();
}

}  // namespace coolbench::engine::cuda
