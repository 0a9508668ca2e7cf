// Ops of the CUDA backend whose values the host decides: Shape and Size
// (from a shape), Constant (from an attribute), ConstantOfShape and Range
// (from shape arguments and scalars read on the host, then filled on the
// device). Data movement is ops_data.cpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/backends/cuda/plan.hpp"

namespace coolbench::engine::cuda {
namespace {

using int_list = std::vector<std::int64_t>;

void shape_op(const op_call& call) {
  const tensor& data = call.in(0);
  const auto rank = static_cast<std::int64_t>(data.rank());
  const auto bound = [rank](std::int64_t v) {
    return std::clamp<std::int64_t>(v < 0 ? v + rank : v, 0, rank);
  };
  const std::int64_t start = bound(call.n.get<std::int64_t>("start", 0));
  const std::int64_t end = bound(call.n.get<std::int64_t>("end", rank));
  tensor dims(dtype::int64, {std::max<std::int64_t>(end - start, 0)});
  for (std::int64_t d = start; d < end; ++d)
    dims.data<std::int64_t>()[static_cast<std::size_t>(d - start)] =
        data.shape()[static_cast<std::size_t>(d)];
  call.outputs[0] = call.backend.copy_in(dims);
}

void size_op(const op_call& call) {
  tensor count(dtype::int64, {});
  count.data<std::int64_t>()[0] = call.in(0).size();
  call.outputs[0] = call.backend.copy_in(count);
}

void constant(const op_call& call) {
  tensor value;
  if (call.n.has("value")) {
    value = call.n.get<tensor>("value");
  } else if (call.n.has("value_float")) {
    value = tensor(dtype::float32, {});
    value.data<float>()[0] = call.n.get<float>("value_float");
  } else if (call.n.has("value_floats")) {
    const auto& v = call.n.get<std::vector<float>>("value_floats");
    value = tensor(dtype::float32, {static_cast<std::int64_t>(v.size())});
    std::copy(v.begin(), v.end(), value.data<float>().begin());
  } else if (call.n.has("value_int")) {
    value = tensor(dtype::int64, {});
    value.data<std::int64_t>()[0] = call.n.get<std::int64_t>("value_int");
  } else if (call.n.has("value_ints")) {
    const auto& v = call.n.get<int_list>("value_ints");
    value = tensor(dtype::int64, {static_cast<std::int64_t>(v.size())});
    std::copy(v.begin(), v.end(), value.data<std::int64_t>().begin());
  } else {
    call.fail("expected a value, value_float(s) or value_int(s) attribute");
  }
  call.outputs[0] = call.backend.copy_in(value);
}

void constant_of_shape(const op_call& call) {
  const shape_t shape = call.host_ints(call.in(0));
  for (const auto d : shape) {
    if (d < 0) call.fail("expected non-negative dimensions, got " + to_string(shape));
  }
  tensor value(dtype::float32, {1});
  if (call.n.has("value")) value = call.n.get<tensor>("value");
  if (value.size() != 1) call.fail("expected a one-element value");
  tensor out = call.allocate(value.type(), shape);
  launch_fill(size_of(value.type()), value.raw().data(), out.device_data(), out.size(),
              call.stream);
  call.outputs[0] = std::move(out);
}

void range(const op_call& call) {
  const tensor& start_t = call.in(0);
  const dtype type = start_t.type();
  if (call.in(1).type() != type || call.in(2).type() != type)
    call.fail("expected start, limit and delta of one type");
  if (type != dtype::float32 && type != dtype::int64 && type != dtype::int32) {
    call.fail("unsupported dtype " + std::string(to_string(type)));
  }
  const double start = call.host_scalar(start_t);
  const double limit = call.host_scalar(call.in(1));
  const double delta = call.host_scalar(call.in(2));
  std::int64_t count = 0;
  std::int64_t int_start = 0, int_delta = 0;
  if (type == dtype::float32) {
    if (delta == 0 || !std::isfinite(delta) || !std::isfinite(start) || !std::isfinite(limit)) {
      call.fail("expected finite start, limit and a finite non-zero delta");
    }
    const double steps = std::ceil((limit - start) / delta);
    if (steps > 0x1p62) call.fail("range too large");
    count = std::max<std::int64_t>(static_cast<std::int64_t>(steps), 0);
  } else {
    const int_list s = call.host_ints(start_t), l = call.host_ints(call.in(1)),
                   d = call.host_ints(call.in(2));
    int_start = s[0];
    int_delta = d[0];
    if (int_delta == 0) call.fail("expected a non-zero delta, got 0");
    if (int_delta > 0 ? l[0] > int_start : l[0] < int_start) {
      const auto span =
          int_delta > 0 ? static_cast<std::uint64_t>(l[0]) - static_cast<std::uint64_t>(int_start)
                        : static_cast<std::uint64_t>(int_start) - static_cast<std::uint64_t>(l[0]);
      const auto step = int_delta > 0 ? static_cast<std::uint64_t>(int_delta)
                                      : static_cast<std::uint64_t>(-(int_delta + 1)) + 1;
      count = static_cast<std::int64_t>(span / step + (span % step != 0 ? 1 : 0));
    }
  }
  tensor out = call.allocate(type, {count});
  launch_range(type, start, delta, int_start, int_delta, out.device_data(), count, call.stream);
  call.outputs[0] = std::move(out);
}

constexpr op_entry k_ops[] = {
    {"Constant", constant, type_rule::any},
    {"ConstantOfShape", constant_of_shape, type_rule::any},
    {"Range", range, type_rule::numeric},
    {"Shape", shape_op, type_rule::shape_only},
    {"Size", size_op, type_rule::shape_only},
};

}  // namespace

std::span<const op_entry> constant_ops() { return k_ops; }

}  // namespace coolbench::engine::cuda
