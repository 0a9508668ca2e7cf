// coolbench.Attention's kernels, float32 arithmetic for every dtype.
//
// Prefill (tiled_kernel): a block takes 32 or 64 query rows of one (batch,
// head) and walks the keys in tiles of 64 through shared memory, keeping a
// running maximum and sum per row (online softmax), so the [sq, sk] scores
// never reach global memory; each thread makes a tile of scores and of the
// output from 16-byte shared loads (register tiling). With the causal flag
// the tiles past a block's last visible key are never loaded.
//
// The tensor-core kernels for float16 and bfloat16 are in attention_mma.cu
// and the Hopper wgmma ones (attention_wgmma.cu, attention_wgmma_overlap.cu),
// float32's 3xTF32 one in attention_tf32.cu (where 64-row blocks fill the
// SMs; this kernel below that), decode's (one query row) in
// attention_decode.cu; launch_shapes.hpp picks the kernel and grid.
#include <cfloat>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "engine/backends/cuda/attention.hpp"
#include "engine/backends/cuda/attention_common.cuh"
#include "engine/backends/cuda/attention_decode.hpp"
#include "engine/backends/cuda/attention_mma.cuh"
#include "engine/backends/cuda/common.cuh"

namespace coolbench::engine::cuda {
namespace {

constexpr int k_threads = 128;

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

// The register-tiled FMA kernel (attention_kernel::fma_tiled32, 64): a block of
// 128 threads takes 16·R query rows (R = RowsPerThread, 2 or 4) of one
// (batch, head) and walks the keys in tiles of 64. The 8 adjacent lanes of
// row group rg (0 to 15) share rows rg, rg + 16, ...; lane `group` of them scores
// keys group, group + 8, ... of the tile and owns output columns 4·group +
// 32·w .. + 3 for each w. Each step of 4 along the head dim, R + 8 16-byte
// shared loads (a row of Q each, a key of K each) feed 32·R FMAs, where
// its forerunner (four threads a row) took a load per FMA; the probabilities go through
// shared memory (K's room, once every warp has its scores) into the product
// with V the same way. Shared rows are Dim + 4 floats: 16-byte aligned, and
// the 8 adjacent keys a row group reads at once fall on distinct banks.
constexpr int k_tiled_keys = 64;
constexpr int k_tiled_pad = 4;
constexpr int k_tiled_p_stride = k_tiled_keys + 8;  // a warp's 4 row groups' stores on 32 banks

template <int Dim, int RowsPerThread>
constexpr std::size_t tiled_shared_bytes() {
  constexpr std::size_t stride = Dim + k_tiled_pad, rows = 16 * RowsPerThread;
  constexpr std::size_t k_room = k_tiled_keys * stride, p_room = rows * k_tiled_p_stride;
  return sizeof(float) *
         (rows * stride + (k_room > p_room ? k_room : p_room) + k_tiled_keys * stride);
}

// Rows [base, base + Rows) of a global matrix into shared rows `stride` floats apart, in parts
// of PartRows (tile_rows holds a part in registers: 16 a thread for K and 16 for V).
template <class T, int Dim, int Rows, int PartRows>
__device__ __forceinline__ void load_tile(const T* from, std::int64_t base, std::int64_t count,
                                          std::int64_t d, std::int64_t ld, float* to, int stride,
                                          float scale) {
#pragma unroll 1
  for (int part = 0; part < Rows / PartRows; ++part) {
    tile_rows<T, Dim, PartRows> rows;
    rows.fetch(from, base + part * PartRows, count, d, ld);
    rows.store(to + part * PartRows * stride, stride, scale);
  }
}

__device__ __forceinline__ float group_max(float v) {  // over the 8 lanes of a row group
  v = fmaxf(v, __shfl_xor_sync(0xffffffffU, v, 1));
  v = fmaxf(v, __shfl_xor_sync(0xffffffffU, v, 2));
  return fmaxf(v, __shfl_xor_sync(0xffffffffU, v, 4));
}
__device__ __forceinline__ float group_sum(float v) {
  v += __shfl_xor_sync(0xffffffffU, v, 1);
  v += __shfl_xor_sync(0xffffffffU, v, 2);
  return v + __shfl_xor_sync(0xffffffffU, v, 4);
}

__device__ __forceinline__ float dot4(float4 a, float4 b, float acc) {
  acc = fmaf(a.x, b.x, acc);
  acc = fmaf(a.y, b.y, acc);
  acc = fmaf(a.z, b.z, acc);
  return fmaf(a.w, b.w, acc);
}
__device__ __forceinline__ float lane_of(float4 a, int u) {
  return u == 0 ? a.x : u == 1 ? a.y : u == 2 ? a.z : a.w;
}

// Blocks an SM the registers allow: at head dim 64, 4 of 32 rows (128 registers) and 3 of 64
// (168: 128 spilled, the scores and the output tile live together with a step's 16-byte
// loads); at 128, 2.
template <int Dim, int RowsPerThread>
constexpr int tiled_blocks_an_sm() {
  return Dim > 64 ? 2 : RowsPerThread <= 2 ? 4 : 3;
}

template <class T, int Dim, int RowsPerThread>
__global__ void __launch_bounds__(k_threads, (tiled_blocks_an_sm<Dim, RowsPerThread>()))
    tiled_kernel(const T* q, const T* k, const T* v, const T* bias, const bool* mask, T* out,
                 attention_plan p) {
  constexpr int R = RowsPerThread, rows = 16 * R, stride = Dim + k_tiled_pad, cols = Dim / 32;
  constexpr int part_rows = Dim <= 64 ? 32 : 16;
  static_assert(rows % part_rows == 0 || rows < part_rows);
  constexpr int q_part_rows = rows < part_rows ? rows : part_rows;
  extern __shared__ float4 shared_tiles[];
  float* qs = reinterpret_cast<float*>(shared_tiles);  // [rows][stride], scaled
  float* ks = qs + rows * stride;                      // [64][stride]
  float* ps = ks;                                      // [rows][k_tiled_p_stride], after the scores
  constexpr int k_room = k_tiled_keys * stride > rows * k_tiled_p_stride ? k_tiled_keys * stride
                                                                         : rows * k_tiled_p_stride;
  float* vs = ks + k_room;  // [64][stride]
  const std::int64_t bh = blockIdx.x, b = bh / p.heads, h = bh % p.heads;
  const std::int64_t m0 = causal_tile(p) * rows;
  const std::int64_t d = p.head_dim;
  const T* qb = q + b * p.q_stride[0] + h * p.q_stride[1];
  const T* kb = k + b * p.k_stride[0] + h * p.k_stride[1];
  const T* vb = v + b * p.v_stride[0] + h * p.v_stride[1];
  load_tile<T, Dim, rows, q_part_rows>(qb, m0, p.sq, d, p.q_stride[2], qs, stride, p.scale);
  const int lane = static_cast<int>(threadIdx.x) % 32, group = lane % 8;
  const int row_group = static_cast<int>(threadIdx.x) / 32 * 4 + lane / 8;
  float peak[R], total[R], acc[R][4 * cols];  // total: this lane's keys only, summed at the end
#pragma unroll
  for (int i = 0; i < R; ++i) {
    peak[i] = -INFINITY;
    total[i] = 0;
#pragma unroll
    for (int c = 0; c < 4 * cols; ++c) acc[i][c] = 0;
  }
  std::int64_t end = p.sk;
  if (p.causal) {
    const std::int64_t last = m0 + rows - 1 + p.sk - p.sq;  // the last row's last visible key
    end = last + 1 < end ? last + 1 : end;
  }
  for (std::int64_t n0 = 0; n0 < end; n0 += k_tiled_keys) {
    // A part's K and V loads in flight together, the first part's before the barrier that
    // frees the previous tile (P in K's room, and V).
#pragma unroll 1
    for (int part = 0; part < k_tiled_keys / part_rows; ++part) {
      tile_rows<T, Dim, part_rows> keys, values;
      keys.fetch(kb, n0 + part * part_rows, p.sk, d, p.k_stride[2]);
      values.fetch(vb, n0 + part * part_rows, p.sk, d, p.v_stride[2]);
      if (part == 0) __syncthreads();
      keys.store(ks + part * part_rows * stride, stride, 1.0F);
      values.store(vs + part * part_rows * stride, stride, 1.0F);
    }
    __syncthreads();
    float s[R][8];
#pragma unroll
    for (int i = 0; i < R; ++i) {
#pragma unroll
      for (int t = 0; t < 8; ++t) s[i][t] = 0;
    }
#pragma unroll 2
    for (int c = 0; c < Dim; c += 4) {
      float4 qf[R];
#pragma unroll
      for (int i = 0; i < R; ++i) {
        qf[i] = *reinterpret_cast<const float4*>(qs + (row_group + 16 * i) * stride + c);
      }
#pragma unroll
      for (int t = 0; t < 8; ++t) {
        const float4 kf = *reinterpret_cast<const float4*>(ks + (group + 8 * t) * stride + c);
#pragma unroll
        for (int i = 0; i < R; ++i) s[i][t] = dot4(qf[i], kf, s[i][t]);
      }
    }
    __syncthreads();  // every warp's scores are made: P may take K's room
    // A whole tile of keys every row of the block sees, with no bias or mask, takes its scores
    // as they are (GPT-2's causal tiles below the diagonal): the per-score tests and offsets
    // cost about a quarter of a tile's instructions (the SASS).
    const bool plain = bias == nullptr && mask == nullptr && n0 + k_tiled_keys <= p.sk &&
                       (!p.causal || n0 + k_tiled_keys - 1 <= m0 + p.sk - p.sq);
    if (!plain) {  // a key at a time over the rows: a key's offsets die before the next's
#pragma unroll
      for (int t = 0; t < 8; ++t) {
        const std::int64_t j = n0 + group + 8 * t;
#pragma unroll
        for (int i = 0; i < R; ++i) {
          const std::int64_t row = m0 + row_group + 16 * i;
          const std::int64_t at = row < p.sq ? row : p.sq - 1;
          s[i][t] = j < p.sk ? adjust(s[i][t], bias, mask, p, b, h, at, j) : -INFINITY;
        }
      }
    }
#pragma unroll
    for (int i = 0; i < R; ++i) {
      const int row = row_group + 16 * i;
      float tile_peak = -INFINITY;
#pragma unroll
      for (int t = 0; t < 8; ++t) tile_peak = fmaxf(tile_peak, s[i][t]);
      const float next = fmaxf(peak[i], group_max(tile_peak));
      const float base = next == -INFINITY ? 0.0F : next;  // a row hidden so far adds nothing
      const float rescale = __expf(peak[i] - base);
      peak[i] = next;
      total[i] *= rescale;
#pragma unroll
      for (int c = 0; c < 4 * cols; ++c) acc[i][c] *= rescale;
#pragma unroll
      for (int t = 0; t < 8; ++t) {
        const float e = __expf(s[i][t] - base);
        total[i] += e;
        ps[row * k_tiled_p_stride + group + 8 * t] = e;
      }
    }
    __syncwarp();  // a row's probabilities come from its own row group's lanes
#pragma unroll 1
    for (int j = 0; j < k_tiled_keys; j += 4) {
      float4 pf[R];
#pragma unroll
      for (int i = 0; i < R; ++i) {
        pf[i] = *reinterpret_cast<const float4*>(ps + (row_group + 16 * i) * k_tiled_p_stride + j);
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) {
#pragma unroll
        for (int w = 0; w < cols; ++w) {
          const float4 vf =
              *reinterpret_cast<const float4*>(vs + (j + u) * stride + 4 * group + 32 * w);
#pragma unroll
          for (int i = 0; i < R; ++i) {
            const float pu = lane_of(pf[i], u);
            acc[i][4 * w + 0] = fmaf(pu, vf.x, acc[i][4 * w + 0]);
            acc[i][4 * w + 1] = fmaf(pu, vf.y, acc[i][4 * w + 1]);
            acc[i][4 * w + 2] = fmaf(pu, vf.z, acc[i][4 * w + 2]);
            acc[i][4 * w + 3] = fmaf(pu, vf.w, acc[i][4 * w + 3]);
          }
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const float row_total = group_sum(total[i]);  // every lane, before any leaves
    const std::int64_t row = m0 + row_group + 16 * i;
    if (row >= p.sq) continue;
    T* o = out + b * p.out_stride[0] + h * p.out_stride[1] + row * p.out_stride[2];
#pragma unroll
    for (int w = 0; w < cols; ++w) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int col = 4 * group + 32 * w + e;
        if (col < d) o[col] = narrow<T>(finish(acc[i][4 * w + e], row_total, p.zero_empty_rows));
      }
    }
  }
}

template <class T, int Dim, int RowsPerThread>
void launch_tiled(const T* q, const T* k, const T* v, const T* bias, const bool* mask, T* out,
                  const attention_plan& p, std::int64_t blocks_y, cudaStream_t stream) {
  constexpr std::size_t bytes = tiled_shared_bytes<Dim, RowsPerThread>();
  const auto kernel = tiled_kernel<T, Dim, RowsPerThread>;
  if constexpr (bytes > 48 * 1024) {
    COOLBENCH_CUDA_CALL(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(bytes)));
  }
  const dim3 grid(static_cast<unsigned>(p.batch * p.heads), static_cast<unsigned>(blocks_y));
  kernel<<<grid, k_threads, bytes, stream>>>(q, k, v, bias, mask, out, p);
  check_launch();
}

template <class T, int Dim>
void launch_fma(const T* q, const T* k, const T* v, const T* bias, const bool* mask, T* out,
                const attention_plan& p, const attention_launch& l, cudaStream_t stream) {
  if (l.kernel == attention_kernel::fma_tiled32) {
    launch_tiled<T, Dim, 2>(q, k, v, bias, mask, out, p, l.blocks_y, stream);
  } else {
    launch_tiled<T, Dim, 4>(q, k, v, bias, mask, out, p, l.blocks_y, stream);
  }
}

// Whether this build has attention_wgmma.cu's sm_90a kernel (src/engine/CMakeLists.txt defines
// COOLBENCH_ATTENTION_WGMMA where sm_90 is among the CUDA architectures).
#if defined(COOLBENCH_ATTENTION_WGMMA)
constexpr bool k_wgmma_built = true;
#else
constexpr bool k_wgmma_built = false;
#endif

// The kernel for a plan: the tensor cores where their sm_90 code is (the
// PTX the project also ships is for compute_75, without mma), float32's in
// 3xTF32 where it has the blocks, decode's 16-byte kernel where K's and V's
// layout allows, its chunks merged in a cluster where the grid is small
// (attention_decode_cluster_chunk); COOLBENCH_ATTENTION_KERNEL=fma, fma32, fma64, tf32x3,
// mma, halves, split_keys, wgmma, wgmma64 or wgmma_overlap forces one (launch_shapes.hpp; the wgmma
// kernels where attention_wgmma_fits, else the kernel picked), decode_scalar decode's kernel
// of an element a load, decode_vector the 16-byte one with the merge kernel, decode_cluster
// the clusters wherever the chunks allow, and
// COOLBENCH_ATTENTION_SCORES=general the tensor-core kernels' general score form
// (attention_mma.cu), for comparisons and tests.
attention_launch choose(const attention_plan& p, dtype type, const void* q, const void* k,
                        const void* v) {
  const bool sixteen_bits = type != dtype::float32;
  const char* env = std::getenv("COOLBENCH_ATTENTION_KERNEL");
  const std::string_view forced = env == nullptr ? "" : env;
  int device = 0, major = 0, minor = 0, sms = 0;
  COOLBENCH_CUDA_CALL(cudaGetDevice(&device));
  COOLBENCH_CUDA_CALL(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  COOLBENCH_CUDA_CALL(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  COOLBENCH_CUDA_CALL(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  // The tensor-core kernels step along a bias or mask row by 32-bit offsets (attention_mma.cu).
  constexpr std::int64_t step_limit = std::int64_t{1} << 24;
  const bool steps_fit =
      std::llabs(p.bias_stride[3]) < step_limit && std::llabs(p.mask_stride[3]) < step_limit;
  if (attention_wgmma_forced(forced) && !k_wgmma_built) {
    // Once a process: a forced kernel that silently is another would mislead a comparison.
    static const bool told = [] {
      std::fprintf(
          stderr,
          "coolbench: COOLBENCH_ATTENTION_KERNEL=wgmma, wgmma64 or wgmma_overlap, but this build "
          "has no sm_90a attention kernel (sm_90 is not among "
          "CMAKE_CUDA_ARCHITECTURES); attention takes the kernel it picks\n");
      return true;
    }();
    static_cast<void>(told);
  }
  const bool wgmma_fits = attention_wgmma_fits(
      k_wgmma_built, major, minor, size_of(type), p.head_dim, p.q_stride, p.k_stride, p.v_stride,
      reinterpret_cast<std::uintptr_t>(q), reinterpret_cast<std::uintptr_t>(k),
      reinterpret_cast<std::uintptr_t>(v));
  // Head dims up to 64 take the 64-wide kernel, whose 64-key tiles fit two blocks an SM.
  attention_launch l = plan_attention(p.batch * p.heads, p.sq, p.sk, major == 9 && steps_fit, sms,
                                      forced, !sixteen_bits, wgmma_fits, p.head_dim <= 64);
  if (l.kernel == attention_kernel::decode_split && forced != "decode_scalar" &&
      attention_decode_vector_fits(p.head_dim, size_of(type), p.k_stride, p.v_stride,
                                   reinterpret_cast<std::uintptr_t>(k),
                                   reinterpret_cast<std::uintptr_t>(v))) {
    l.kernel = attention_kernel::decode_vector;
    const std::int64_t cluster_chunk =
        attention_decode_cluster_chunk(p.batch * p.heads, p.sk, l.chunk, major == 9, sms, forced);
    if (cluster_chunk > 0) {
      l.kernel = attention_kernel::decode_cluster;
      l.chunk = cluster_chunk;
      l.blocks_y = (p.sk + cluster_chunk - 1) / cluster_chunk;
    }
  }
  const char* scores = std::getenv("COOLBENCH_ATTENTION_SCORES");
  l.general_scores = scores != nullptr && std::string_view(scores) == "general";
  return l;
}

}  // namespace

int wgmma_attention_blocks_per_sm(dtype type, std::int64_t head_dim, bool keys64) {
#if defined(COOLBENCH_ATTENTION_WGMMA)
  int device = 0, major = 0, minor = 0;
  COOLBENCH_CUDA_CALL(cudaGetDevice(&device));
  COOLBENCH_CUDA_CALL(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  COOLBENCH_CUDA_CALL(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  if (major != 9 || minor != 0) return 0;  // sm_90a code runs on compute capability 9.0 alone
  return wgmma_blocks_per_sm(type, head_dim, keys64);
#else
  static_cast<void>(type), static_cast<void>(head_dim), static_cast<void>(keys64);
  return 0;
#endif
}

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
  if (rows > 0x7FFFFFFF || plan.sq > std::int64_t{65535} * 32 || plan.head_dim > 128) {
    throw invalid_argument(
        "attention: at most 2^31-1 batch x heads, 2^21 queries and head_dim 128");
  }
  const cudaStream_t s = as_stream(stream);
  if (plan.sk == 0) {  // softmax over no keys times no values: zeros, as MatMul gives
    COOLBENCH_CUDA_CALL(cudaMemsetAsync(out, 0, rows * plan.sq * plan.head_dim * size_of(type), s));
    return;
  }
  const attention_launch l = choose(plan, type, q, k, v);
  if (l.blocks_y > 65535) {  // the grid's y limit: query tiles, or decode's chunks of keys
    throw invalid_argument("attention: " + std::to_string(plan.sq) + " queries over " +
                           std::to_string(plan.sk) + " keys need " + std::to_string(l.blocks_y) +
                           " blocks along the grid's y axis, over its limit of 65535; run it "
                           "unfused (session_options::fuse = false) or split the sequence");
  }
  if (l.kernel == attention_kernel::mma_rows64 || l.kernel == attention_kernel::mma_split_keys ||
      l.kernel == attention_kernel::mma_halves) {
    launch_mma_attention(type, q, k, v, bias, mask, out, plan, l, stream);
    return;
  }
  if (l.kernel == attention_kernel::wgmma_rows128 ||
      l.kernel == attention_kernel::wgmma_keys64_rows128 ||
      l.kernel == attention_kernel::wgmma_overlap_rows128) {
#if defined(COOLBENCH_ATTENTION_WGMMA)
    if (l.kernel != attention_kernel::wgmma_overlap_rows128) {
      launch_wgmma_attention(type, q, k, v, bias, mask, out, plan, l, stream);
    } else {
      launch_wgmma_overlap_attention(type, q, k, v, bias, mask, out, plan, l, stream);
    }
    return;
#else
    throw invalid_argument(  // choose() takes it only where it is built
        "attention: the wgmma kernel was chosen, but this build has no sm_90a code for it");
#endif
  }
  if (l.kernel == attention_kernel::tf32x3_rows64) {
    launch_tf32_attention(static_cast<const float*>(q), static_cast<const float*>(k),
                          static_cast<const float*>(v), static_cast<const float*>(bias), mask,
                          static_cast<float*>(out), plan, l, stream);
    return;
  }
  if (l.kernel == attention_kernel::decode_split || l.kernel == attention_kernel::decode_vector ||
      l.kernel == attention_kernel::decode_cluster) {
    launch_decode_attention(type, q, k, v, bias, mask, out, scratch, plan, l, stream);
    return;
  }
  dispatch(type, float_list{}, [&](auto t) {
    using T = typename decltype(t)::type;
    const auto* qt = static_cast<const T*>(q);
    const auto* kt = static_cast<const T*>(k);
    const auto* vt = static_cast<const T*>(v);
    const auto* bt = static_cast<const T*>(bias);
    auto* ot = static_cast<T*>(out);
    if (plan.head_dim <= 64) {
      launch_fma<T, 64>(qt, kt, vt, bt, mask, ot, plan, l, s);
    } else {
      launch_fma<T, 128>(qt, kt, vt, bt, mask, ot, plan, l, s);
    }
  });
}

}  // namespace coolbench::engine::cuda
