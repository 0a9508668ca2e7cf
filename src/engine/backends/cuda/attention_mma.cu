// coolbench.Attention's tensor-core prefill kernels (float16, bfloat16;
// sm_90), around attend_tile, the online-softmax step of attention_mma.cuh
// on one tile of keys:
//
// - rows64_kernel: a block takes 64 query rows of one (batch, head), 16 a
//   warp, and walks all its keys tile by tile, the 4 warps sharing each K
//   and V tile. Few blocks for few heads and short sequences (GPT-2 at
//   batch 1 and 128 tokens: 12 heads x 2 = 24 blocks on 132 SMs, each
//   walking up to 2 tiles one after the other).
// - split_keys_kernel: a block takes 16 query rows and its 4 warps split
//   the keys (tiles w, w + 4, ...), each with K and V tiles of its own, so
//   4 times as many blocks each wait out one tile's loads and products
//   where the other waited out several; the 4 partial rows (maximum, sum,
//   unnormalised output) are merged through shared memory at the end.
//
// Every tile is copied by cp.async, the query rows together with the first
// keys, so a block waits for memory once per tile and not once per operand.
#include "engine/backends/cuda/attention_common.cuh"
#include "engine/backends/cuda/attention_merge.hpp"
#include "engine/backends/cuda/attention_mma.cuh"

namespace coolbench::engine::cuda {
namespace {

// Where a block's warps are: its (batch, head), query rows and keys.
struct block_at {
  std::int64_t b, h, m0, end;  // end: one past the last key any of its rows sees
};

__device__ __forceinline__ block_at locate(const attention_plan& p, int rows) {
  block_at at{};
  const std::int64_t bh = blockIdx.x;
  at.b = bh / p.heads, at.h = bh % p.heads;
  at.m0 = std::int64_t{blockIdx.y} * rows;
  at.end = p.sk;
  if (p.causal) {
    const std::int64_t last = at.m0 + rows - 1 + p.sk - p.sq;  // the last row's last visible key
    at.end = last + 1 < at.end ? last + 1 : at.end;
  }
  return at;
}

// One tile of keys [n0, n0 + keys) for the warp's 16 rows (this thread's
// rows row_of[0] and row_of[1], clamped to sq): scores on the tensor cores,
// adjusted, the running maximum and sum updated, the output rescaled and
// the probabilities times V added.
template <class T, int Dim>
__device__ __forceinline__ void attend_tile(const std::uint32_t (&qa)[Dim / 16][4], const T* ks,
                                            const T* vs, std::int64_t n0, const T* bias,
                                            const bool* mask, const attention_plan& p,
                                            const block_at& at, const std::int64_t (&row_of)[2],
                                            mma::row_state<Dim>& r) {
  constexpr int keys = mma::keys_per_tile<Dim>, st = mma::stride<Dim>;
  const int lane = threadIdx.x % 32, g = lane / 4, tig = lane % 4;
  float s[keys / 8][4];
  float tile_peak[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int nt = 0; nt < keys / 8; ++nt) {
    s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0;
#pragma unroll
    for (int kk = 0; kk < Dim / 16; ++kk) {
      const T* key = &ks[(nt * 8 + g) * st + kk * 16 + tig * 2];
      mma::mma16816<T>(s[nt], qa[kk], mma::pair(key), mma::pair(key + 8));
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const std::int64_t j = n0 + nt * 8 + tig * 2 + e % 2;
      const float x = s[nt][e] * p.scale;
      s[nt][e] = j < p.sk ? adjust(x, bias, mask, p, at.b, at.h, row_of[e / 2], j) : -INFINITY;
      tile_peak[e / 2] = fmaxf(tile_peak[e / 2], s[nt][e]);
    }
  }
  float base[2], rescale[2], tile_total[2] = {0, 0};
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const float next = fmaxf(r.peak[i], row_max(tile_peak[i]));
    base[i] = next == -INFINITY ? 0.0F : next;  // a row hidden so far adds nothing
    rescale[i] = __expf(r.peak[i] - base[i]);
    r.peak[i] = next;
  }
#pragma unroll
  for (int nt = 0; nt < keys / 8; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      s[nt][e] = __expf(s[nt][e] - base[e / 2]);
      tile_total[e / 2] += s[nt][e];
    }
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) r.total[i] = r.total[i] * rescale[i] + row_sum(tile_total[i]);
#pragma unroll
  for (int dt = 0; dt < Dim / 8; ++dt) {
    r.o[dt][0] *= rescale[0], r.o[dt][1] *= rescale[0];
    r.o[dt][2] *= rescale[1], r.o[dt][3] *= rescale[1];
  }
#pragma unroll
  for (int kk = 0; kk < keys / 16; ++kk) {
    const std::uint32_t pa[4] = {mma::pack<T>(s[2 * kk][0], s[2 * kk][1]),
                                 mma::pack<T>(s[2 * kk][2], s[2 * kk][3]),
                                 mma::pack<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                 mma::pack<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
    const T* vk = &vs[(kk * 16 + tig * 2) * st + g];
#pragma unroll
    for (int dt = 0; dt < Dim / 8; ++dt) {
      const T* v = vk + dt * 8;
      mma::mma16816<T>(r.o[dt], pa, mma::pair(v[0], v[st]), mma::pair(v[8 * st], v[9 * st]));
    }
  }
}

// This thread's two rows, clamped to sq (rows past it compute garbage that
// is never stored, on a real row's bias and mask).
__device__ __forceinline__ void clamped_rows(const attention_plan& p, std::int64_t first,
                                             std::int64_t (&row_of)[2]) {
  row_of[0] = first < p.sq ? first : p.sq - 1;
  row_of[1] = first + 8 < p.sq ? first + 8 : p.sq - 1;
}

template <class T, int Dim>
__global__ void __launch_bounds__(mma::k_threads, 2)
    rows64_kernel(const T* q, const T* k, const T* v, const T* bias, const bool* mask, T* out,
                  attention_plan p) {
  constexpr int keys = mma::keys_per_tile<Dim>, st = mma::stride<Dim>;
  extern __shared__ __align__(16) unsigned char mma_shared[];
  T* qs = reinterpret_cast<T*>(mma_shared);  // [64][st]
  T* ks = qs + mma::k_rows * st;             // [keys][st]
  T* vs = ks + keys * st;                    // [keys][st]
  const block_at at = locate(p, mma::k_rows);
  const T* kb = k + at.b * p.k_stride[0] + at.h * p.k_stride[1];
  const T* vb = v + at.b * p.v_stride[0] + at.h * p.v_stride[1];
  const int lane = threadIdx.x % 32, g = lane / 4, tig = lane % 4;
  const int r0 = static_cast<int>(threadIdx.x / 32) * 16 + g;  // rows r0 and r0 + 8
  mma::copy_tile<T, Dim, mma::k_rows, mma::k_threads>(
      qs, q + at.b * p.q_stride[0] + at.h * p.q_stride[1], at.m0, p.sq, p.head_dim, p.q_stride[2],
      threadIdx.x);
  std::uint32_t qa[Dim / 16][4];
  std::int64_t row_of[2];
  clamped_rows(p, at.m0 + r0, row_of);
  mma::row_state<Dim> r;
  for (std::int64_t n0 = 0; n0 < at.end; n0 += keys) {
    if (n0 > 0) __syncthreads();  // the previous tile's readers are done
    mma::copy_tile<T, Dim, keys, mma::k_threads>(ks, kb, n0, p.sk, p.head_dim, p.k_stride[2],
                                                 threadIdx.x);
    mma::copy_tile<T, Dim, keys, mma::k_threads>(vs, vb, n0, p.sk, p.head_dim, p.v_stride[2],
                                                 threadIdx.x);
    mma::wait_copies();
    __syncthreads();
    if (n0 == 0) mma::query_fragments<T, Dim>(qs, r0, tig, qa);
    attend_tile<T, Dim>(qa, ks, vs, n0, bias, mask, p, at, row_of, r);
  }
  mma::wait_copies();  // the query rows' copies, where no key is visible to any row
#pragma unroll
  for (int dt = 0; dt < Dim / 8; ++dt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const std::int64_t i = at.m0 + r0 + 8 * (e / 2);
      const std::int64_t col = dt * 8 + tig * 2 + e % 2;
      if (i < p.sq && col < p.head_dim) {
        out[at.b * p.out_stride[0] + at.h * p.out_stride[1] + i * p.out_stride[2] + col] =
            narrow<T>(finish(r.o[dt][e], r.total[e / 2], p.zero_empty_rows));
      }
    }
  }
}

// The 4 warps' partial rows of a split-keys block merged: `part` holds each
// warp's unnormalised output [warp][16][Dim] then its [warp][16] maxima and
// sums; each thread finishes elements threadIdx.x, + 128, ... of the
// block's 16 x Dim outputs.
template <class T, int Dim>
__device__ __forceinline__ void merge_and_store(const float* part, const attention_plan& p,
                                                const block_at& at, T* out) {
  const float* peaks = part + mma::k_warps * mma::k_split_rows * Dim;
  const float* totals = peaks + mma::k_warps * mma::k_split_rows;
  for (int e = static_cast<int>(threadIdx.x); e < mma::k_split_rows * Dim; e += mma::k_threads) {
    const int row = e / Dim, col = e % Dim;
    const std::int64_t i = at.m0 + row;
    if (i >= p.sq || col >= p.head_dim) continue;
    const merged_row m = merge_parts<mma::k_warps>(peaks + row, totals + row, mma::k_split_rows,
                                                   part + row * Dim + col, mma::k_split_rows * Dim,
                                                   [](float x) { return __expf(x); });
    out[at.b * p.out_stride[0] + at.h * p.out_stride[1] + i * p.out_stride[2] + col] =
        narrow<T>(finish(m.acc, m.total, p.zero_empty_rows));
  }
}

template <class T, int Dim>
__global__ void __launch_bounds__(mma::k_threads)
    split_keys_kernel(const T* q, const T* k, const T* v, const T* bias, const bool* mask, T* out,
                      attention_plan p) {
  constexpr int keys = mma::keys_per_tile<Dim>, st = mma::stride<Dim>;
  extern __shared__ __align__(16) unsigned char mma_shared[];
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int g = lane / 4, tig = lane % 4;
  T* qs = reinterpret_cast<T*>(mma_shared);                    // [16][st]
  T* ks = qs + mma::k_split_rows * st + warp * 2 * keys * st;  // this warp's [keys][st]
  T* vs = ks + keys * st;                                      // and its V
  const block_at at = locate(p, mma::k_split_rows);
  const T* kb = k + at.b * p.k_stride[0] + at.h * p.k_stride[1];
  const T* vb = v + at.b * p.v_stride[0] + at.h * p.v_stride[1];
  // The query rows and each warp's first tile in flight together.
  mma::copy_tile<T, Dim, mma::k_split_rows, mma::k_threads>(
      qs, q + at.b * p.q_stride[0] + at.h * p.q_stride[1], at.m0, p.sq, p.head_dim, p.q_stride[2],
      static_cast<int>(threadIdx.x));
  const std::int64_t first = std::int64_t{warp} * keys, step = std::int64_t{mma::k_warps} * keys;
  if (first < at.end) {
    mma::copy_tile<T, Dim, keys, 32>(ks, kb, first, p.sk, p.head_dim, p.k_stride[2], lane);
    mma::copy_tile<T, Dim, keys, 32>(vs, vb, first, p.sk, p.head_dim, p.v_stride[2], lane);
  }
  mma::wait_copies();
  __syncthreads();  // the query rows and the first tiles, from every thread's copies
  std::uint32_t qa[Dim / 16][4];
  mma::query_fragments<T, Dim>(qs, g, tig, qa);
  std::int64_t row_of[2];
  clamped_rows(p, at.m0 + g, row_of);
  mma::row_state<Dim> r;
  for (std::int64_t n0 = first; n0 < at.end; n0 += step) {
    if (n0 > first) {
      __syncwarp();  // the warp is done reading its previous tile
      mma::copy_tile<T, Dim, keys, 32>(ks, kb, n0, p.sk, p.head_dim, p.k_stride[2], lane);
      mma::copy_tile<T, Dim, keys, 32>(vs, vb, n0, p.sk, p.head_dim, p.v_stride[2], lane);
      mma::wait_copies();
      __syncwarp();  // the tile, from every lane's copies
    }
    attend_tile<T, Dim>(qa, ks, vs, n0, bias, mask, p, at, row_of, r);
  }
  __syncthreads();  // every warp is done with its tiles: their room takes the partial rows
  auto* part = reinterpret_cast<float*>(mma_shared + mma::split_q_bytes<Dim>);
  float* peaks = part + mma::k_warps * mma::k_split_rows * Dim;
  float* totals = peaks + mma::k_warps * mma::k_split_rows;
#pragma unroll
  for (int dt = 0; dt < Dim / 8; ++dt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = g + 8 * (e / 2), col = dt * 8 + tig * 2 + e % 2;
      part[(warp * mma::k_split_rows + row) * Dim + col] = r.o[dt][e];
    }
  }
  if (tig == 0) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      peaks[warp * mma::k_split_rows + g + 8 * i] = r.peak[i];
      totals[warp * mma::k_split_rows + g + 8 * i] = r.total[i];
    }
  }
  __syncthreads();
  merge_and_store<T, Dim>(part, p, at, out);
}

template <class T, int Dim>
void launch(const T* q, const T* k, const T* v, const T* bias, const bool* mask, T* out,
            const attention_plan& p, const attention_launch& l, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(l.blocks_x), static_cast<unsigned>(l.blocks_y));
  if (l.kernel == attention_kernel::mma_split_keys) {
    constexpr std::size_t bytes = mma::split_shared_bytes<Dim>;
    COOLBENCH_CUDA_CALL(cudaFuncSetAttribute(split_keys_kernel<T, Dim>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(bytes)));
    split_keys_kernel<T, Dim><<<grid, mma::k_threads, bytes, stream>>>(q, k, v, bias, mask, out, p);
  } else {
    rows64_kernel<T, Dim>
        <<<grid, mma::k_threads, mma::shared_bytes<Dim>, stream>>>(q, k, v, bias, mask, out, p);
  }
  check_launch();
}

}  // namespace

void launch_mma_attention(dtype type, const void* q, const void* k, const void* v, const void* bias,
                          const bool* mask, void* out, const attention_plan& p,
                          const attention_launch& l, void* stream) {
  dispatch(type, type_list<__half, __nv_bfloat16>{}, [&](auto t) {
    using T = typename decltype(t)::type;
    const auto args = [&](auto run) {
      run(static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
          static_cast<const T*>(bias), mask, static_cast<T*>(out), p, l, as_stream(stream));
    };
    if (p.head_dim <= 64) {
      args(launch<T, 64>);
    } else {
      args(launch<T, 128>);
    }
  });
}

}  // namespace coolbench::engine::cuda
