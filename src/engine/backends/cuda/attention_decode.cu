// coolbench.Attention for one query row (decode, sq == 1): one row has too
// little work for a block per (batch, head), so a split kernel scores one
// chunk of keys per block and writes its maximum, sum and unnormalised
// output row to scratch, and combine_kernel rescales the chunks to the
// common maximum (launch_shapes.hpp's attention_decode_chunk sizes the
// chunks). vector_split_kernel reads K and V in 16-byte pieces where their
// layout allows (attention_decode_vector_fits), split_kernel an element a
// load otherwise; forced "decode_cluster", a (batch, head)'s chunks of
// vector_split_kernel merge in a thread block cluster instead.
#include <cooperative_groups.h>

#include <cfloat>
#include <type_traits>

#include "engine/backends/cuda/attention_common.cuh"
#include "engine/backends/cuda/attention_decode.hpp"
#include "engine/backends/cuda/common.cuh"

namespace coolbench::engine::cuda {
namespace {

constexpr int k_threads = 128;
constexpr int k_max_chunk = k_attention_max_chunk;  // keys per split-K block

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
//
// A warp scores a key (its lanes split the head dim, then 5 shuffles sum the
// products), 4 keys a warp at a time with all their loads issued before the
// first product: a warp that took its keys one by one waited out the memory
// latency and 5 dependent shuffles per key (GPT-2 at batch 8 after 1024 keys:
// 53 us a layer on the H200, where K and V are 25 MB, 6 us of bandwidth).
// Then a thread per output column (two per column at head dims up to 64, each
// half the keys) sums the probabilities times V, 8 loads in flight.
template <class T>
__global__ void __launch_bounds__(k_threads)
    split_kernel(const T* q, const T* k, const T* v, const T* bias, const bool* mask,
                 float* scratch, attention_plan p, std::int64_t chunk) {
  constexpr int warps = k_threads / 32, keys_a_warp = 4, dim_steps = 128 / 32;
  __shared__ float qv[128];  // zero past the head dim: every lane multiplies 4 of it
  __shared__ float scores[k_max_chunk];
  __shared__ float reduce[k_threads / 32];
  __shared__ float second_half[64];
  const std::int64_t bh = blockIdx.x, b = bh / p.heads, h = bh % p.heads, d = p.head_dim;
  const std::int64_t c0 = std::int64_t{blockIdx.y} * chunk;
  const std::int64_t c1 = c0 + chunk < p.sk ? c0 + chunk : p.sk;
  const T* kb = k + b * p.k_stride[0] + h * p.k_stride[1];
  const T* vb = v + b * p.v_stride[0] + h * p.v_stride[1];
  static_assert(k_threads == 128, "one thread a query element, up to head dim 128");
  qv[threadIdx.x] = threadIdx.x < d
                        ? load(q, b * p.q_stride[0] + h * p.q_stride[1] + threadIdx.x) * p.scale
                        : 0.0F;
  __syncthreads();
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  for (std::int64_t j0 = c0 + warp; j0 < c1; j0 += keys_a_warp * warps) {
    float kv[keys_a_warp][dim_steps];
#pragma unroll
    for (int u = 0; u < keys_a_warp; ++u) {
      const std::int64_t j = j0 + std::int64_t{u} * warps;
#pragma unroll
      for (int s = 0; s < dim_steps; ++s) {
        const int c = lane + 32 * s;
        kv[u][s] = j < c1 && c < d ? load(kb, j * p.k_stride[2] + c) : 0.0F;
      }
    }
    float dot[keys_a_warp];
#pragma unroll
    for (int u = 0; u < keys_a_warp; ++u) {
      dot[u] = 0;
#pragma unroll
      for (int s = 0; s < dim_steps; ++s) dot[u] += kv[u][s] * qv[lane + 32 * s];
    }
    for (int o = 16; o > 0; o /= 2) {
#pragma unroll
      for (int u = 0; u < keys_a_warp; ++u) dot[u] += __shfl_xor_sync(0xffffffffU, dot[u], o);
    }
    if (lane == 0) {
#pragma unroll
      for (int u = 0; u < keys_a_warp; ++u) {
        const std::int64_t j = j0 + std::int64_t{u} * warps;
        if (j < c1) scores[j - c0] = adjust(dot[u], bias, mask, p, b, h, 0, j);
      }
    }
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
  const bool halves = d <= 64;  // then threads 64-127 take the odd keys of columns 0-63
  const int col = halves ? static_cast<int>(threadIdx.x) % 64 : static_cast<int>(threadIdx.x);
  const int half = halves ? static_cast<int>(threadIdx.x) / 64 : 0;
  const int stride = halves ? 2 : 1;
  float acc = 0;
  if (col < d) {
    const T* vc = vb + col;
#pragma unroll 8
    for (std::int64_t j = c0 + half; j < c1; j += stride) {
      acc += scores[j - c0] * load(vc, j * p.v_stride[2]);
    }
  }
  if (halves) {
    if (half == 1) second_half[col] = acc;
    __syncthreads();
    if (half == 1) return;
    acc += second_half[col];
  }
  if (col < d) row[2 + col] = acc;
  if (threadIdx.x == 0) {
    row[0] = peak;
    row[1] = total;
  }
}

// split_kernel's work with K and V read in 16-byte pieces. A group of Group
// adjacent lanes takes a key, each lane one piece of its head dim (lanes past
// the head dim idle), so one load instruction of a warp reads 32 / Group
// whole key rows. Each lane issues the loads of 8 keys of K and of V before
// the first product, and keeps a running maximum, sum and output piece over
// its group's keys (V's loads are in flight while the scores are taken); the
// groups then merge through shared memory. split_kernel, a thread per key
// dim and an element a load, takes 16 dependent round trips to memory for K
// and 16 for V over a 256-key chunk: GPT-2 fp16 at batch 8 after 1,024 keys
// on an H100 took 45.9 us there and 10.9 here (2.3 TB/s), level with cuDNN's
// 10.6 (docs/perf/engine.md, "2026-12-07, morning").
//
// Clustered: the chunks of a (batch, head) are one thread block cluster along y
// (attention_decode_cluster_chunk: at most 8 chunks, wider ones where the
// plan had more); each block leaves its row in its own shared
// memory and the cluster's first block merges the rows through distributed
// shared memory and stores the output, as combine_kernel would: no second
// kernel, no scratch, where the merge kernel's launch and its round trip through
// memory took about as long as the chunks (GPT-2 at batch 1 after 128 keys: 6.6
// us against cuDNN's 4.1 on an H100, docs/perf/engine.md, "2026-12-07, morning").
template <class T, int Group, bool Clustered>
__global__ void __launch_bounds__(k_threads, 4)
    vector_split_kernel(const T* q, const T* k, const T* v, const T* bias, const bool* mask,
                        float* scratch, T* out, attention_plan p, std::int64_t chunk) {
  constexpr int piece = k_piece<T>, groups = k_threads / Group, keys_a_lane = 8;
  static_assert(Group >= 1 && Group <= 32 && 32 % Group == 0, "a group within a warp");
  __shared__ float group_max[groups], group_sum[groups], group_weight[groups];
  __shared__ float group_out[groups][Group * piece];
  const std::int64_t bh = blockIdx.x, b = bh / p.heads, h = bh % p.heads, d = p.head_dim;
  const std::int64_t c0 = std::int64_t{blockIdx.y} * chunk;
  const std::int64_t c1 = c0 + chunk < p.sk ? c0 + chunk : p.sk;
  const int g = static_cast<int>(threadIdx.x) / Group,
            col = static_cast<int>(threadIdx.x) % Group * piece;
  const bool live = col < d;
  const T* kb = k + b * p.k_stride[0] + h * p.k_stride[1] + col;
  const T* vb = v + b * p.v_stride[0] + h * p.v_stride[1] + col;
  float qf[piece];
#pragma unroll
  for (int e = 0; e < piece; ++e) {
    qf[e] = live ? load(q, b * p.q_stride[0] + h * p.q_stride[1] + col + e) * p.scale : 0.0F;
  }
  float running = -INFINITY, total = 0, acc[piece] = {};
  // The same trip count in every lane: the shuffles take the whole warp.
  for (std::int64_t base = c0; base < c1; base += std::int64_t{groups} * keys_a_lane) {
    uint4 kr[keys_a_lane], vr[keys_a_lane];
#pragma unroll
    for (int u = 0; u < keys_a_lane; ++u) {
      const std::int64_t j = base + g + std::int64_t{u} * groups;
      const bool in = live && j < c1;
      kr[u] = in ? *reinterpret_cast<const uint4*>(kb + j * p.k_stride[2]) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < keys_a_lane; ++u) {
      const std::int64_t j = base + g + std::int64_t{u} * groups;
      const bool in = live && j < c1;
      vr[u] = in ? *reinterpret_cast<const uint4*>(vb + j * p.v_stride[2]) : make_uint4(0, 0, 0, 0);
    }
    float score[keys_a_lane];
#pragma unroll
    for (int u = 0; u < keys_a_lane; ++u) {
      float kf[piece];
      widen<T>(kr[u], kf);
      score[u] = 0;
#pragma unroll
      for (int e = 0; e < piece; ++e) score[u] += qf[e] * kf[e];
    }
    // A butterfly: every lane of the group ends with the same sum, bit for bit.
#pragma unroll
    for (int o = Group / 2; o > 0; o /= 2) {
#pragma unroll
      for (int u = 0; u < keys_a_lane; ++u) score[u] += __shfl_xor_sync(0xffffffffU, score[u], o);
    }
    float top = running;
#pragma unroll
    for (int u = 0; u < keys_a_lane; ++u) {
      const std::int64_t j = base + g + std::int64_t{u} * groups;
      score[u] = j < c1 ? adjust(score[u], bias, mask, p, b, h, 0, j) : -INFINITY;
      top = fmaxf(top, score[u]);
    }
    const float shift = top == -INFINITY ? 0.0F : top;
    const float keep = __expf(running - shift);  // 0 while running is -inf
    total *= keep;
#pragma unroll
    for (int e = 0; e < piece; ++e) acc[e] *= keep;
#pragma unroll
    for (int u = 0; u < keys_a_lane; ++u) {
      const float w = __expf(score[u] - shift);
      float vf[piece];
      widen<T>(vr[u], vf);
      total += w;
#pragma unroll
      for (int e = 0; e < piece; ++e) acc[e] += w * vf[e];
    }
    running = top;
  }
  if (col == 0) {
    group_max[g] = running;
    group_sum[g] = total;
  }
  if (live) {
#pragma unroll
    for (int e = 0; e < piece; ++e) group_out[g][col + e] = acc[e];
  }
  __syncthreads();
  float peak = -INFINITY;
  for (int i = 0; i < groups; ++i) peak = fmaxf(peak, group_max[i]);
  const float shift = peak == -INFINITY ? 0.0F : peak;
  if (threadIdx.x < groups) group_weight[threadIdx.x] = __expf(group_max[threadIdx.x] - shift);
  __syncthreads();
  __shared__ float cluster_row[Clustered ? 2 + 32 * piece : 1];
  float* row = Clustered ? cluster_row : scratch + (bh * gridDim.y + blockIdx.y) * (d + 2);
  for (std::int64_t c = threadIdx.x; c < d; c += k_threads) {
    float merged = 0;
    for (int i = 0; i < groups; ++i) merged += group_out[i][c] * group_weight[i];
    row[2 + c] = merged;
  }
  if (threadIdx.x == 0) {
    float sum = 0;
    for (int i = 0; i < groups; ++i) sum += group_sum[i] * group_weight[i];
    row[0] = peak;
    row[1] = sum;
  }
  if constexpr (Clustered) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    const cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();  // every block's row is in its shared memory
    if (cluster.block_rank() == 0) {
      const auto chunks = static_cast<int>(cluster.num_blocks());
      float top = -INFINITY;
      for (int c = 0; c < chunks; ++c) top = fmaxf(top, *cluster.map_shared_rank(cluster_row, c));
      const float base = top == -INFINITY ? 0.0F : top;
      T* o = out + b * p.out_stride[0] + h * p.out_stride[1];
      for (std::int64_t col = threadIdx.x; col < d; col += k_threads) {
        float total = 0, acc = 0;
        for (int c = 0; c < chunks; ++c) {
          const float* other = cluster.map_shared_rank(cluster_row, c);
          const float w = __expf(other[0] - base);
          total += other[1] * w;
          acc += other[2 + col] * w;
        }
        o[col] = narrow<T>(finish(acc, total, p.zero_empty_rows));
      }
    }
    cluster.sync();  // the first block is done reading the others' shared memory
#else
    __trap();  // clusters are sm_90's: attention_decode_cluster_chunk picks them there alone
#endif
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

}  // namespace

void launch_decode_attention(dtype type, const void* q, const void* k, const void* v,
                             const void* bias, const bool* mask, void* out, float* scratch,
                             const attention_plan& plan, const attention_launch& l, void* stream) {
  const cudaStream_t s = as_stream(stream);
  const auto rows = static_cast<unsigned>(plan.batch * plan.heads);
  const dim3 grid(rows, static_cast<unsigned>(l.blocks_y));
  dispatch(type, float_list{}, [&](auto t) {
    using T = typename decltype(t)::type;
    const auto* qt = static_cast<const T*>(q);
    const auto* kt = static_cast<const T*>(k);
    const auto* vt = static_cast<const T*>(v);
    const auto* bt = static_cast<const T*>(bias);
    auto* ot = static_cast<T*>(out);
    const bool clustered = l.kernel == attention_kernel::decode_cluster;
    const auto vector_split = [&](auto kernel) {
      if (!clustered) {
        kernel<<<grid, k_threads, 0, s>>>(qt, kt, vt, bt, mask, scratch, ot, plan, l.chunk);
        return;
      }
      // A (batch, head)'s chunks, the grid's y, one cluster.
      cudaLaunchAttribute cluster{};
      cluster.id = cudaLaunchAttributeClusterDimension;
      cluster.val.clusterDim.x = 1;
      cluster.val.clusterDim.y = grid.y;
      cluster.val.clusterDim.z = 1;
      cudaLaunchConfig_t config{};
      config.gridDim = grid;
      config.blockDim = dim3(k_threads);
      config.stream = s;
      config.attrs = &cluster;
      config.numAttrs = 1;
      COOLBENCH_CUDA_CALL(
          cudaLaunchKernelEx(&config, kernel, qt, kt, vt, bt, mask, scratch, ot, plan, l.chunk));
    };
    if (l.kernel == attention_kernel::decode_vector || clustered) {
      // A group of lanes a key: the head dim's pieces, rounded up to a power of two.
      const std::int64_t pieces = (plan.head_dim + k_piece<T> - 1) / k_piece<T>;
      const auto pick = [&](auto cluster) {
        constexpr bool c = decltype(cluster)::value;
        if (pieces <= 4) {
          vector_split(vector_split_kernel<T, 4, c>);
        } else if (pieces <= 8) {
          vector_split(vector_split_kernel<T, 8, c>);
        } else if (pieces <= 16) {
          vector_split(vector_split_kernel<T, 16, c>);
        } else {  // float32 past head dim 64
          vector_split(vector_split_kernel<T, 32, c>);
        }
      };
      if (clustered) {
        pick(std::true_type{});
      } else {
        pick(std::false_type{});
      }
    } else {
      split_kernel<T><<<grid, k_threads, 0, s>>>(qt, kt, vt, bt, mask, scratch, plan, l.chunk);
    }
    check_launch();
    if (clustered) return;  // merged in the clusters
    combine_kernel<T><<<rows, k_threads, 0, s>>>(scratch, ot, plan, l.blocks_y);
    check_launch();
  });
}

}  // namespace coolbench::engine::cuda
