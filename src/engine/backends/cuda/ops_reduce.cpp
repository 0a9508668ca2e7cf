// Reductions and normalizations of the CUDA backend: ReduceSum/Mean/Max,
// Softmax, LogSoftmax, LayerNormalization and CumSum (kernels in reduce.cu).
#include <string>
#include <vector>

#include "engine/backends/cuda/plan.hpp"

namespace coolbench::engine::cuda {
namespace {

std::int64_t product(const shape_t& shape, std::size_t begin, std::size_t end) {
  std::int64_t result = 1;
  for (std::size_t i = begin; i < end; ++i) result *= shape[i];
  return result;
}

void require_float(const op_call& call, const tensor& t) {
  if (!is_float(t.type())) call.fail("unsupported dtype " + std::string(to_string(t.type())));
}

template <reduce_kind Kind>
void reduce(const op_call& call) {
  const tensor& x = call.in(0);
  require_float(call, x);
  const std::size_t rank = x.rank();
  std::vector<std::int64_t> axes;
  if (const tensor* a = call.optional_in(1)) {
    axes = call.host_ints(*a);
  } else {
    axes = call.n.get<std::vector<std::int64_t>>("axes", {});
  }
  const bool keepdims = call.n.get<std::int64_t>("keepdims", 1) != 0;
  if (axes.empty() && call.n.get<std::int64_t>("noop_with_empty_axes", 0) != 0) {
    call.outputs[0] = x;
    return;
  }
  std::vector<bool> reduced(rank, axes.empty());
  for (const std::int64_t axis : axes) {
    const auto a =
        static_cast<std::size_t>(normalize_axis(call, axis, static_cast<std::int64_t>(rank)));
    if (reduced[a])
      call.fail("expected distinct axes, got axis " + std::to_string(axis) + " twice");
    reduced[a] = true;
  }
  shape_t out_shape, kept_shape, reduced_shape, kept_strides, reduced_strides;
  const shape_t strides = dense_strides(x.shape());
  for (std::size_t i = 0; i < rank; ++i) {
    if (reduced[i]) {
      reduced_shape.push_back(x.shape()[i]);
      reduced_strides.push_back(strides[i]);
      if (keepdims) out_shape.push_back(1);
    } else {
      kept_shape.push_back(x.shape()[i]);
      kept_strides.push_back(strides[i]);
      out_shape.push_back(x.shape()[i]);
    }
  }
  index_plan kept = iteration_plan(call, kept_shape);
  index_plan over = iteration_plan(call, reduced_shape);
  std::copy(kept_strides.begin(), kept_strides.end(), kept.stride[0]);
  std::copy(reduced_strides.begin(), reduced_strides.end(), over.stride[0]);
  tensor y = call.allocate(x.type(), out_shape);
  launch_reduce(Kind, x.type(), x.device_data(), y.device_data(), y.size(), kept, over,
                call.stream);
  call.outputs[0] = std::move(y);
}

template <bool Log>
void softmax(const op_call& call) {
  const tensor& x = call.in(0);
  require_float(call, x);
  const auto axis = static_cast<std::size_t>(normalize_axis(
      call, call.n.get<std::int64_t>("axis", -1), static_cast<std::int64_t>(x.rank())));
  tensor y = call.allocate(x.type(), x.shape());
  launch_softmax(x.type(), Log, x.device_data(), y.device_data(), product(x.shape(), 0, axis),
                 x.shape()[axis], product(x.shape(), axis + 1, x.rank()), call.stream);
  call.outputs[0] = std::move(y);
}

// Scale or B over the normalized block: as it is when it has the block's
// element count in order, else broadcast into a dense copy.
tensor dense_param(const op_call& call, const tensor& param, const shape_t& block,
                   const char* what) {
  const std::int64_t length = element_count(block);
  shape_t squeezed = param.shape();
  while (!squeezed.empty() && squeezed.front() == 1 && squeezed.size() > block.size()) {
    squeezed.erase(squeezed.begin());
  }
  if (param.size() == length && squeezed.size() <= block.size()) return param;
  if (squeezed.size() > block.size()) {
    call.fail(std::string("expected ") + what + " broadcastable to " + to_string(block) + ", got " +
              to_string(param.shape()));
  }
  const shape_t* shapes[] = {&squeezed, &block};
  shape_t out_shape;
  const index_plan plan = broadcast_plan(call, shapes, out_shape);
  if (out_shape != block) {
    call.fail(std::string("expected ") + what + " broadcastable to " + to_string(block) + ", got " +
              to_string(param.shape()));
  }
  tensor dense = call.allocate(param.type(), block);
  launch_strided_copy(size_of(param.type()), param.device_data(), dense.device_data(), plan,
                      call.stream);
  return dense;
}

// `t` in dtype `type`: itself, or a converted copy.
tensor as_type(const op_call& call, const tensor& t, dtype type) {
  if (t.type() == type) return t;
  tensor converted = call.allocate(type, t.shape());
  launch_cast(t.type(), type, t.device_data(), converted.device_data(), t.size(), call.stream);
  return converted;
}

void layer_norm(const op_call& call) {
  const tensor& x = call.in(0);
  const tensor& scale = call.in(1);
  const tensor* bias = call.optional_in(2);
  require_float(call, x);
  // Scale and B may come in another float dtype than X (exporters write a
  // float16 Scale beside a float32 X at times, and onnxruntime runs it): they
  // are converted to X's dtype, which the kernel reads all three in.
  for (const tensor* t : {&scale, bias}) {
    if (t != nullptr) require_float(call, *t);
  }
  const auto axis = static_cast<std::size_t>(normalize_axis(
      call, call.n.get<std::int64_t>("axis", -1), static_cast<std::int64_t>(x.rank())));
  const shape_t block(x.shape().begin() + static_cast<std::ptrdiff_t>(axis), x.shape().end());
  const tensor scale_x = as_type(call, scale, x.type());
  const tensor bias_x = bias == nullptr ? tensor() : as_type(call, *bias, x.type());
  const tensor s = dense_param(call, scale_x, block, "Scale");
  const tensor b = bias == nullptr ? tensor() : dense_param(call, bias_x, block, "B");
  const std::int64_t rows = product(x.shape(), 0, axis);
  tensor y = call.allocate(x.type(), x.shape());
  shape_t stat_shape = x.shape();
  for (std::size_t i = axis; i < stat_shape.size(); ++i) stat_shape[i] = 1;
  tensor mean, inv_std;
  if (call.outputs.size() > 1) mean = call.allocate(dtype::float32, stat_shape);
  if (call.outputs.size() > 2) inv_std = call.allocate(dtype::float32, stat_shape);
  launch_layer_norm(x.type(), x.device_data(), s.device_data(),
                    bias == nullptr ? nullptr : b.device_data(), y.device_data(),
                    mean.on_device() ? static_cast<float*>(mean.device_data()) : nullptr,
                    inv_std.on_device() ? static_cast<float*>(inv_std.device_data()) : nullptr,
                    rows, element_count(block), call.n.get<float>("epsilon", 1e-5F), call.stream);
  call.outputs[0] = std::move(y);
  if (call.outputs.size() > 1) call.outputs[1] = std::move(mean);
  if (call.outputs.size() > 2) call.outputs[2] = std::move(inv_std);
}

void cumsum(const op_call& call) {
  const tensor& x = call.in(0);
  if (x.type() == dtype::boolean) call.fail("unsupported dtype bool");
  const std::vector<std::int64_t> axis_values = call.host_ints(call.in(1));
  if (axis_values.size() != 1) call.fail("expected one axis");
  const std::int64_t rank = std::max<std::int64_t>(static_cast<std::int64_t>(x.rank()), 1);
  const auto axis = static_cast<std::size_t>(normalize_axis(call, axis_values[0], rank));
  tensor y = call.allocate(x.type(), x.shape());
  const std::int64_t n = x.rank() == 0 ? 1 : x.shape()[axis];
  launch_cumsum(x.type(), x.device_data(), y.device_data(), product(x.shape(), 0, axis), n,
                x.rank() == 0 ? 1 : product(x.shape(), axis + 1, x.rank()),
                call.n.get<std::int64_t>("exclusive", 0) != 0,
                call.n.get<std::int64_t>("reverse", 0) != 0, call.stream);
  call.outputs[0] = std::move(y);
}

constexpr op_entry k_ops[] = {
    {"CumSum", cumsum, type_rule::numeric},
    {"LayerNormalization", layer_norm, type_rule::floats},
    {"LogSoftmax", softmax<true>, type_rule::floats},
    {"ReduceMax", reduce<reduce_kind::max>, type_rule::floats},
    {"ReduceMean", reduce<reduce_kind::mean>, type_rule::floats},
    {"ReduceSum", reduce<reduce_kind::sum>, type_rule::floats},
    {"Softmax", softmax<false>, type_rule::floats},
};

}  // namespace

std::span<const op_entry> reduce_ops() { return k_ops; }

}  // namespace coolbench::engine::cuda
