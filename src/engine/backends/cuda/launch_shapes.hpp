// How the CUDA backend's hand-written kernels split their work: the grid,
// the block and the per-thread tiling each launch takes for a problem's
// sizes. Plain host code (no CUDA headers), so the choices and their
// bounds are unit-tested on the CPU (tests/engine/launch_shapes_test.cpp);
// the kernels (fused_layer_norm.cu, attention.cu, fused_elementwise.cu)
// launch what these return.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "engine/backends/cuda/kernels.hpp"
#include "engine/fusion/elementwise_program.hpp"

namespace coolbench::engine::cuda {

/// A LayerNorm launch over `rows` rows of `n` elements.
struct layer_norm_launch {
  bool warp_per_row = false;  // else one block per row
  int vec = 1;                // elements per load (16 bytes, or 1)
  int lane_elements = 0;      // warp kernel: registers of the row a lane holds (8, 16, 32, 64)
  std::int64_t blocks = 0;
  int threads = 0;
};

inline constexpr int k_layer_norm_warp_rows = 4;               // warps (rows) per block
inline constexpr std::int64_t k_layer_norm_warp_width = 2048;  // 32 lanes x 64 registers
inline constexpr int k_layer_norm_block_threads = 512;

/// `element` bytes per element; `aligned`: every pointer is 16-byte aligned.
/// 16-byte loads need n a multiple of their width too, so every row starts
/// aligned; otherwise each load takes one element.
inline layer_norm_launch plan_layer_norm(int element, std::int64_t rows, std::int64_t n,
                                         bool aligned) {
  layer_norm_launch l;
  const int wide = 16 / element;
  l.vec = aligned && n % wide == 0 ? wide : 1;
  if (n <= k_layer_norm_warp_width) {
    l.warp_per_row = true;
    const std::int64_t per_lane = (n + 31) / 32;  // elements, rounded up to whole loads below
    const std::int64_t loads = (per_lane + l.vec - 1) / l.vec;
    l.lane_elements = 64;
    for (const int e : {8, 16, 32}) {
      if (loads * l.vec <= e) {
        l.lane_elements = e;
        break;
      }
    }
    l.blocks = (rows + k_layer_norm_warp_rows - 1) / k_layer_norm_warp_rows;
    l.threads = k_layer_norm_warp_rows * 32;
    return l;
  }
  const std::int64_t lanes = (n / l.vec + 31) / 32 * 32;
  l.threads = static_cast<int>(std::min<std::int64_t>(lanes, k_layer_norm_block_threads));
  l.blocks = rows;
  return l;
}

/// A Concat of `row_bytes.size()` parts as one launch, or nullopt where it
/// takes one copy per part: more than k_concat_parts parts of non-zero
/// width, or none. Part i is [outer, row_bytes[i]] bytes; `addresses` are
/// the parts' and the output's. The piece is the widest of 16, 8, 4, 2 and
/// 1 bytes that every row and address is a multiple of, so a decode step's
/// key cache ([1, 12, 128, 64] beside [1, 12, 1, 64] in float16) moves 16
/// bytes a thread. Parts of width 0 are left out (`kept` gets the index of
/// each part kept, in order).
inline std::optional<concat_launch> plan_concat(std::int64_t outer,
                                                std::span<const std::int64_t> row_bytes,
                                                std::span<const std::uintptr_t> addresses,
                                                std::vector<std::size_t>& kept) {
  kept.clear();
  for (std::size_t i = 0; i < row_bytes.size(); ++i) {
    if (row_bytes[i] > 0) kept.push_back(i);
  }
  if (kept.empty() || kept.size() > static_cast<std::size_t>(k_concat_parts) || outer <= 0) {
    return std::nullopt;
  }
  concat_launch l;
  for (const int chunk : {16, 8, 4, 2, 1}) {
    bool fits = true;
    for (const std::size_t i : kept) fits = fits && row_bytes[i] % chunk == 0;
    for (const std::uintptr_t a : addresses) fits = fits && a % chunk == 0;
    if (fits) {
      l.chunk = chunk;
      break;
    }
  }
  l.parts = static_cast<int>(kept.size());
  l.outer = outer;
  for (std::size_t p = 0; p < kept.size(); ++p) {
    l.part_begin[p] = l.row_chunks;
    l.part_chunks[p] = row_bytes[kept[p]] / l.chunk;
    l.row_chunks += l.part_chunks[p];
  }
  l.count = outer * l.row_chunks;
  return l;
}

/// Where piece `i` of a concat's output comes from: the part (`part`) and
/// the piece within it. concat_kernel's index math, shared with the CPU test.
COOLBENCH_HOST_DEVICE inline std::int64_t concat_source(const concat_launch& l, std::int64_t i,
                                                        int& part) {
  const std::int64_t row = i / l.row_chunks, piece = i % l.row_chunks;
  part = 0;
  while (part + 1 < l.parts && piece >= l.part_begin[part + 1]) ++part;
  return row * l.part_chunks[part] + piece - l.part_begin[part];
}

/// coolbench.Attention's kernels (attention.cu, attention_mma.cu).
enum class attention_kernel {
  decode_split,           // sq == 1: chunks of keys over blocks, then a merge kernel
  decode_vector,          // the same reading K and V in 16-byte pieces (attention_decode.cu)
  decode_cluster,         // decode_vector's chunks of a (batch, head) one cluster, merged in it
  fma_tiled32,            // FMA, register-tiled: 32 query rows a block, 2 a thread (float32)
  fma_tiled64,            // the same, 64 query rows a block, 4 a thread
  mma_rows64,             // tensor cores: 64 query rows a block, the warps share each key tile
  mma_split_keys,         // tensor cores: 16 query rows a block, the warps split the keys
  mma_halves,             // tensor cores: 64 query rows a block of 8 warps, two halves of the keys
  tf32x3_rows64,          // float32 on the tensor cores (3xTF32), 64 query rows a block
  wgmma_rows128,          // Hopper's wgmma (sm_90a): 128 query rows a block of two warpgroups
  wgmma_overlap_rows128,  // the same, each tile's softmax under the last tile's P V; forced only
  wgmma_keys64_rows128,   // wgmma_rows128 on 64-key tiles, two blocks an SM at head dim 64
};

struct attention_launch {
  attention_kernel kernel = attention_kernel::fma_tiled64;
  std::int64_t blocks_x = 0;  // batch x heads
  std::int64_t blocks_y = 0;  // query tiles, or decode's chunks of keys
  std::int64_t chunk = 0;     // decode: keys a block
  /// Tensor cores: every score in attention_mma.cu's general form, whatever the bias
  /// (COOLBENCH_ATTENTION_SCORES=general, read with the kernel's own switch in choose()).
  bool general_scores = false;
};

inline constexpr std::int64_t k_attention_max_chunk = 256;

/// Keys per decode block: enough blocks to fill the GPU twice over (132 SMs
/// on an H200), at least 32 keys each.
inline std::int64_t attention_decode_chunk(std::int64_t batch_heads, std::int64_t sk) {
  std::int64_t chunk = k_attention_max_chunk;
  while (chunk > 32 && batch_heads * ((sk + chunk - 1) / chunk) < 264) chunk /= 2;
  return chunk;
}

/// Whether decode may read K and V in 16-byte pieces (attention_decode.cu's
/// vector kernel): the head dim a whole number of pieces (8 elements of a
/// 16-bit dtype, 4 of float32) and at most 32 of them, and K's and V's
/// addresses and strides over batch, heads and keys (in elements) on
/// 16-byte boundaries. Otherwise decode reads an element a load.
inline bool attention_decode_vector_fits(std::int64_t head_dim, std::size_t element_bytes,
                                         std::span<const std::int64_t, 3> k_stride,
                                         std::span<const std::int64_t, 3> v_stride,
                                         std::uintptr_t k, std::uintptr_t v) {
  if (element_bytes == 0 || 16 % element_bytes != 0) return false;
  const auto piece = static_cast<std::int64_t>(16 / element_bytes);
  if (head_dim % piece != 0 || head_dim > 32 * piece) return false;
  for (int i = 0; i < 3; ++i) {
    if (k_stride[i] % piece != 0 || v_stride[i] % piece != 0) return false;
  }
  return k % 16 == 0 && v % 16 == 0;
}

/// Query rows a block of the wgmma kernel (attention_wgmma.cu): 64 for each of two warpgroups.
inline constexpr std::int64_t k_attention_wgmma_rows = 128;

/// Whether attention_wgmma.cu's kernel (attention_kernel::wgmma_rows128), or
/// attention_wgmma_overlap.cu's (wgmma_overlap_rows128: the same block and tiles), can take an
/// attention: its sm_90a code in this build (`built`: sm_90 among the CUDA architectures), a
/// GPU of compute capability 9.0 exactly (sm_90a code runs there alone), a 16-bit dtype
/// (`element_bytes` 2), a head dim of whole 16-byte pieces up to 128 (cp.async copies 16 bytes;
/// the columns past it, up to 64 or 128, are zero-filled), and q's, k's and v's addresses and
/// strides over batch, heads and rows (0 where broadcast) on 16-byte boundaries. The output,
/// the bias and the mask take any layout (attention_mma.cuh's store_rows and general score form;
/// plan_attention's `tensor_cores` has kept the bias and mask steps below 2^24).
inline bool attention_wgmma_fits(bool built, int major, int minor, std::size_t element_bytes,
                                 std::int64_t head_dim, std::span<const std::int64_t, 3> q_stride,
                                 std::span<const std::int64_t, 3> k_stride,
                                 std::span<const std::int64_t, 3> v_stride, std::uintptr_t q,
                                 std::uintptr_t k, std::uintptr_t v) {
  if (!built || major != 9 || minor != 0 || element_bytes != 2) return false;
  constexpr std::int64_t piece = 8;  // 16-bit elements in 16 bytes
  if (head_dim <= 0 || head_dim > 128 || head_dim % piece != 0) return false;
  for (int i = 0; i < 3; ++i) {
    if (q_stride[i] % piece != 0 || k_stride[i] % piece != 0 || v_stride[i] % piece != 0) {
      return false;
    }
  }
  return q % 16 == 0 && k % 16 == 0 && v % 16 == 0;
}

/// Whether COOLBENCH_ATTENTION_KERNEL names one of the Hopper wgmma kernels (taken where
/// attention_wgmma_fits): "wgmma", "wgmma64" or "wgmma_overlap".
inline bool attention_wgmma_forced(std::string_view forced) {
  return forced == "wgmma" || forced == "wgmma64" || forced == "wgmma_overlap";
}

/// The most blocks a thread block cluster may hold on every GPU that has
/// clusters (sm_90's portable size).
inline constexpr std::int64_t k_attention_max_cluster = 8;

/// The most keys a block walks when decode's chunks run as one cluster: 8
/// chunks of at most 1,024 keys, past which a cluster's few blocks leave the
/// GPU idle and the merge kernel's many blocks win.
inline constexpr std::int64_t k_attention_max_cluster_chunk = 1024;

/// Keys a block when decode_vector's chunks of keys of one (batch, head) run
/// as one thread block cluster that merges them itself (attention_decode.cu),
/// with no merge kernel after; 0 where they don't. The plan's `chunk` where
/// it makes at most k_attention_max_cluster chunks of sk keys, else the
/// fewest whole 32-key steps that do, up to k_attention_max_cluster_chunk.
/// sm_90's clusters. By default where the clustered grid is at most two
/// blocks an SM (`sms`); on an H100, grids of 60, 84 and 240 blocks took 0.6
/// to 0.8 of the merge kernel's time and one of 480 took 1.25 of it
/// (docs/perf/engine.md, "2026-12-07, late morning"). `forced`:
/// "decode_cluster" clusters wherever the chunks allow, "decode_vector" and
/// "decode_scalar" never (the merge kernel's paths, for comparisons and
/// tests).
inline std::int64_t attention_decode_cluster_chunk(std::int64_t batch_heads, std::int64_t sk,
                                                   std::int64_t chunk, bool sm90, int sms,
                                                   std::string_view forced) {
  if (!sm90 || sk <= 0 || chunk <= 0 || batch_heads <= 0) return 0;
  if (forced == "decode_vector" || forced == "decode_scalar") return 0;
  std::int64_t keys = chunk;
  if ((sk + chunk - 1) / chunk > k_attention_max_cluster) {
    const std::int64_t widest = (sk + k_attention_max_cluster - 1) / k_attention_max_cluster;
    keys = (widest + 31) / 32 * 32;
    if (keys > k_attention_max_cluster_chunk) return 0;
  }
  if (forced == "decode_cluster") return keys;
  return batch_heads * ((sk + keys - 1) / keys) <= 2 * std::int64_t{sms} ? keys : 0;
}

/// The kernel and grid of an attention over batch x heads (batch_heads) of
/// sq queries and sk > 0 keys. `tensor_cores`: sm_90 (and bias and mask
/// steps the tensor-core kernels can take); `float32`: the dtype is float32,
/// not 16-bit. `sms`: the GPU's multiprocessors. `forced`: "" picks; "fma"
/// (the tiled FMA kernel, its rows picked), "fma32", "fma64", "mma" (64-row
/// tiles, 4 warps), "halves" (64-row tiles, 8 warps: two groups of 4 walking alternate key
/// tiles, merged at the end) or "split_keys" take that kernel wherever
/// it runs (decode always
/// splits: decode_split here, which attention.cu's choose() turns into
/// decode_vector where attention_decode_vector_fits and "decode_scalar" is
/// not forced; "tf32x3" takes float32 onto the tensor cores in 3xTF32,
/// attention_tf32.cu, as PyTorch's float32 attention computes; a name of
/// the other dtype's kernels picks as "" does; "wgmma" takes 16-bit prefill onto
/// attention_wgmma.cu's kernel where `wgmma_fits` (attention_wgmma_fits), else picks as ""
/// does; "wgmma_overlap" the same onto attention_wgmma_overlap.cu's kernel, forced only: 5-10 %
/// slower than wgmma on an H100; "wgmma64" onto attention_wgmma.cu's kernel on 64-key tiles
/// (at any head dim). Float32 takes
/// 3xTF32 where 64-row blocks are at least the SMs, else the FMA kernel: attention_bench on an H100
/// (2026-12-07, one process) had 3xTF32 1.18-1.33x faster at 192-1536 blocks (GPT-2 at batch 8 x
/// 128, 1 x 1024, 8 x 1024; BERT and ViT at batch 32) and level or slower at 24-96 (batch 1 at 128
/// and 197 tokens: 19.2 against 17.7 us for BERT, 24.8 against 21.9 for ViT). The tiled FMA kernel
/// takes 64 rows a block where that makes at least a block an SM, else 32 (twice the blocks, each
/// walking the keys with half the work a tile; the two not yet measured against each other). It
/// replaced a kernel of four threads a query row, which was 1.4-2.3x slower on the H200
/// (docs/perf/engine.md, "2026-12-06, late night").
/// By default the tensor cores take 64-row tiles unless that makes fewer
/// blocks than SMs over at most 256 x 256 scores a (batch, head): then
/// 16-row blocks that split the keys (4 times the blocks, each walking a
/// quarter of the key tiles). Splitting reads every key tile once per 16
/// query rows, not per 64, 4 times the L2 traffic, which long sequences
/// pay. Measured with attention_bench on an H100 after the score forms
/// (2026-12-06, late; both 16-bit dtypes): GPT-2 at 1024 tokens (192
/// blocks) 22.4 us on 64-row tiles against 31.0 split, head dim 128 at 512
/// tokens (96 blocks) 17.1 against 19.6-20.1; earlier on an H200 split had
/// won the first (45 against 59 us) and lost GPT-2 at batch 8 and 128
/// tokens (18.7 against 13.3). Between 197 x 197 (ViT at batch 1, split)
/// and 512 x 512 the bound is not measured.
/// 16-bit prefill takes the wgmma kernel where it fits and its 128-row blocks are at least twice
/// the SMs: attention_bench on an H100 (2026-12-07, one process) had it ahead of the mma kernels
/// there (GPT-2 8 x 1024, 768 blocks: 67.3 us against 70.7; BERT 32 x 128, 384 blocks: 17.5
/// against 18.7; ViT 32 x 197, 768 blocks: level), level at 96 blocks (GPT-2 8 x 128) and
/// behind below (GPT-2 1 x 1024, 96 blocks: 19.5 against the halves' 15.6; batch 1 at 128 and
/// 197 tokens: 6.3-8.3 against 5.7-7.4). "mma" keeps the mma kernels. There, at a head dim of
/// 64 or less (`keys64_two_blocks`: two blocks an SM), it runs on 64-key tiles: attention_bench
/// on an H100 (2026-12-08, one process) had GPT-2 8 x 1024 at 55.5 us against 67.5 on 128-key
/// tiles, BERT 32 x 128 16.9 against 17.6, ViT 32 x 197 33.1 against 42.3; at head dim 128 (one
/// block an SM either way) the 64-key tiles are not timed, so the 128-key kernel stays.
/// Of the 64-row tiles, 8 warps in two halves of the keys (one block an SM)
/// take walks of at least 512 keys over at most 1.5 blocks an SM, where 4
/// warps walk every tile one after the other: attention_bench on an H100
/// (2026-12-07, one process, both 16-bit dtypes) had GPT-2 at 1 x 1024 (192
/// blocks) at 15.5 us against 20.0, head dim 128 at 512 tokens (96 blocks)
/// 16.2 against 17.3; and halves slower wherever the walk is short or the
/// blocks many: GPT-2 8 x 128 (192 blocks, 2 tiles) 9.2 against 7.6, 8 x 1024
/// (1,536 blocks) 101 against 71, BERT and ViT at batch 32 27.5 and 65.5
/// against 19.1 and 42.2. Between 1.5 and 12 blocks an SM it is not measured.
inline attention_launch plan_attention(std::int64_t batch_heads, std::int64_t sq, std::int64_t sk,
                                       bool tensor_cores, int sms, std::string_view forced,
                                       bool float32 = false, bool wgmma_fits = false,
                                       bool keys64_two_blocks = false) {
  attention_launch l;
  l.blocks_x = batch_heads;
  const auto tiles = [&](std::int64_t rows) { return (sq + rows - 1) / rows; };
  if (sq == 1) {
    l.kernel = attention_kernel::decode_split;
    l.chunk = attention_decode_chunk(batch_heads, sk);
    l.blocks_y = (sk + l.chunk - 1) / l.chunk;
    return l;
  }
  const std::int64_t blocks64 = batch_heads * tiles(64);
  const bool fma = forced.starts_with("fma");
  if (float32 && tensor_cores && !fma && (forced == "tf32x3" || blocks64 >= sms)) {
    l.kernel = attention_kernel::tf32x3_rows64;
    l.blocks_y = tiles(64);
    return l;
  }
  if (!tensor_cores || float32 || fma) {
    const bool rows64 = forced == "fma64" || (forced != "fma32" && blocks64 >= sms);
    l.kernel = rows64 ? attention_kernel::fma_tiled64 : attention_kernel::fma_tiled32;
    l.blocks_y = tiles(rows64 ? 64 : 32);
    return l;
  }
  // Any other name (another dtype's kernel, decode_scalar, a wgmma kernel where it does not
  // fit) picks as "" does.
  const bool picks = forced != "mma" && forced != "halves" && forced != "split_keys";
  const bool many128 = batch_heads * tiles(k_attention_wgmma_rows) >= 2 * std::int64_t{sms};
  if (wgmma_fits && (attention_wgmma_forced(forced) || (picks && many128))) {
    const bool keys64 = forced == "wgmma64" || (forced != "wgmma" && keys64_two_blocks);
    l.kernel = forced == "wgmma_overlap" ? attention_kernel::wgmma_overlap_rows128
               : keys64                  ? attention_kernel::wgmma_keys64_rows128
                                         : attention_kernel::wgmma_rows128;
    l.blocks_y = tiles(k_attention_wgmma_rows);
    return l;
  }
  const bool few = blocks64 < sms && sq * sk <= 256 * 256;
  const bool split = forced == "split_keys" || (picks && few);
  const bool halves = forced == "halves" || (picks && !few && sk >= 512 && 2 * blocks64 <= 3 * sms);
  l.kernel = split && tiles(16) <= 65535 ? attention_kernel::mma_split_keys
             : halves                    ? attention_kernel::mma_halves
                                         : attention_kernel::mma_rows64;
  l.blocks_y = tiles(l.kernel == attention_kernel::mma_split_keys ? 16 : 64);
  return l;
}

/// The iteration space of an elementwise program: the output's dims and
/// each operand's element strides (0 where it is broadcast), with dims of 1
/// dropped and neighbours merged wherever every operand steps through them
/// as through one dim (a dense operand, a broadcast one, a row bias over a
/// dense matrix: [rows, n] with strides n, 1 and 0, 1 stays 2 dims, the
/// least any index math can do with it).
struct ew_layout {
  int rank = 0;
  std::int64_t count = 1;
  std::int64_t shape[k_max_rank] = {};
  std::int64_t stride[k_ew_max_inputs][k_max_rank] = {};
  /// At most one dim and every operand's stride 0 or 1: offset i or 0, no
  /// division at all.
  bool dense = false;
  /// The count and every operand's farthest offset below 2^31: the index
  /// math in 32 bits (a 64-bit division is a long subroutine on the GPU).
  bool narrow = false;
};

inline ew_layout plan_elementwise(const std::int64_t* shape, int rank,
                                  const std::int64_t (*strides)[k_max_rank], int operands) {
  ew_layout l;
  for (int d = 0; d < rank; ++d) l.count *= shape[d];
  for (int d = 0; d < rank; ++d) {
    if (shape[d] == 1) continue;  // any stride: offset 0 along it
    const bool merges = l.rank > 0 && [&] {
      for (int k = 0; k < operands; ++k) {
        if (l.stride[k][l.rank - 1] != strides[k][d] * shape[d]) return false;
      }
      return true;
    }();
    if (merges) {
      l.shape[l.rank - 1] *= shape[d];
      for (int k = 0; k < operands; ++k) l.stride[k][l.rank - 1] = strides[k][d];
      continue;
    }
    l.shape[l.rank] = shape[d];
    for (int k = 0; k < operands; ++k) l.stride[k][l.rank] = strides[k][d];
    ++l.rank;
  }
  l.dense = l.rank <= 1;
  for (int k = 0; k < operands && l.rank == 1; ++k) {
    l.dense = l.dense && (l.stride[k][0] == 0 || l.stride[k][0] == 1);
  }
  constexpr std::int64_t limit = std::int64_t{1} << 31;
  l.narrow = l.count < limit;
  for (int k = 0; k < operands; ++k) {
    std::int64_t reach = 0;
    for (int d = 0; d < l.rank; ++d) reach += (l.shape[d] - 1) * l.stride[k][d];
    l.narrow = l.narrow && reach < limit;
  }
  return l;
}

/// Each operand's element offset for output element i of a layout's rank,
/// shape and strides (the elementwise kernel's index math, in Index: 32 or
/// 64 bits), innermost dim first.
template <class Index>
COOLBENCH_HOST_DEVICE inline void ew_offsets(int rank, const std::int64_t* shape,
                                             const std::int64_t (*stride)[k_max_rank], Index i,
                                             Index (&offset)[k_ew_max_inputs]) {
  for (int k = 0; k < k_ew_max_inputs; ++k) offset[k] = 0;
  for (int d = rank - 1; d >= 0; --d) {
    const auto extent = static_cast<Index>(shape[d]);
    const Index coordinate = i % extent;
    i /= extent;
    for (int k = 0; k < k_ew_max_inputs; ++k) {
      offset[k] += coordinate * static_cast<Index>(stride[k][d]);
    }
  }
}

}  // namespace coolbench::engine::cuda
