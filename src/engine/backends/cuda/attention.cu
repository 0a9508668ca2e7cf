// coolbench.Attention's kernels, float32 arithmetic for every dtype.
//
// Prefill (flash_kernel): a block takes 32 query rows of one (batch, head)
// and walks the keys in tiles of 32 through shared memory, keeping a running
// maximum and sum per row (online softmax), so the [sq, sk] scores never
// reach global memory. Four threads share a row: each scores 8 keys of the
// tile and owns a quarter of the output row. With the causal flag the tiles
// past a block's last visible key are never loaded.
//
// The tensor-core kernels for float16 and bfloat16 are in attention_mma.cu;
// launch_shapes.hpp picks the kernel and grid.
//
// Decode (sq == 1): one row has too little work for a block per (batch,
// head); split_kernel scores one chunk of keys per block and writes its
// maximum, sum and unnormalised output row to scratch, and combine_kernel
// rescales the chunks to the common maximum.
#include <cfloat>

#include <cstdlib>
#include <string>
#include <string_view>

#include "engine/backends/cuda/attention.hpp"
#include "engine/backends/cuda/attention_common.cuh"
#include "engine/backends/cuda/attention_mma.cuh"
#include "engine/backends/cuda/common.cuh"

namespace coolbench::engine::cuda {
namespace {

constexpr int k_rows = 32;      // query rows per block
constexpr int k_keys = 32;      // keys per tile
constexpr int k_threads = 128;  // 4 per row
constexpr int k_per_thread = k_keys / 4;
constexpr int k_max_chunk = k_attention_max_chunk;  // keys per split-K block

template <int Dim>
constexpr std::size_t flash_shared_bytes() {
  return sizeof(float) *
         (k_rows * (Dim + 1) + k_keys * (Dim + 1) + k_keys * Dim + k_rows * (k_keys + 1));
}

// Scores of this thread's 8 keys of the tile for its row.
template <int Dim>
__device__ __forceinline__ void score_tile(const float* qs, const float* ks, int row, int lane4,
                                           float (&s)[k_per_thread]) {
#pragma unroll
  for (int t = 0; t < k_per_thread; ++t) s[t] = 0;
#pragma unroll 4
  for (int c = 0; c < Dim; ++c) {
    const float qc = qs[row * (Dim + 1) + c];
#pragma unroll
    for (int t = 0; t < k_per_thread; ++t) s[t] += qc * ks[(lane4 + 4 * t) * (Dim + 1) + c];
  }
}

// Rows [base, base + Rows) of a matrix of head_dim d columns, rows `ld`
// elements apart, as floats: zero past `count` rows and past d columns. Each
// thread keeps one column and steps down the rows (k_threads / Dim rows a
// trip), so its addresses are one pointer plus a constant stride, and every
// load of the tile is issued before the first store (fetch(), then store()):
// a thread waits out the memory latency once a tile. A loop of one element
// a trip, its bound unknown to the compiler, waited once per element, 16
// round trips a tile at head dim 64.
template <class T, int Dim, int Rows>
struct tile_rows {
  static_assert(k_threads % Dim == 0, "a trip covers whole rows");
  static constexpr int rows_a_trip = k_threads / Dim;
  static constexpr int trips = Rows / rows_a_trip;
  static_assert(Rows % rows_a_trip == 0);
  float held[trips];

  __device__ __forceinline__ void fetch(const T* from, std::int64_t base, std::int64_t count,
                                        std::int64_t d, std::int64_t ld) {
    const int c = static_cast<int>(threadIdx.x) % Dim, r0 = static_cast<int>(threadIdx.x) / Dim;
    const std::int64_t left = count - base - r0;  // rows of the matrix from this thread's first
    const int rows_left = left <= 0 ? 0 : left >= Rows ? Rows : static_cast<int>(left);
    const bool column = c < d;
    const T* at = from + (column && rows_left > 0 ? (base + r0) * ld + c : 0);
    const std::int64_t step = rows_a_trip * ld;
#pragma unroll
    for (int t = 0; t < trips; ++t) {
      held[t] = column && t * rows_a_trip < rows_left ? load(at, t * step) : 0.0F;
    }
  }
  // Into shared rows `stride` floats apart, each value times `scale`.
  __device__ __forceinline__ void store(float* to, int stride, float scale) const {
    const int c = static_cast<int>(threadIdx.x) % Dim, r0 = static_cast<int>(threadIdx.x) / Dim;
#pragma unroll
    for (int t = 0; t < trips; ++t) to[(r0 + t * rows_a_trip) * stride + c] = held[t] * scale;
  }
};

// At least 4 blocks per SM (128 registers a thread at most): the register
// budget ptxas otherwise picks spills the bfloat16 variant.
template <class T, int Dim>
__global__ void __launch_bounds__(k_threads, 4)
    flash_kernel(const T* q, const T* k, const T* v, const T* bias, const bool* mask, T* out,
                 attention_plan p) {
  extern __shared__ float shared[];
  float* qs = shared;                   // [k_rows][Dim + 1], scaled
  float* ks = qs + k_rows * (Dim + 1);  // [k_keys][Dim + 1]
  float* vs = ks + k_keys * (Dim + 1);  // [k_keys][Dim]
  float* ps = vs + k_keys * Dim;        // [k_rows][k_keys + 1]
  const std::int64_t bh = blockIdx.x, b = bh / p.heads, h = bh % p.heads;
  const std::int64_t m0 = std::int64_t{blockIdx.y} * k_rows;
  const std::int64_t d = p.head_dim;
  const T* qb = q + b * p.q_stride[0] + h * p.q_stride[1];
  const T* kb = k + b * p.k_stride[0] + h * p.k_stride[1];
  const T* vb = v + b * p.v_stride[0] + h * p.v_stride[1];
  {
    tile_rows<T, Dim, k_rows> rows;
    rows.fetch(qb, m0, p.sq, d, p.q_stride[2]);
    rows.store(qs, Dim + 1, p.scale);
  }
  const int row = threadIdx.x / 4, lane4 = threadIdx.x % 4;
  const std::int64_t i = m0 + row;
  const std::int64_t i_clamped = i < p.sq ? i : p.sq - 1;
  float peak = -INFINITY, total = 0;
  float acc[Dim / 4];
#pragma unroll
  for (int c = 0; c < Dim / 4; ++c) acc[c] = 0;
  std::int64_t end = p.sk;
  if (p.causal) {
    const std::int64_t last = m0 + k_rows - 1 + p.sk - p.sq;  // the last row's last visible key
    end = last + 1 < end ? last + 1 : end;
  }
  for (std::int64_t n0 = 0; n0 < end; n0 += k_keys) {
    {
      // K's and V's loads in flight together before the barrier that frees the previous tile;
      // at head dim 128 a quarter of the tile at a time, 16 registers (the kernel is at its 128
      // there, and the whole tile's 64 spilled; not unrolled, so no part's loads move up).
      constexpr int parts = Dim <= 64 ? 1 : 4, part_rows = k_keys / parts;
#pragma unroll 1
      for (int part = 0; part < parts; ++part) {
        tile_rows<T, Dim, part_rows> keys, values;
        keys.fetch(kb, n0 + part * part_rows, p.sk, d, p.k_stride[2]);
        values.fetch(vb, n0 + part * part_rows, p.sk, d, p.v_stride[2]);
        if (part == 0) __syncthreads();  // the previous tile's readers are done
        keys.store(ks + part * part_rows * (Dim + 1), Dim + 1, 1.0F);
        values.store(vs + part * part_rows * Dim, Dim, 1.0F);
      }
    }
    __syncthreads();
    float s[k_per_thread];
    score_tile<Dim>(qs, ks, row, lane4, s);
    float tile_peak = -INFINITY;
#pragma unroll
    for (int t = 0; t < k_per_thread; ++t) {
      const std::int64_t j = n0 + lane4 + 4 * t;
      s[t] = j < p.sk ? adjust(s[t], bias, mask, p, b, h, i_clamped, j) : -INFINITY;
      tile_peak = fmaxf(tile_peak, s[t]);
    }
    const float next = fmaxf(peak, row_max(tile_peak));
    const float base = next == -INFINITY ? 0.0F : next;  // a row hidden so far adds nothing
    const float rescale = __expf(peak - base);
    float tile_total = 0;
#pragma unroll
    for (int t = 0; t < k_per_thread; ++t) {
      const float e = __expf(s[t] - base);
      ps[row * (k_keys + 1) + lane4 + 4 * t] = e;
      tile_total += e;
    }
    total = total * rescale + row_sum(tile_total);
    peak = next;
    __syncwarp();  // the row's probabilities come from the same warp
#pragma unroll
    for (int c = 0; c < Dim / 4; ++c) acc[c] *= rescale;
    for (int j = 0; j < k_keys; ++j) {
      const float pj = ps[row * (k_keys + 1) + j];
#pragma unroll
      for (int c = 0; c < Dim / 4; ++c) acc[c] += pj * vs[j * Dim + lane4 + 4 * c];
    }
  }
  if (i >= p.sq) return;
  T* o = out + b * p.out_stride[0] + h * p.out_stride[1] + i * p.out_stride[2];
#pragma unroll
  for (int c = 0; c < Dim / 4; ++c) {
    const int col = lane4 + 4 * c;
    if (col < d) o[col] = narrow<T>(finish(acc[c], total, p.zero_empty_rows));
  }
}

__device__ float block_max(float v, float* scratch) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffU, v, o));
  __syncthreads();
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  v = scratch[0];
  for (int w = 1; w < k_threads / 32; ++w) v = fmaxf(v, scratch[w]);
  return v;
}

__device__ float block_sum(float v, float* scratch) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffU, v, o);
  __syncthreads();
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  v = 0;
  for (int w = 0; w < k_threads / 32; ++w) v += scratch[w];
  return v;
}

// One chunk of keys for the single query row of (batch, head) blockIdx.x:
// scratch row [maximum, sum, output[head_dim]] (output not normalised).
template <class T>
__global__ void __launch_bounds__(k_threads)
    split_kernel(const T* q, const T* k, const T* v, const T* bias, const bool* mask,
                 float* scratch, attention_plan p, std::int64_t chunk) {
  __shared__ float qv[128];
  __shared__ float scores[k_max_chunk];
  __shared__ float reduce[k_threads / 32];
  const std::int64_t bh = blockIdx.x, b = bh / p.heads, h = bh % p.heads, d = p.head_dim;
  const std::int64_t c0 = std::int64_t{blockIdx.y} * chunk;
  const std::int64_t c1 = c0 + chunk < p.sk ? c0 + chunk : p.sk;
  const T* kb = k + b * p.k_stride[0] + h * p.k_stride[1];
  const T* vb = v + b * p.v_stride[0] + h * p.v_stride[1];
  if (threadIdx.x < d) {
    qv[threadIdx.x] = load(q, b * p.q_stride[0] + h * p.q_stride[1] + threadIdx.x) * p.scale;
  }
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (std::int64_t j = c0 + warp; j < c1; j += k_threads / 32) {
    float dot = 0;
    for (std::int64_t c = lane; c < d; c += 32) dot += qv[c] * load(kb, j * p.k_stride[2] + c);
    for (int o = 16; o > 0; o /= 2) dot += __shfl_xor_sync(0xffffffffU, dot, o);
    if (lane == 0) scores[j - c0] = adjust(dot, bias, mask, p, b, h, 0, j);
  }
  __syncthreads();
  float local = -INFINITY;
  for (std::int64_t j = threadIdx.x; j < c1 - c0; j += k_threads) local = fmaxf(local, scores[j]);
  const float peak = block_max(local, reduce);
  const float base = peak == -INFINITY ? 0.0F : peak;
  float part = 0;
  for (std::int64_t j = threadIdx.x; j < c1 - c0; j += k_threads) {
    scores[j] = __expf(scores[j] - base);
    part += scores[j];
  }
  const float total = block_sum(part, reduce);  // its barriers publish the scores
  float* row = scratch + (bh * gridDim.y + blockIdx.y) * (d + 2);
  for (std::int64_t c = threadIdx.x; c < d; c += k_threads) {
    float acc = 0;
    for (std::int64_t j = c0; j < c1; ++j) acc += scores[j - c0] * load(vb, j * p.v_stride[2] + c);
    row[2 + c] = acc;
  }
  if (threadIdx.x == 0) {
    row[0] = peak;
    row[1] = total;
  }
}

template <class T>
__global__ void __launch_bounds__(k_threads)
    combine_kernel(const float* scratch, T* out, attention_plan p, std::int64_t chunks) {
  const std::int64_t bh = blockIdx.x, b = bh / p.heads, h = bh % p.heads, d = p.head_dim;
  const float* rows = scratch + bh * chunks * (d + 2);
  T* o = out + b * p.out_stride[0] + h * p.out_stride[1];
  float peak = -INFINITY;
  for (std::int64_t c = 0; c < chunks; ++c) peak = fmaxf(peak, rows[c * (d + 2)]);
  const float base = peak == -INFINITY ? 0.0F : peak;
  for (std::int64_t col = threadIdx.x; col < d; col += k_threads) {
    float total = 0, acc = 0;
    for (std::int64_t c = 0; c < chunks; ++c) {
      const float w = __expf(rows[c * (d + 2)] - base);
      total += rows[c * (d + 2) + 1] * w;
      acc += rows[c * (d + 2) + 2 + col] * w;
    }
    o[col] = narrow<T>(finish(acc, total, p.zero_empty_rows));
  }
}

template <class T, int Dim>
void launch_flash(const T* q, const T* k, const T* v, const T* bias, const bool* mask, T* out,
                  const attention_plan& p, cudaStream_t stream) {
  constexpr std::size_t bytes = flash_shared_bytes<Dim>();
  if constexpr (bytes > 48 * 1024) {
    COOLBENCH_CUDA_CALL(cudaFuncSetAttribute(flash_kernel<T, Dim>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(bytes)));
  }
  const dim3 grid(static_cast<unsigned>(p.batch * p.heads),
                  static_cast<unsigned>((p.sq + k_rows - 1) / k_rows));
  flash_kernel<T, Dim><<<grid, k_threads, bytes, stream>>>(q, k, v, bias, mask, out, p);
  check_launch();
}

// The kernel for a plan: the tensor cores where their sm_90 code is (the
// PTX the project also ships is for compute_75, without mma) and the dtype
// is 16-bit; COOLBENCH_ATTENTION_KERNEL=fma, mma or split_keys forces one
// (launch_shapes.hpp), and COOLBENCH_ATTENTION_SCORES=general the tensor-core
// kernels' general score form (attention_mma.cu), for comparisons and tests.
attention_launch choose(const attention_plan& p, bool sixteen_bits) {
  const char* env = std::getenv("COOLBENCH_ATTENTION_KERNEL");
  const std::string_view forced = env == nullptr ? "" : env;
  int device = 0, major = 0, sms = 0;
  COOLBENCH_CUDA_CALL(cudaGetDevice(&device));
  COOLBENCH_CUDA_CALL(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  COOLBENCH_CUDA_CALL(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  // The tensor-core kernels step along a bias or mask row by 32-bit offsets (attention_mma.cu).
  constexpr std::int64_t step_limit = std::int64_t{1} << 24;
  const bool steps_fit =
      std::llabs(p.bias_stride[3]) < step_limit && std::llabs(p.mask_stride[3]) < step_limit;
  attention_launch l = plan_attention(p.batch * p.heads, p.sq, p.sk,
                                      sixteen_bits && major == 9 && steps_fit, sms, forced);
  const char* scores = std::getenv("COOLBENCH_ATTENTION_SCORES");
  l.general_scores = scores != nullptr && std::string_view(scores) == "general";
  return l;
}

}  // namespace

std::int64_t attention_scratch_floats(const attention_plan& plan) {
  if (plan.sq != 1 || plan.sk == 0) return 0;
  const std::int64_t chunk = attention_decode_chunk(plan.batch * plan.heads, plan.sk);
  return plan.batch * plan.heads * ((plan.sk + chunk - 1) / chunk) * (plan.head_dim + 2);
}

void launch_attention(dtype type, const void* q, const void* k, const void* v, const void* bias,
                      const bool* mask, void* out, float* scratch, const attention_plan& plan,
                      void* stream) {
  const std::int64_t rows = plan.batch * plan.heads;
  if (rows == 0 || plan.sq == 0 || plan.head_dim == 0) return;
  if (rows > 0x7FFFFFFF || (plan.sq + k_rows - 1) / k_rows > 65535 || plan.head_dim > 128) {
    throw invalid_argument(
        "attention: at most 2^31-1 batch x heads, 2^21 queries and head_dim 128");
  }
  const cudaStream_t s = as_stream(stream);
  if (plan.sk == 0) {  // softmax over no keys times no values: zeros, as MatMul gives
    COOLBENCH_CUDA_CALL(cudaMemsetAsync(out, 0, rows * plan.sq * plan.head_dim * size_of(type), s));
    return;
  }
  const attention_launch l = choose(plan, type != dtype::float32);
  if (l.blocks_y > 65535) {  // the grid's y limit: query tiles, or decode's chunks of keys
    throw invalid_argument("attention: " + std::to_string(plan.sq) + " queries over " +
                           std::to_string(plan.sk) + " keys need " + std::to_string(l.blocks_y) +
                           " blocks along the grid's y axis, over its limit of 65535; run it "
                           "unfused (session_options::fuse = false) or split the sequence");
  }
  if (l.kernel == attention_kernel::mma_rows64 || l.kernel == attention_kernel::mma_split_keys) {
    launch_mma_attention(type, q, k, v, bias, mask, out, plan, l, stream);
    return;
  }
  dispatch(type, float_list{}, [&](auto t) {
    using T = typename decltype(t)::type;
    const auto* qt = static_cast<const T*>(q);
    const auto* kt = static_cast<const T*>(k);
    const auto* vt = static_cast<const T*>(v);
    const auto* bt = static_cast<const T*>(bias);
    auto* ot = static_cast<T*>(out);
    if (l.kernel == attention_kernel::decode_split) {
      split_kernel<T><<<dim3(static_cast<unsigned>(rows), static_cast<unsigned>(l.blocks_y)),
                        k_threads, 0, s>>>(qt, kt, vt, bt, mask, scratch, plan, l.chunk);
      check_launch();
      combine_kernel<T>
          <<<static_cast<unsigned>(rows), k_threads, 0, s>>>(scratch, ot, plan, l.blocks_y);
      check_launch();
    } else if (plan.head_dim <= 64) {
      launch_flash<T, 64>(qt, kt, vt, bt, mask, ot, plan, s);
    } else {
      launch_flash<T, 128>(qt, kt, vt, bt, mask, ot, plan, s);
    }
  });
}

}  // namespace coolbench::engine::cuda
