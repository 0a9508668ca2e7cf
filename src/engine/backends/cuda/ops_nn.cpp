// The convolutional-network operators of the CUDA backend (kernels in nn.cu):
// Conv, MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool,
// BatchNormalization (inference form); and GatherElements. The geometry is
// engine/window.hpp's, as on the CPU, so both give the same output shapes. Conv runs as
// cuBLASLt products where its groups are large enough (conv_gemm.cpp), else directly.
#include <string>
#include <vector>

#include "engine/backends/cuda/fused_blas.hpp"
#include "engine/backends/cuda/plan.hpp"
#include "engine/window.hpp"

namespace coolbench::engine::cuda {
namespace {

std::int64_t extent(const shape_t& shape, std::size_t begin, std::size_t end) {
  std::int64_t result = 1;
  for (std::size_t i = begin; i < end; ++i) result *= shape[i];
  return result;
}

void require_float(const op_call& call, const tensor& t, const char* what) {
  if (!is_float(t.type())) {
    call.fail(std::string("unsupported dtype: expected ") + what +
              " of dtype float32, float16 or bfloat16, got " + std::string(to_string(t.type())));
  }
}

// The optional outputs beyond the first that the model names.
void refuse_extra_outputs(const op_call& call, const char* what) {
  for (std::size_t i = 1; i < call.n.outputs.size(); ++i) {
    if (!call.n.outputs[i].empty()) call.fail(std::string("unsupported output ") + what);
  }
}

conv_plan plan_of(const window_geometry& g, std::int64_t batch, std::int64_t channels) {
  conv_plan p;
  p.geometry = g;
  p.batch = batch;
  p.channels = channels;
  p.in_count = g.in_count();
  p.out_count = g.out_count();
  p.kernel_count = g.kernel_count();
  return p;
}

void conv(const op_call& call) {
  const tensor& x = call.in(0);
  const tensor& w = call.in(1);
  const tensor* b = call.optional_in(2);
  require_float(call, x, "X");
  if (w.type() != x.type() || (b != nullptr && b->type() != x.type())) {
    call.fail("expected W and B of X's dtype " + std::string(to_string(x.type())));
  }
  if (x.rank() < 3 || w.rank() != x.rank()) {
    call.fail("expected X of rank >= 3 ([N, C, spatial...]) and W of the same rank, got X " +
              to_string(x.shape()) + " and W " + to_string(w.shape()));
  }
  const std::int64_t group = call.n.get<std::int64_t>("group", 1);
  const std::int64_t channels = x.shape()[1];
  const std::int64_t maps = w.shape()[0];
  if (group < 1 || channels != w.shape()[1] * group || maps % group != 0) {
    call.fail("expected X's channels (" + std::to_string(channels) + ") to equal W's " +
              std::to_string(w.shape()[1]) + " times group " + std::to_string(group) +
              ", and W's " + std::to_string(maps) + " maps to divide by the group");
  }
  if (b != nullptr && b->shape() != shape_t{maps}) {
    call.fail("expected B of shape [" + std::to_string(maps) + "], got " + to_string(b->shape()));
  }
  const std::vector<std::int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  const window_attributes a = read_window_attributes(call.n, x.rank() - 2, kernel);
  const window_geometry g = resolve_window(call.n, a, x.shape());
  conv_plan p = plan_of(g, x.shape()[0], channels);
  p.maps = maps;
  p.group = group;
  tensor y = call.allocate(x.type(), window_output_shape(g, p.batch, maps, x.rank() - 2));
  if (run_conv_as_gemm(call, x, w, b, y, p)) {
    call.outputs[0] = std::move(y);
    return;
  }
  launch_conv(x.type(), x.device_data(), w.device_data(), b == nullptr ? nullptr : b->device_data(),
              y.device_data(), p, call.stream);
  call.outputs[0] = std::move(y);
}

template <bool Max>
void pool(const op_call& call) {
  const tensor& x = call.in(0);
  require_float(call, x, "X");
  // storage_order only changes Indices, which is refused.
  if (Max)
    refuse_extra_outputs(call, "Indices (the argmax of each window): MaxPool computes Y only");
  if (x.rank() < 3) {
    call.fail("expected X of rank >= 3 ([N, C, spatial...]), got " + to_string(x.shape()));
  }
  const window_attributes a = read_window_attributes(call.n, x.rank() - 2, {});
  const window_geometry g = resolve_window(call.n, a, x.shape());
  const conv_plan p = plan_of(g, x.shape()[0], x.shape()[1]);
  tensor y = call.allocate(x.type(), window_output_shape(g, p.batch, p.channels, x.rank() - 2));
  launch_pool(x.type(), Max, call.n.get<std::int64_t>("count_include_pad", 0) != 0, x.device_data(),
              y.device_data(), p, call.stream);
  call.outputs[0] = std::move(y);
}

template <bool Max>
void global_pool(const op_call& call) {
  const tensor& x = call.in(0);
  require_float(call, x, "X");
  if (x.rank() < 3) {
    call.fail("expected X of rank >= 3 ([N, C, spatial...]), got " + to_string(x.shape()));
  }
  shape_t shape(x.rank(), 1);
  shape[0] = x.shape()[0];
  shape[1] = x.shape()[1];
  tensor y = call.allocate(x.type(), shape);
  launch_global_pool(x.type(), Max, x.device_data(), y.device_data(), shape[0] * shape[1],
                     extent(x.shape(), 2, x.rank()), call.stream);
  call.outputs[0] = std::move(y);
}

// A parameter in float32: itself, or a float32 copy of a 16-bit one.
tensor as_float32(const op_call& call, const tensor& t) {
  if (t.type() == dtype::float32) return t;
  tensor wide = call.allocate(dtype::float32, t.shape());
  launch_cast(t.type(), dtype::float32, t.device_data(), wide.device_data(), t.size(), call.stream);
  return wide;
}

void batch_norm(const op_call& call) {
  const tensor& x = call.in(0);
  require_float(call, x, "X");
  if (call.n.get<std::int64_t>("training_mode", 0) != 0) {
    call.fail(
        "unsupported training_mode 1 (batch statistics and running-mean outputs); the "
        "engine runs inference only: export the model in eval mode");
  }
  if (call.n.get<std::int64_t>("spatial", 1) == 0) {
    call.fail("unsupported spatial 0 (per-element statistics, opset < 9)");
  }
  refuse_extra_outputs(call,
                       "of BatchNormalization's training form (mean, var, saved "
                       "statistics); the engine runs inference only");
  if (x.rank() < 2) call.fail("expected X of rank >= 2 ([N, C, ...]), got " + to_string(x.shape()));
  const std::int64_t channels = x.shape()[1];
  const char* names[] = {"scale", "B", "input_mean", "input_var"};
  std::vector<tensor> params;
  for (std::size_t i = 0; i < 4; ++i) {
    const tensor& p = call.in(i + 1);
    require_float(call, p, names[i]);
    if (p.shape() != shape_t{channels}) {
      call.fail(std::string("expected ") + names[i] + " of shape [" + std::to_string(channels) +
                "] (X's channels), got " + to_string(p.shape()));
    }
    params.push_back(as_float32(call, p));
  }
  const auto f32 = [&](std::size_t i) {
    return static_cast<const float*>(params[i].device_data());
  };
  tensor y = call.allocate(x.type(), x.shape());
  launch_batch_norm(x.type(), x.device_data(), f32(0), f32(1), f32(2), f32(3), y.device_data(),
                    x.size(), channels, extent(x.shape(), 2, x.rank()),
                    call.n.get<float>("epsilon", 1e-5F), call.stream);
  call.outputs[0] = std::move(y);
}

void gather_elements(const op_call& call) {
  const tensor& data = call.in(0);
  const tensor& indices = call.in(1);
  if (indices.type() != dtype::int64 && indices.type() != dtype::int32) {
    call.fail("expected indices of int32 or int64, got " + std::string(to_string(indices.type())));
  }
  const shape_t& ds = data.shape();
  const shape_t& is = indices.shape();
  if (ds.empty() || is.size() != ds.size()) {
    call.fail("expected data of rank >= 1 and indices of its rank, got data " + to_string(ds) +
              " and indices " + to_string(is));
  }
  const auto axis = static_cast<std::size_t>(normalize_axis(
      call, call.n.get<std::int64_t>("axis", 0), static_cast<std::int64_t>(ds.size())));
  for (std::size_t d = 0; d < ds.size(); ++d) {
    if (d != axis && is[d] > ds[d]) {
      call.fail("expected indices " + to_string(is) + " no larger than data " + to_string(ds) +
                " outside axis " + std::to_string(axis));
    }
  }
  index_plan plan = iteration_plan(call, is);
  const shape_t strides = dense_strides(ds);
  for (std::size_t d = 0; d < ds.size(); ++d) plan.stride[0][d] = d == axis ? 0 : strides[d];
  tensor out = call.allocate(data.type(), is);
  const std::int64_t dim = ds[axis];
  const auto [flag, code] = call.device_check("expected indices in [" + std::to_string(-dim) +
                                              ", " + std::to_string(dim - 1) + "] on axis " +
                                              std::to_string(axis) + ", got one outside");
  launch_gather_elements(size_of(data.type()), data.device_data(), indices.device_data(),
                         indices.type() == dtype::int64, out.device_data(), plan, strides[axis],
                         dim, flag, code, call.stream);
  call.outputs[0] = std::move(out);
}

constexpr op_entry k_ops[] = {
    {"AveragePool", pool<false>, type_rule::floats},
    {"BatchNormalization", batch_norm, type_rule::floats},
    {"Conv", conv, type_rule::floats},
    {"GatherElements", gather_elements, type_rule::any},
    {"GlobalAveragePool", global_pool<false>, type_rule::floats},
    {"GlobalMaxPool", global_pool<true>, type_rule::floats},
    {"MaxPool", pool<true>, type_rule::floats},
};

}  // namespace

std::span<const op_entry> nn_ops() { return k_ops; }

}  // namespace coolbench::engine::cuda
