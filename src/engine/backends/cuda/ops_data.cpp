// Data movement of the CUDA backend (ops whose values the host makes,
// Shape to Range, are ops_constant.cpp). Views that keep the bytes
// in order (Reshape, Flatten, Squeeze, Unsqueeze, a Transpose of size-1
// axes, a Split into contiguous ranges) share the input's storage;
// Transpose, Expand, Slice and Split are otherwise one strided copy each,
// Concat one launch for up to 8 parts (data.cu); shape arguments (a
// Reshape's shape, a Slice's starts) are read on the host.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "engine/backends/cuda/launch_shapes.hpp"
#include "engine/backends/cuda/plan.hpp"

namespace coolbench::engine::cuda {
namespace {

using int_list = std::vector<std::int64_t>;

// Where a part of a tensor may be a view of it: as aligned as an arena slot
// or a fresh device block, so no kernel meets a less aligned input.
constexpr std::uintptr_t k_view_alignment = 256;

std::int64_t product(const shape_t& shape, std::size_t begin, std::size_t end) {
  std::int64_t result = 1;
  for (std::size_t i = begin; i < end; ++i) result *= shape[i];
  return result;
}

std::int64_t rank_of(const tensor& t) { return static_cast<std::int64_t>(t.rank()); }

std::vector<std::size_t> normalize_axes(const op_call& call, const int_list& axes,
                                        std::int64_t rank) {
  std::vector<std::size_t> result;
  for (const std::int64_t axis : axes) {
    const auto a = static_cast<std::size_t>(normalize_axis(call, axis, rank));
    if (std::find(result.begin(), result.end(), a) != result.end()) {
      call.fail("expected distinct axes, got " + to_string(axes));
    }
    result.push_back(a);
  }
  return result;
}

/// Copies `in` (iterated over `shape` with `in_strides` from `in_base`) into
/// `out` at `out_strides` from `out_base`, all in elements.
void copy_strided(const op_call& call, const tensor& in, const shape_t& shape,
                  const int_list& in_strides, std::int64_t in_base, tensor& out,
                  const int_list& out_strides, std::int64_t out_base) {
  index_plan plan = iteration_plan(call, shape);
  std::copy(in_strides.begin(), in_strides.end(), plan.stride[0]);
  std::copy(out_strides.begin(), out_strides.end(), plan.stride[3]);
  plan.base[0] = in_base;
  plan.base[3] = out_base;
  launch_strided_copy(size_of(in.type()), in.device_data(), out.device_data(), plan, call.stream);
}

void reshape(const op_call& call) {
  const tensor& data = call.in(0);
  const int_list requested = call.host_ints(call.in(1));
  const bool allow_zero = call.n.get<std::int64_t>("allowzero", 0) != 0;
  shape_t shape(requested.size());
  std::size_t inferred = requested.size();
  std::int64_t known = 1;
  for (std::size_t d = 0; d < requested.size(); ++d) {
    std::int64_t dim = requested[d];
    if (dim == 0 && !allow_zero) {
      if (d >= data.rank())
        call.fail("shape " + to_string(requested) + " copies a missing dimension");
      dim = data.shape()[d];
    }
    if (dim == -1) {
      if (inferred != requested.size()) call.fail("expected at most one -1 in the shape, got two");
      inferred = d;
      continue;
    }
    if (dim < 0) call.fail("expected dimensions >= -1, got shape " + to_string(requested));
    shape[d] = dim;
    known *= dim;
  }
  if (inferred != requested.size()) {
    if (known == 0 || data.size() % known != 0) {
      call.fail("cannot reshape " + to_string(data.shape()) + " to " + to_string(requested));
    }
    shape[inferred] = data.size() / known;
  }
  call.outputs[0] = data.reshaped(std::move(shape));  // reshaped() checks the count
}

void flatten(const op_call& call) {
  const tensor& data = call.in(0);
  const std::int64_t rank = rank_of(data);
  std::int64_t axis = call.n.get<std::int64_t>("axis", 1);
  if (axis < -rank || axis > rank) call.fail("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank;
  const auto split = static_cast<std::size_t>(axis);
  call.outputs[0] =
      data.reshaped({product(data.shape(), 0, split), product(data.shape(), split, data.rank())});
}

std::optional<int_list> axes_of(const op_call& call) {
  if (call.n.has("axes")) return call.n.get<int_list>("axes");
  if (const tensor* t = call.optional_in(1)) return call.host_ints(*t);
  return std::nullopt;
}

void squeeze(const op_call& call) {
  const tensor& data = call.in(0);
  const std::optional<int_list> given = axes_of(call);
  std::vector<bool> drop(data.rank(), false);
  if (!given || given->empty()) {
    for (std::size_t d = 0; d < data.rank(); ++d) drop[d] = data.shape()[d] == 1;
  } else {
    for (const std::size_t axis : normalize_axes(call, *given, rank_of(data))) {
      if (data.shape()[axis] != 1)
        call.fail("expected dimension " + std::to_string(axis) + " to be 1");
      drop[axis] = true;
    }
  }
  shape_t shape;
  for (std::size_t d = 0; d < data.rank(); ++d) {
    if (!drop[d]) shape.push_back(data.shape()[d]);
  }
  call.outputs[0] = data.reshaped(std::move(shape));
}

void unsqueeze(const op_call& call) {
  const tensor& data = call.in(0);
  const std::optional<int_list> given = axes_of(call);
  if (!given) call.fail("expected axes (attribute or input 1), got none");
  const auto rank = static_cast<std::int64_t>(data.rank() + given->size());
  std::vector<bool> inserted(static_cast<std::size_t>(rank), false);
  for (const std::size_t axis : normalize_axes(call, *given, rank)) inserted[axis] = true;
  shape_t shape;
  std::size_t next = 0;
  for (const bool one : inserted) shape.push_back(one ? 1 : data.shape()[next++]);
  call.outputs[0] = data.reshaped(std::move(shape));
}

void transpose(const op_call& call) {
  const tensor& data = call.in(0);
  const std::size_t rank = data.rank();
  int_list reversed(rank);
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  const int_list perm = call.n.get<int_list>("perm", reversed);
  if (perm.size() != rank)
    call.fail("expected perm of " + std::to_string(rank) + " axes, got " + to_string(perm));
  const std::vector<std::size_t> axes = normalize_axes(call, perm, rank_of(data));
  const int_list in_strides = dense_strides(data.shape());
  shape_t shape(rank);
  int_list strides(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    shape[d] = data.shape()[axes[d]];
    strides[d] = in_strides[axes[d]];
  }
  // Axes of size 1 moved alone (a decode step's [B, 1, H, D] to [B, H, 1, D]): the elements
  // keep their order, so the output shares the input's storage as a Reshape's does.
  std::size_t last = 0;
  bool in_order = true;
  for (std::size_t d = 0; d < rank && in_order; ++d) {
    if (shape[d] == 1) continue;
    in_order = axes[d] + 1 > last;
    last = axes[d] + 1;
  }
  if (in_order) {
    call.outputs[0] = data.reshaped(std::move(shape));
    return;
  }
  tensor out = call.allocate(data.type(), shape);
  copy_strided(call, data, shape, strides, 0, out, dense_strides(shape), 0);
  call.outputs[0] = std::move(out);
}

void expand(const op_call& call) {
  const tensor& data = call.in(0);
  const shape_t target = call.host_ints(call.in(1));
  for (const auto d : target) {
    if (d < 0) call.fail("expected non-negative dimensions, got shape " + to_string(target));
  }
  const shape_t* shapes[] = {&data.shape(), &target};
  shape_t shape;
  const index_plan plan = broadcast_plan(call, shapes, shape);
  tensor out = call.allocate(data.type(), shape);
  launch_strided_copy(size_of(data.type()), data.device_data(), out.device_data(), plan,
                      call.stream);
  call.outputs[0] = std::move(out);
}

void concat(const op_call& call) {
  const tensor& first = call.in(0);
  const auto axis = static_cast<std::size_t>(
      normalize_axis(call, call.n.get<std::int64_t>("axis"), rank_of(first)));
  shape_t shape = first.shape();
  shape[axis] = 0;
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    const tensor& t = call.in(i);
    bool fits = t.type() == first.type() && t.rank() == first.rank();
    for (std::size_t d = 0; fits && d < t.rank(); ++d)
      fits = d == axis || t.shape()[d] == first.shape()[d];
    if (!fits)
      call.fail("input " + std::to_string(i) + " " + to_string(t.shape()) + " does not match " +
                to_string(first.shape()));
    shape[axis] += t.shape()[axis];
  }
  tensor out = call.allocate(first.type(), shape);
  // One launch for every part where they fit one (a decode step's key and
  // value caches: the past beside one new position).
  const std::int64_t outer = product(shape, 0, axis);
  const std::int64_t inner = product(shape, axis + 1, shape.size());
  std::vector<std::int64_t> row_bytes;
  std::vector<std::uintptr_t> addresses;
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    const tensor& t = call.in(i);
    row_bytes.push_back(t.shape()[axis] * inner * static_cast<std::int64_t>(size_of(t.type())));
    if (t.size() > 0) addresses.push_back(reinterpret_cast<std::uintptr_t>(t.device_data()));
  }
  if (out.size() == 0) {
    call.outputs[0] = std::move(out);
    return;
  }
  addresses.push_back(reinterpret_cast<std::uintptr_t>(out.device_data()));
  std::vector<std::size_t> kept;
  if (const auto l = plan_concat(outer, row_bytes, addresses, kept)) {
    std::vector<const void*> from;
    for (const std::size_t i : kept) from.push_back(call.in(i).device_data());
    launch_concat(*l, from.data(), out.device_data(), call.stream);
    call.outputs[0] = std::move(out);
    return;
  }
  const int_list out_strides = dense_strides(shape);
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    const tensor& t = call.in(i);
    copy_strided(call, t, t.shape(), dense_strides(t.shape()), 0, out, out_strides,
                 offset * out_strides[axis]);
    offset += t.shape()[axis];
  }
  call.outputs[0] = std::move(out);
}

int_list split_sizes(const op_call& call, std::int64_t dim) {
  const auto parts = static_cast<std::int64_t>(call.outputs.size());
  int_list sizes;
  if (const tensor* t = call.optional_in(1)) {
    sizes = call.host_ints(*t);
  } else if (call.n.has("split")) {
    sizes = call.n.get<int_list>("split");
  } else if (call.n.has("num_outputs")) {
    const auto count = call.n.get<std::int64_t>("num_outputs");
    if (count != parts || count < 1) call.fail("expected num_outputs to equal the outputs");
    const std::int64_t chunk = (dim + count - 1) / count;
    for (std::int64_t start = 0, i = 0; i < count; ++i, start += chunk) {
      sizes.push_back(std::clamp<std::int64_t>(dim - start, 0, chunk));
    }
  } else {
    if (parts < 1 || dim % parts != 0) call.fail("expected the axis to split evenly");
    sizes.assign(call.outputs.size(), dim / parts);
  }
  std::int64_t total = 0;
  for (const auto s : sizes) {
    if (s < 0) call.fail("expected non-negative split sizes, got " + to_string(sizes));
    total += s;
  }
  if (sizes.size() != call.outputs.size() || total != dim) {
    call.fail("expected " + std::to_string(parts) + " split sizes summing to " +
              std::to_string(dim) + ", got " + to_string(sizes));
  }
  return sizes;
}

void split(const op_call& call) {
  const tensor& data = call.in(0);
  const auto axis = static_cast<std::size_t>(
      normalize_axis(call, call.n.get<std::int64_t>("axis", 0), rank_of(data)));
  const int_list sizes = split_sizes(call, data.shape()[axis]);
  const int_list in_strides = dense_strides(data.shape());
  // With nothing but size-1 axes before the split one, each part is one
  // range of the input's elements: a view of it, no copy, where every part
  // starts as aligned as an allocation would (kernels may read 16 bytes at
  // a time). A decode step's QKV split is such a split.
  bool views = product(data.shape(), 0, axis) == 1 && data.size() > 0;
  for (std::int64_t i = 0, offset = 0; views && i < static_cast<std::int64_t>(sizes.size());
       offset += sizes[static_cast<std::size_t>(i)], ++i) {
    const auto address =
        reinterpret_cast<std::uintptr_t>(data.device_data()) +
        static_cast<std::uintptr_t>(offset * in_strides[axis]) * size_of(data.type());
    views = address % k_view_alignment == 0;
  }
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < call.outputs.size(); ++i) {
    shape_t shape = data.shape();
    shape[axis] = sizes[i];
    if (views) {
      call.outputs[i] = data.elements_from(offset * in_strides[axis], std::move(shape));
      offset += sizes[i];
      continue;
    }
    tensor out = call.allocate(data.type(), shape);
    copy_strided(call, data, shape, in_strides, offset * in_strides[axis], out,
                 dense_strides(shape), 0);
    offset += sizes[i];
    call.outputs[i] = std::move(out);
  }
}

void slice(const op_call& call) {
  const tensor& data = call.in(0);
  const std::int64_t rank = rank_of(data);
  int_list starts, ends;
  std::optional<int_list> given_axes, steps;
  if (call.optional_in(1) == nullptr && call.n.has("starts")) {  // opset < 10
    starts = call.n.get<int_list>("starts");
    ends = call.n.get<int_list>("ends");
    if (call.n.has("axes")) given_axes = call.n.get<int_list>("axes");
  } else {
    starts = call.host_ints(call.in(1));
    ends = call.host_ints(call.in(2));
    if (const tensor* t = call.optional_in(3)) given_axes = call.host_ints(*t);
    if (const tensor* t = call.optional_in(4)) steps = call.host_ints(*t);
  }
  int_list axes_list(starts.size());
  std::iota(axes_list.begin(), axes_list.end(), 0);
  if (given_axes) axes_list = *given_axes;
  if (!steps) steps = int_list(starts.size(), 1);
  if (ends.size() != starts.size() || axes_list.size() != starts.size() ||
      steps->size() != starts.size()) {
    call.fail("expected starts, ends, axes and steps of one length");
  }
  const std::vector<std::size_t> axes = normalize_axes(call, axes_list, rank);
  const int_list in_strides = dense_strides(data.shape());
  shape_t shape = data.shape();
  int_list strides = in_strides;
  std::int64_t base = 0;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const std::size_t axis = axes[i];
    const std::int64_t dim = data.shape()[axis];
    const std::int64_t step = (*steps)[i];
    if (step == 0) call.fail("expected non-zero steps");
    std::int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    std::int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
    std::int64_t count = 0;
    if (step > 0) {
      start = std::clamp<std::int64_t>(start, 0, dim);
      end = std::clamp<std::int64_t>(end, 0, dim);
      if (end > start) count = (end - start - 1) / step + 1;
    } else {
      start = std::min(std::max<std::int64_t>(start, 0), dim - 1);
      end = std::min(std::max<std::int64_t>(end, -1), dim - 1);
      if (start > end)
        count =
            step == std::numeric_limits<std::int64_t>::min() ? 1 : (start - end - 1) / -step + 1;
    }
    shape[axis] = count;
    if (count > 0) {
      base += start * in_strides[axis];
      strides[axis] = in_strides[axis] * step;
    }
  }
  tensor out = call.allocate(data.type(), shape);
  copy_strided(call, data, shape, strides, base, out, dense_strides(shape), 0);
  call.outputs[0] = std::move(out);
}

void check_indices(const op_call& call, const tensor& indices) {
  if (indices.type() != dtype::int64 && indices.type() != dtype::int32) {
    call.fail("expected int64 or int32 indices, got " + std::string(to_string(indices.type())));
  }
}

void gather(const op_call& call) {
  const tensor& data = call.in(0);
  const tensor& indices = call.in(1);
  check_indices(call, indices);
  const auto axis = static_cast<std::size_t>(
      normalize_axis(call, call.n.get<std::int64_t>("axis", 0), rank_of(data)));
  shape_t shape(data.shape().begin(), data.shape().begin() + static_cast<std::ptrdiff_t>(axis));
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), data.shape().begin() + static_cast<std::ptrdiff_t>(axis) + 1,
               data.shape().end());
  tensor out = call.allocate(data.type(), shape);
  const std::int64_t dim = data.shape()[axis];
  const auto [flag, code] =
      call.device_check("expected indices in [" + std::to_string(-dim) + ", " +
                        std::to_string(dim - 1) + "], got one outside");
  launch_gather(size_of(data.type()), data.device_data(), indices.device_data(),
                indices.type() == dtype::int64, out.device_data(), product(data.shape(), 0, axis),
                dim, product(data.shape(), axis + 1, data.rank()), indices.size(), flag, code,
                call.stream);
  call.outputs[0] = std::move(out);
}

void gather_nd(const op_call& call) {
  const tensor& data = call.in(0);
  const tensor& indices = call.in(1);
  if (indices.type() != dtype::int64) call.fail("expected int64 indices");
  const std::int64_t batch_dims = call.n.get<std::int64_t>("batch_dims", 0);
  const shape_t& ds = data.shape();
  const shape_t& is = indices.shape();
  const auto b = static_cast<std::size_t>(batch_dims);
  if (batch_dims < 0 || b >= is.size() || b >= ds.size()) call.fail("batch_dims out of range");
  for (std::size_t d = 0; d < b; ++d) {
    if (ds[d] != is[d]) call.fail("the batch dimensions of data and indices differ");
  }
  const auto k = static_cast<std::size_t>(is.back());
  if (k < 1 || b + k > ds.size() || k > static_cast<std::size_t>(k_max_rank))
    call.fail("bad index depth");
  shape_t shape(is.begin(), is.end() - 1);
  shape.insert(shape.end(), ds.begin() + static_cast<std::ptrdiff_t>(b + k), ds.end());
  tensor out = call.allocate(data.type(), shape);
  const auto [flag, code] =
      call.device_check("expected indices within the axes of data " + to_string(ds));
  launch_gather_nd(size_of(data.type()), data.device_data(),
                   static_cast<const std::int64_t*>(indices.device_data()), out.device_data(),
                   product(ds, 0, b), product(is, b, is.size() - 1), static_cast<int>(k),
                   ds.data() + b, product(ds, b + k, ds.size()), flag, code, call.stream);
  call.outputs[0] = std::move(out);
}

// Shape, Size and Constant are known on the host: built there, copied in.
void trilu(const op_call& call) {
  const tensor& data = call.in(0);
  if (data.rank() < 2) call.fail("expected rank >= 2, got shape " + to_string(data.shape()));
  const bool upper = call.n.get<std::int64_t>("upper", 1) != 0;
  const tensor* k_tensor = call.optional_in(1);
  const std::int64_t k = k_tensor == nullptr ? 0 : call.host_ints(*k_tensor).at(0);
  const std::int64_t rows = data.shape()[data.rank() - 2];
  const std::int64_t cols = data.shape().back();
  tensor out = call.allocate(data.type(), data.shape());
  launch_trilu(size_of(data.type()), data.device_data(), out.device_data(),
               product(data.shape(), 0, data.rank() - 2), rows, cols, k, upper, call.stream);
  call.outputs[0] = std::move(out);
}

constexpr op_entry k_ops[] = {
    {"Concat", concat, type_rule::any},      {"Expand", expand, type_rule::any},
    {"Flatten", flatten, type_rule::any},    {"Gather", gather, type_rule::any},
    {"GatherND", gather_nd, type_rule::any}, {"Reshape", reshape, type_rule::any},
    {"Slice", slice, type_rule::any},        {"Split", split, type_rule::any},
    {"Squeeze", squeeze, type_rule::any},    {"Transpose", transpose, type_rule::any},
    {"Trilu", trilu, type_rule::any},        {"Unsqueeze", unsqueeze, type_rule::any},
};

}  // namespace

std::span<const op_entry> data_ops() { return k_ops; }

}  // namespace coolbench::engine::cuda
