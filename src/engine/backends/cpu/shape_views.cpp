// Views and reshapes: Reshape, Transpose, Squeeze, Unsqueeze, Flatten,
// Expand, and Shape and Size, which describe their input.
#include "engine/backends/cpu/shape_ops.hpp"

#include "engine/backends/cpu/shape_ops_support.hpp"

namespace coolbench::engine::cpu {
namespace shape_detail {
namespace {

void reshape(const node& n, std::span<const tensor* const> inputs, std::span<tensor> outputs) {
  const tensor& data = input(n, inputs, 0);
  const int_list requested = read_ints(n, input(n, inputs, 1), "shape");
  const bool allow_zero = n.get<std::int64_t>("allowzero", 0) != 0;
  shape_t shape(requested.size());
  std::size_t inferred = requested.size();
  std::int64_t known = 1;
  for (std::size_t d = 0; d < requested.size(); ++d) {
    std::int64_t dim = requested[d];
    if (dim == 0 && !allow_zero) {
      if (d >= data.rank()) {
        fail(n, "shape " + to_string(requested) + " copies dimension " + std::to_string(d) +
                    " of an input of rank " + std::to_string(data.rank()));
      }
      dim = data.shape()[d];
    }
    if (dim == -1) {
      if (inferred != requested.size()) fail(n, "expected at most one -1 in the shape, got two");
      inferred = d;
      continue;
    }
    if (dim < 0) fail(n, "expected dimensions >= -1, got shape " + to_string(requested));
    shape[d] = dim;
    known = (dim == 0 || known == 0) ? 0 : known;
    if (known != 0) {
      if (known > std::numeric_limits<std::int64_t>::max() / dim) {
        fail(n, "shape " + to_string(requested) + " overflows");
      }
      known *= dim;
    }
  }
  if (inferred != requested.size()) {
    if (known == 0 || data.size() % known != 0) {
      fail(n, "cannot reshape " + to_string(data.shape()) + " to " + to_string(requested) +
                  ": no size for the -1 dimension fits " + std::to_string(data.size()) +
                  " elements");
    }
    shape[inferred] = data.size() / known;
  } else if (known != data.size()) {
    fail(n, "cannot reshape " + to_string(data.shape()) + " (" + std::to_string(data.size()) +
                " elements) to " + to_string(shape) + " (" + std::to_string(known) + " elements)");
  }
  output(n, outputs, 0) = data.reshaped(std::move(shape));
}

void transpose(const node& n, std::span<const tensor* const> inputs, std::span<tensor> outputs) {
  const tensor& data = input(n, inputs, 0);
  const std::size_t rank = data.rank();
  int_list reversed(rank);
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  const int_list perm = n.get<int_list>("perm", reversed);
  if (perm.size() != rank) {
    fail(n, "expected perm of " + std::to_string(rank) + " axes, got " + to_string(perm));
  }
  const std::vector<std::size_t> axes = normalize_axes(n, perm, rank_of(data));
  const int_list in_strides = strides_of(data.shape());
  shape_t shape(rank);
  int_list strides(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    shape[d] = data.shape()[axes[d]];
    strides[d] = in_strides[axes[d]];
  }
  tensor& out = output(n, outputs, 0);
  out = tensor(data.type(), std::move(shape));
  strided_copy(data, strides, 0, out);
}

// Opset < 13 gives axes as an attribute, opset >= 13 as input 1.
std::optional<int_list> axes_of(const node& n, std::span<const tensor* const> inputs) {
  if (n.has("axes")) return n.get<int_list>("axes");
  if (const tensor* t = optional_input(inputs, 1)) return read_ints(n, *t, "axes");
  return std::nullopt;
}

void squeeze(const node& n, std::span<const tensor* const> inputs, std::span<tensor> outputs) {
  const tensor& data = input(n, inputs, 0);
  const std::optional<int_list> given = axes_of(n, inputs);
  std::vector<bool> drop(data.rank(), false);
  // No axes (or an empty list, as onnxruntime reads it): drop every 1.
  if (!given || given->empty()) {
    for (std::size_t d = 0; d < data.rank(); ++d) drop[d] = data.shape()[d] == 1;
  } else {
    for (const std::size_t axis : normalize_axes(n, *given, rank_of(data))) {
      if (data.shape()[axis] != 1) {
        fail(n, "expected dimension " + std::to_string(axis) + " of " + to_string(data.shape()) +
                    " to be 1, got " + std::to_string(data.shape()[axis]));
      }
      drop[axis] = true;
    }
  }
  shape_t shape;
  for (std::size_t d = 0; d < data.rank(); ++d) {
    if (!drop[d]) shape.push_back(data.shape()[d]);
  }
  output(n, outputs, 0) = data.reshaped(std::move(shape));
}

void unsqueeze(const node& n, std::span<const tensor* const> inputs, std::span<tensor> outputs) {
  const tensor& data = input(n, inputs, 0);
  const std::optional<int_list> given = axes_of(n, inputs);
  if (!given) fail(n, "expected axes (attribute or input 1), got none");
  const auto rank = static_cast<std::int64_t>(data.rank() + given->size());
  std::vector<bool> inserted(static_cast<std::size_t>(rank), false);
  for (const std::size_t axis : normalize_axes(n, *given, rank)) inserted[axis] = true;
  shape_t shape;
  std::size_t next = 0;
  for (const bool one : inserted) shape.push_back(one ? 1 : data.shape()[next++]);
  output(n, outputs, 0) = data.reshaped(std::move(shape));
}

// Flatten: [d0 .. d(axis-1)] x [d(axis) ..]; the bytes stay as they are.
void flatten(const node& n, std::span<const tensor* const> inputs, std::span<tensor> outputs) {
  const tensor& data = input(n, inputs, 0);
  const std::int64_t rank = rank_of(data);
  std::int64_t axis = n.get<std::int64_t>("axis", 1);
  if (axis < -rank || axis > rank) {
    fail(n, "expected axis in [" + std::to_string(-rank) + ", " + std::to_string(rank) + "], got " +
                std::to_string(axis));
  }
  if (axis < 0) axis += rank;
  const auto split = static_cast<std::size_t>(axis);
  tensor& out = output(n, outputs, 0);
  out = tensor(data.type(),
               {product(data.shape(), 0, split), product(data.shape(), split, data.rank())});
  std::memcpy(out.raw().data(), data.raw().data(), data.raw().size());
}

void shape_op(const node& n, std::span<const tensor* const> inputs, std::span<tensor> outputs) {
  const tensor& data = input(n, inputs, 0);
  const std::int64_t rank = rank_of(data);
  // Opset 15's start/end: negative counts from the back, then clamp.
  const auto bound = [rank](std::int64_t value) {
    return std::clamp<std::int64_t>(value < 0 ? value + rank : value, 0, rank);
  };
  const std::int64_t start = bound(n.get<std::int64_t>("start", 0));
  const std::int64_t end = bound(n.get<std::int64_t>("end", rank));
  int_list dims;
  for (std::int64_t d = start; d < end; ++d)
    dims.push_back(data.shape()[static_cast<std::size_t>(d)]);
  output(n, outputs, 0) = int64_vector(dims);
}

void size_op(const node& n, std::span<const tensor* const> inputs, std::span<tensor> outputs) {
  tensor result(dtype::int64, {});
  result.data<std::int64_t>()[0] = input(n, inputs, 0).size();
  output(n, outputs, 0) = std::move(result);
}

void expand(const node& n, std::span<const tensor* const> inputs, std::span<tensor> outputs) {
  const tensor& data = input(n, inputs, 0);
  const shape_t target = shape_input(n, input(n, inputs, 1));
  const std::size_t rank = std::max(data.rank(), target.size());
  shape_t shape(rank);
  int_list strides(rank, 0);
  const int_list in_strides = strides_of(data.shape());
  for (std::size_t d = 0; d < rank; ++d) {
    // Align both shapes on the right; a missing dimension counts as 1.
    const std::size_t from_data = rank - data.rank();
    const std::size_t from_target = rank - target.size();
    const std::int64_t a = d < from_data ? 1 : data.shape()[d - from_data];
    const std::int64_t b = d < from_target ? 1 : target[d - from_target];
    if (b < 0) fail(n, "expected non-negative dimensions, got shape " + to_string(target));
    if (a != b && a != 1 && b != 1) {
      fail(n, "cannot broadcast " + to_string(data.shape()) + " to " + to_string(target));
    }
    shape[d] = a == 1 ? b : a;
    if (d >= from_data && a != 1) strides[d] = in_strides[d - from_data];
  }
  tensor& out = output(n, outputs, 0);
  out = tensor(data.type(), std::move(shape));
  strided_copy(data, strides, 0, out);
}

constexpr std::array<kernel_entry, 8> k_kernels = {{
    {"Flatten", flatten},
    {"Reshape", reshape},
    {"Transpose", transpose},
    {"Squeeze", squeeze},
    {"Unsqueeze", unsqueeze},
    {"Shape", shape_op},
    {"Size", size_op},
    {"Expand", expand},
}};

}  // namespace
}  // namespace shape_detail

std::span<const kernel_entry> shape_view_kernels() { return shape_detail::k_kernels; }

}  // namespace coolbench::engine::cpu
