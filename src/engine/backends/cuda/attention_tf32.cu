// coolbench.Attention's float32 prefill on the tensor cores (sm_90,
// tf32x3_rows64): the online softmax of attention_mma.cu's 64-row kernel,
// with both products on mma.sync m16n8k8 in TF32. Each float32 operand is
// split into its TF32 rounding and the TF32 rounding of what is left, and
// each product taken as big·big + big·small + small·big ("3xTF32"; the
// small·small term, about 2^-22 of the product, is dropped): about 22 of
// float32's 24 bits, where one TF32 product keeps 11. PyTorch's float32
// scaled_dot_product_attention (its memory-efficient kernel) computes the
// same way on sm_80 and later. The register-tiled FMA kernel (attention.cu)
// reached 2-29 TFLOP/s of the H200's 67 on GPT-2's shapes; this one was
// 1.18-1.33x faster on an H100 where its 64-row blocks fill the SMs, and is
// taken there (launch_shapes.hpp; COOLBENCH_ATTENTION_KERNEL=tf32x3 forces it).
//
// Fragments (PTX ISA, mma.m16n8k8 .tf32; g = lane / 4, t = lane % 4):
//   A 16x8: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4)
//   B 8x8:  b0 (k t, n g), b1 (k t + 4, n g)
//   C 16x8: c0 (g, 2t), c1 (g, 2t + 1), c2 (g + 8, 2t), c3 (g + 8, 2t + 1)
// The scores' C fragment holds keys 2t and 2t + 1 of each 8, where the
// product with V wants its A operand at k = t and t + 4. That product's
// k order is taken as keys 0, 2, 4, 6, 1, 3, 5, 7 (k = t is key 2t, k = t + 4
// key 2t + 1), on V's rows too, so the probabilities go in as they are,
// without shuffles between lanes.
#include "engine/backends/cuda/attention_mma.cuh"

namespace coolbench::engine::cuda {
namespace {

constexpr int k_rows = 64;  // 16 a warp
constexpr int k_threads = 128;
template <int Dim>
inline constexpr int keys_per_tile = Dim <= 64 ? 64 : 32;  // the score fragments' registers
// Floats a shared row: rows 16-byte aligned (cp.async), and a stride of 4
// modulo 32 banks puts a fragment load's 32 lanes on 32 banks (Q's and K's
// at 4g + t, V's at 8t + g).
template <int Dim>
inline constexpr int row_floats = Dim + 4;
// The 64 query rows, then two K and V tiles (the next tile copied while the
// warps work on this one): 87 KB at head dim 64, 101 KB at 128, two blocks
// an SM.
template <int Dim>
inline constexpr std::size_t shared_bytes = sizeof(float) *
                                            static_cast<std::size_t>(row_floats<Dim>) *
                                            (k_rows + 4 * keys_per_tile<Dim>);

struct tf32_pair {
  std::uint32_t big = 0, small = 0;
};

// x as big + small, each a TF32 value in a float32's bits (round to nearest, ties away).
__device__ __forceinline__ tf32_pair split(float x) {
  tf32_pair r;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r.big) : "f"(x));
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r.small) : "f"(x - __uint_as_float(r.big)));
#else
  (void)x;
  __trap();  // the host launches this kernel only on sm_90
#endif
  return r;
}

__device__ __forceinline__ void mma1688(float (&c)[4], const std::uint32_t (&a)[4],
                                        std::uint32_t b0, std::uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  (void)c, (void)a, (void)b0, (void)b1;
  __trap();
#endif
}

// c += a·b in 3xTF32, the small terms first.
__device__ __forceinline__ void mma3(float (&c)[4], const std::uint32_t (&a_big)[4],
                                     const std::uint32_t (&a_small)[4], tf32_pair b0,
                                     tf32_pair b1) {
  mma1688(c, a_small, b0.big, b1.big);
  mma1688(c, a_big, b0.small, b1.small);
  mma1688(c, a_big, b0.big, b1.big);
}

// The A fragment (big and small parts) of four float32 values in a0..a3's order.
struct a_fragment {
  std::uint32_t big[4], small[4];
  __device__ __forceinline__ a_fragment(float a0, float a1, float a2, float a3) {
    const tf32_pair p[4] = {split(a0), split(a1), split(a2), split(a3)};
#pragma unroll
    for (int i = 0; i < 4; ++i) big[i] = p[i].big, small[i] = p[i].small;
  }
};

// One tile of keys [n0, n0 + keys) for the warp's 16 rows (this thread's r0
// and r0 + 8): scores, adjusted, the running maximum and sum, the output
// rescaled and the probabilities times V added. `Plain`: no bias and no
// mask (the causal flag and the keys' end at most).
template <int Dim, bool Plain>
__device__ __forceinline__ void attend_tile(const float* qs, const float* ks, const float* vs,
                                            std::int64_t n0, const attention_plan& p,
                                            const score_rows<float>& rows, int r0,
                                            mma::row_state<Dim>& r) {
  constexpr int keys = keys_per_tile<Dim>, st = row_floats<Dim>;
  const int lane = static_cast<int>(threadIdx.x % 32), g = lane / 4, t = lane % 4;
  float s[keys / 8][4];
#pragma unroll
  for (int nt = 0; nt < keys / 8; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0;
#pragma unroll
  for (int kk = 0; kk < Dim / 8; ++kk) {
    const float* q0 = qs + r0 * st + kk * 8 + t;  // rows r0 and r0 + 8, columns t and t + 4
    const a_fragment a(q0[0], q0[8 * st], q0[4], q0[8 * st + 4]);
#pragma unroll
    for (int nt = 0; nt < keys / 8; ++nt) {
      const float* k0 = ks + (nt * 8 + g) * st + kk * 8 + t;  // key g of the 8, columns t, t + 4
      mma3(s[nt], a.big, a.small, split(k0[0]), split(k0[4]));
    }
  }
  // Scaled, biased or masked, and hidden past the keys each row sees.
  int visible[2];
  [[maybe_unused]] const float* bias_at[2] = {nullptr, nullptr};
  [[maybe_unused]] const bool* mask_at[2] = {nullptr, nullptr};
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const std::int64_t limit = rows.limit[i] - n0;
    visible[i] = limit <= 0 ? 0 : limit >= keys ? keys : static_cast<int>(limit);
    if constexpr (!Plain) {
      const std::int64_t first = n0 + t * 2;  // this thread's first column of the tile
      if (rows.bias[i] != nullptr) bias_at[i] = rows.bias[i] + first * rows.bias_step;
      if (rows.mask[i] != nullptr) mask_at[i] = rows.mask[i] + first * rows.mask_step;
    }
  }
  float tile_peak[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int nt = 0; nt < keys / 8; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = e / 2, from_first = nt * 8 + e % 2;
      float x = s[nt][e] * p.scale;
      if (t * 2 + from_first >= visible[i]) {
        x = -INFINITY;
      } else if constexpr (!Plain) {
        if (bias_at[i] != nullptr) x += load(bias_at[i], from_first * rows.bias_step);
        if (mask_at[i] != nullptr && mask_at[i][from_first * rows.mask_step] != p.mask_keeps) {
          x = p.mask_value;
        }
      }
      s[nt][e] = x;
      tile_peak[i] = fmaxf(tile_peak[i], x);
    }
  }
  mma::softmax_step<Dim>(s, tile_peak, r);
  // The probabilities of keys nt * 8 + 0..7 in k order 0, 2, 4, 6, 1, 3, 5, 7: a0 (row g, key
  // 2t) is c0, a1 (row g + 8, key 2t) c2, a2 (row g, key 2t + 1) c1, a3 c3; V's rows the same.
#pragma unroll
  for (int nt = 0; nt < keys / 8; ++nt) {
    const a_fragment a(s[nt][0], s[nt][2], s[nt][1], s[nt][3]);
    const float* v0 = vs + (nt * 8 + 2 * t) * st + g;  // keys 2t and 2t + 1, column g of each 8
#pragma unroll
    for (int dt = 0; dt < Dim / 8; ++dt) {
      mma3(r.o[dt], a.big, a.small, split(v0[dt * 8]), split(v0[st + dt * 8]));
    }
  }
}

// A block takes 64 query rows of one (batch, head), 16 a warp, and walks
// its keys tile by tile, the 4 warps sharing each K and V tile and the next
// tile's copies in flight while they work on this one; causal blocks start
// longest first (causal_tile).
template <int Dim, bool Plain>
__global__ void __launch_bounds__(k_threads, 2)
    tf32x3_kernel(const float* q, const float* k, const float* v, const float* bias,
                  const bool* mask, float* out, attention_plan p) {
  constexpr int keys = keys_per_tile<Dim>, st = row_floats<Dim>;
  extern __shared__ __align__(16) unsigned char tf32_shared[];
  float* qs = reinterpret_cast<float*>(tf32_shared);  // [64][st]
  float* tiles = qs + k_rows * st;                    // two of: K [keys][st], then V
  const block_at at = locate(p, k_rows, true);
  const float* kb = k + at.b * p.k_stride[0] + at.h * p.k_stride[1];
  const float* vb = v + at.b * p.v_stride[0] + at.h * p.v_stride[1];
  const int r0 = static_cast<int>(threadIdx.x / 32) * 16 + static_cast<int>(threadIdx.x % 32) / 4;
  mma::copy_tile<float, Dim, k_rows, k_threads, st>(
      qs, q + at.b * p.q_stride[0] + at.h * p.q_stride[1], at.m0, p.sq, p.head_dim, p.q_stride[2],
      static_cast<int>(threadIdx.x));
  const score_rows<float> rows = rows_at(p, at, at.m0 + r0, bias, mask);
  mma::row_state<Dim> r;
  const auto copy_keys = [&](std::int64_t n0, int buffer) {
    float* ks = tiles + buffer * 2 * keys * st;
    mma::copy_tile<float, Dim, keys, k_threads, st>(ks, kb, n0, p.sk, p.head_dim, p.k_stride[2],
                                                    static_cast<int>(threadIdx.x));
    mma::copy_tile<float, Dim, keys, k_threads, st>(ks + keys * st, vb, n0, p.sk, p.head_dim,
                                                    p.v_stride[2], static_cast<int>(threadIdx.x));
  };
  if (at.end > 0) copy_keys(0, 0);  // in flight with the query rows
  int buffer = 0;
  for (std::int64_t n0 = 0; n0 < at.end; n0 += keys, buffer ^= 1) {
    mma::wait_copies();  // this tile (and, the first time, the query rows)
    // Every thread's copies of this tile are in, and every warp is done with the other
    // buffer (the previous tile): the next tile goes there while this one is worked on.
    __syncthreads();
    if (n0 + keys < at.end) copy_keys(n0 + keys, buffer ^ 1);
    const float* ks = tiles + buffer * 2 * keys * st;
    attend_tile<Dim, Plain>(qs, ks, ks + keys * st, n0, p, rows, r0, r);
  }
  mma::wait_copies();  // the query rows' copies, where no key is visible to any row
  store_rows<float, Dim>(r, p, at, r0, static_cast<int>(threadIdx.x % 4), out);
}

template <int Dim, bool Plain>
void launch_kernel(const float* q, const float* k, const float* v, const float* bias,
                   const bool* mask, float* out, const attention_plan& p, const attention_launch& l,
                   cudaStream_t stream) {
  constexpr std::size_t bytes = shared_bytes<Dim>;  // over 48 KB
  COOLBENCH_CUDA_CALL(cudaFuncSetAttribute(tf32x3_kernel<Dim, Plain>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(bytes)));
  const dim3 grid(static_cast<unsigned>(l.blocks_x), static_cast<unsigned>(l.blocks_y));
  tf32x3_kernel<Dim, Plain><<<grid, k_threads, bytes, stream>>>(q, k, v, bias, mask, out, p);
  check_launch();
}

}  // namespace

void launch_tf32_attention(const float* q, const float* k, const float* v, const float* bias,
                           const bool* mask, float* out, const attention_plan& p,
                           const attention_launch& l, void* stream) {
  const cudaStream_t s = as_stream(stream);
  const bool plain = bias == nullptr && mask == nullptr;
  if (p.head_dim <= 64) {
    (plain ? launch_kernel<64, true> : launch_kernel<64, false>)(q, k, v, bias, mask, out, p, l, s);
  } else {
    (plain ? launch_kernel<128, true> : launch_kernel<128, false>)(q, k, v, bias, mask, out, p, l,
                                                                   s);
  }
}

}  // namespace coolbench::engine::cuda
