// Conv as cuBLASLt products (conv_gemm.hpp has the plan and the index math): the bias written
// into Y first, then for each chunk of images their columns (im2col) and one batched product per
// group that adds W x col into Y (beta 1), so the bias costs no extra pass over Y's products.
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <string_view>

#include "engine/backends/cuda/conv_gemm.hpp"
#include "engine/backends/cuda/fused_blas.hpp"

namespace coolbench::engine::cuda {
namespace {

// The columns of a chunk of images at most: a ResNet-50 3x3 layer at batch 32 in fp16 unfolds
// to 115 MB, so this keeps one product per group for the common models and bounds the scratch.
constexpr std::int64_t k_scratch_limit = std::int64_t{256} << 20U;

bool direct_kernel_asked() {
  const char* env = std::getenv("COOLBENCH_CONV_KERNEL");
  return env != nullptr && std::string_view(env) == "direct";
}

// Y[n, m, pos] = bias[m]: a strided copy with the bias's stride 1 on the maps axis only.
void write_bias(const tensor& bias, const tensor& y, const conv_plan& p, std::size_t element,
                void* stream) {
  index_plan plan;
  plan.rank = 3;
  plan.count = p.batch * p.maps * p.out_count;
  plan.shape[0] = p.batch;
  plan.shape[1] = p.maps;
  plan.shape[2] = p.out_count;
  plan.stride[0][1] = 1;
  plan.stride[3][0] = p.maps * p.out_count;
  plan.stride[3][1] = p.out_count;
  plan.stride[3][2] = 1;
  launch_strided_copy(element, bias.device_data(), y.device_data(), plan, stream);
}

}  // namespace

bool run_conv_as_gemm(const op_call& call, const tensor& x, const tensor& w, const tensor* bias,
                      const tensor& y, const conv_plan& p) {
  if (direct_kernel_asked()) return false;
  const std::size_t element = size_of(x.type());
  const conv_gemm_plan g = plan_conv_gemm(p.geometry, p.batch, p.channels, p.maps, p.group,
                                          static_cast<std::int64_t>(element), k_scratch_limit);
  if (g.chunk == 0) return false;
  if (p.batch * p.maps * p.out_count == 0) return true;
  float beta = 0.0F;
  if (bias != nullptr) {
    write_bias(*bias, y, p, element, call.stream);
    beta = 1.0F;
  }
  // Every run allocates it the same way, so a planned run takes it from the arena.
  const tensor columns =
      g.direct_input ? tensor() : call.allocate(x.type(), {g.chunk, g.rows, g.pitch});
  const auto* x_bytes = static_cast<const std::byte*>(x.device_data());
  auto* y_bytes = static_cast<std::byte*>(y.device_data());
  const auto* w_bytes = static_cast<const std::byte*>(w.device_data());
  const auto bytes = [element](std::int64_t elements) {
    return static_cast<std::size_t>(elements) * element;
  };
  for (std::int64_t first = 0; first < p.batch; first += g.chunk) {
    const std::int64_t images = std::min(g.chunk, p.batch - first);
    const std::byte* images_x = x_bytes + bytes(first * p.channels * p.in_count);
    const std::byte* col = images_x;
    if (!g.direct_input) {
      launch_im2col(x.type(), images_x, columns.device_data(), p, g.pitch, images, call.stream);
      col = static_cast<const std::byte*>(columns.device_data());
    }
    for (std::int64_t group = 0; group < p.group; ++group) {
      const conv_gemm_step s = conv_gemm_product(g, p.maps, first, images, group);
      run_product(call, {.type = x.type(),
                         .m = s.m,
                         .n = s.n,
                         .k = s.k,
                         .a = w_bytes + bytes(s.a_offset),
                         .b = col + bytes(s.b_offset),
                         .y = y_bytes + bytes(s.y_offset),
                         .beta = beta,
                         .batch = s.batch,
                         .stride_a = 0,
                         .stride_b = s.stride_b,
                         .stride_y = s.stride_y,
                         .ldb = s.ldb == s.n ? 0 : s.ldb});
    }
  }
  return true;
}

}  // namespace coolbench::engine::cuda
