#include "engine/backends/cpu/shape_ops.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "coolbench/core/error.hpp"
#include "engine/backends/cpu/kernel_args.hpp"

namespace coolbench::engine::cpu {
namespace {

using int_list = std::vector<std::int64_t>;

tensor& output(const node& n, std::span<tensor> outputs, std::size_t index) {
  if (index >= outputs.size()) {
    fail(n, "expected output " + std::to_string(index) + ", got " + std::to_string(outputs.size()) +
                " outputs");
  }
  return outputs[index];
}

// Index tensors may be int32 or int64 (Slice, Gather); widen both.
int_list read_ints(const node& n, const tensor& t, const std::string& what) {
  if (t.type() == dtype::int64) {
    const auto values = t.data<std::int64_t>();
    return {values.begin(), values.end()};
  }
  if (t.type() == dtype::int32) {
    const auto values = t.data<std::int32_t>();
    return {values.begin(), values.end()};
  }
  fail(n, "expected " + what + " of int32 or int64, got " + std::string(to_string(t.type())));
}

std::int64_t read_int_scalar(const node& n, const tensor& t, const std::string& what) {
  const int_list values = read_ints(n, t, what);
  if (values.size() != 1) {
    fail(n, "expected " + what + " with one element, got shape " + to_string(t.shape()));
  }
  return values[0];
}

std::int64_t rank_of(const tensor& t) { return static_cast<std::int64_t>(t.rank()); }

// Normalized axes, each once.
std::vector<std::size_t> normalize_axes(const node& n, const int_list& axes, std::int64_t rank) {
  std::vector<std::size_t> result;
  for (const std::int64_t axis : axes) {
    const std::size_t a = normalize_axis(n, axis, static_cast<std::size_t>(rank));
    if (std::find(result.begin(), result.end(), a) != result.end()) {
      fail(n, "expected distinct axes, got axis " + std::to_string(axis) + " twice");
    }
    result.push_back(a);
  }
  return result;
}

int_list strides_of(const shape_t& shape) {
  int_list strides(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

// The element size is a template parameter so memcpy compiles to one move.
template <std::size_t Size>
void strided_copy_as(const std::byte* src, const shape_t& shape, const int_list& strides,
                     std::int64_t base, std::byte* dst, std::int64_t count) {
  const std::size_t rank = shape.size();
  int_list index(rank, 0);
  std::int64_t offset = base;
  for (std::int64_t i = 0; i < count; ++i) {
    std::memcpy(dst + static_cast<std::size_t>(i) * Size,
                src + static_cast<std::size_t>(offset) * Size, Size);
    for (std::size_t d = rank; d-- > 0;) {
      offset += strides[d];
      if (++index[d] < shape[d]) break;
      offset -= strides[d] * shape[d];
      index[d] = 0;
    }
  }
}

// Fills `out` (row-major, shape `out_shape`) with the source elements at
// base + sum(index[d] * strides[d]). Transpose, Slice and Expand differ only
// in the base and strides they pass (permuted, stepped, zero).
void strided_copy(const tensor& src, const int_list& strides, std::int64_t base, tensor& out) {
  const std::byte* from = src.raw().data();
  std::byte* to = out.raw().data();
  const shape_t& shape = out.shape();
  const std::int64_t count = out.size();
  if (count == 0) return;
  switch (size_of(src.type())) {
    case 1: strided_copy_as<1>(from, shape, strides, base, to, count); break;
    case 2: strided_copy_as<2>(from, shape, strides, base, to, count); break;
    case 4: strided_copy_as<4>(from, shape, strides, base, to, count); break;
    case 8: strided_copy_as<8>(from, shape, strides, base, to, count); break;
    default: throw invalid_argument("unsupported element size");
  }
}

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

void concat(const node& n, std::span<const tensor* const> inputs, std::span<tensor> outputs) {
  const tensor& first = input(n, inputs, 0);
  const std::size_t axis = normalize_axis(n, n.get<std::int64_t>("axis"), first.rank());
  shape_t shape = first.shape();
  shape[axis] = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const tensor& t = input(n, inputs, i);
    bool fits = t.type() == first.type() && t.rank() == first.rank();
    for (std::size_t d = 0; fits && d < t.rank(); ++d) {
      fits = d == axis || t.shape()[d] == first.shape()[d];
    }
    if (!fits) {
      fail(n, "expected inputs of " + std::string(to_string(first.type())) + " matching " +
                  to_string(first.shape()) + " but on axis " + std::to_string(axis) + ", got " +
                  std::string(to_string(t.type())) + " " + to_string(t.shape()) + " at input " +
                  std::to_string(i));
    }
    shape[axis] += t.shape()[axis];
  }
  tensor& out = output(n, outputs, 0);
  out = tensor(first.type(), shape);
  const auto outer = static_cast<std::size_t>(product(shape, 0, axis));
  const auto inner =
      static_cast<std::size_t>(product(shape, axis + 1, shape.size())) * size_of(first.type());
  std::byte* to = out.raw().data();
  for (std::size_t o = 0; o < outer; ++o) {
    for (const tensor* t : inputs) {
      const std::size_t block = static_cast<std::size_t>(t->shape()[axis]) * inner;
      if (block == 0) continue;
      std::memcpy(to, t->raw().data() + o * block, block);
      to += block;
    }
  }
}

void split(const node& n, std::span<const tensor* const> inputs, std::span<tensor> outputs) {
  const tensor& data = input(n, inputs, 0);
  const std::size_t axis = normalize_axis(n, n.get<std::int64_t>("axis", 0), data.rank());
  const std::int64_t dim = data.shape()[axis];
  const auto parts = static_cast<std::int64_t>(outputs.size());
  int_list sizes;
  // Sizes come from input 1 (opset >= 13) or the attribute (< 13); else the
  // axis is cut evenly, into num_outputs parts (opset 18, last part may be
  // smaller) or one part per output (exactly).
  if (const tensor* t = optional_input(inputs, 1)) {
    sizes = read_ints(n, *t, "split");
  } else if (n.has("split")) {
    sizes = n.get<int_list>("split");
  } else if (n.has("num_outputs")) {
    const auto count = n.get<std::int64_t>("num_outputs");
    if (count != parts) {
      fail(n, "expected num_outputs to equal the " + std::to_string(parts) + " outputs, got " +
                  std::to_string(count));
    }
    if (count < 1) fail(n, "expected at least one output, got none");
    const std::int64_t chunk = (dim + count - 1) / count;
    for (std::int64_t start = 0, i = 0; i < count; ++i, start += chunk) {
      sizes.push_back(std::clamp<std::int64_t>(dim - start, 0, chunk));
    }
  } else {
    if (parts < 1 || dim % parts != 0) {
      fail(n, "expected dimension " + std::to_string(dim) + " to split evenly into " +
                  std::to_string(parts) + " outputs");
    }
    sizes.assign(outputs.size(), dim / parts);
  }
  if (sizes.size() != outputs.size()) {
    fail(n, "expected " + std::to_string(outputs.size()) + " split sizes, got " + to_string(sizes));
  }
  std::int64_t total = 0;
  for (const std::int64_t size : sizes) {
    if (size < 0) fail(n, "expected non-negative split sizes, got " + to_string(sizes));
    total += size;
  }
  if (total != dim) {
    fail(n, "expected split sizes summing to " + std::to_string(dim) + ", got " + to_string(sizes));
  }
  const auto outer = static_cast<std::size_t>(product(data.shape(), 0, axis));
  const auto inner =
      static_cast<std::size_t>(product(data.shape(), axis + 1, data.rank())) * size_of(data.type());
  const auto row = static_cast<std::size_t>(dim) * inner;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    shape_t shape = data.shape();
    shape[axis] = sizes[i];
    outputs[i] = tensor(data.type(), shape);
    const std::size_t block = static_cast<std::size_t>(sizes[i]) * inner;
    std::byte* to = outputs[i].raw().data();
    for (std::size_t o = 0; o < outer && block != 0; ++o) {
      std::memcpy(to + o * block, data.raw().data() + o * row + offset, block);
    }
    offset += block;
  }
}

void slice(const node& n, std::span<const tensor* const> inputs, std::span<tensor> outputs) {
  const tensor& data = input(n, inputs, 0);
  const std::int64_t rank = rank_of(data);
  int_list starts;
  int_list ends;
  std::optional<int_list> given_axes;
  std::optional<int_list> steps;
  if (optional_input(inputs, 1) == nullptr && n.has("starts")) {  // opset < 10
    starts = n.get<int_list>("starts");
    ends = n.get<int_list>("ends");
    if (n.has("axes")) given_axes = n.get<int_list>("axes");
  } else {
    starts = read_ints(n, input(n, inputs, 1), "starts");
    ends = read_ints(n, input(n, inputs, 2), "ends");
    if (const tensor* t = optional_input(inputs, 3)) given_axes = read_ints(n, *t, "axes");
    if (const tensor* t = optional_input(inputs, 4)) steps = read_ints(n, *t, "steps");
  }
  int_list axes_list(starts.size());
  std::iota(axes_list.begin(), axes_list.end(), 0);
  if (given_axes) axes_list = *given_axes;
  if (!steps) steps = int_list(starts.size(), 1);
  if (ends.size() != starts.size() || axes_list.size() != starts.size() ||
      steps->size() != starts.size()) {
    fail(n, "expected starts, ends, axes and steps of one length, got " +
                std::to_string(starts.size()) + ", " + std::to_string(ends.size()) + ", " +
                std::to_string(axes_list.size()) + ", " + std::to_string(steps->size()));
  }
  const std::vector<std::size_t> axes = normalize_axes(n, axes_list, rank);
  const int_list in_strides = strides_of(data.shape());
  shape_t shape = data.shape();
  int_list strides = in_strides;
  std::int64_t base = 0;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const std::size_t axis = axes[i];
    const std::int64_t dim = data.shape()[axis];
    const std::int64_t step = (*steps)[i];
    if (step == 0) fail(n, "expected non-zero steps, got 0 on axis " + std::to_string(axis));
    std::int64_t start = starts[i];
    std::int64_t end = ends[i];
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    // Clamping as the spec gives it: a negative step walks from dim - 1
    // down to (and past) index 0, so its end may be -1.
    std::int64_t count = 0;
    if (step > 0) {
      start = std::min(std::max<std::int64_t>(start, 0), dim);
      end = std::min(std::max<std::int64_t>(end, 0), dim);
      if (end > start) count = (end - start - 1) / step + 1;
    } else {
      start = std::min(std::max<std::int64_t>(start, 0), dim - 1);
      end = std::min(std::max<std::int64_t>(end, -1), dim - 1);
      // step == INT64_MIN has no positive counterpart; any one step covers it.
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
  tensor& out = output(n, outputs, 0);
  out = tensor(data.type(), std::move(shape));
  strided_copy(data, strides, base, out);
}

void gather(const node& n, std::span<const tensor* const> inputs, std::span<tensor> outputs) {
  const tensor& data = input(n, inputs, 0);
  const tensor& indices_tensor = input(n, inputs, 1);
  const std::size_t axis = normalize_axis(n, n.get<std::int64_t>("axis", 0), data.rank());
  const int_list indices = read_ints(n, indices_tensor, "indices");
  const std::int64_t dim = data.shape()[axis];
  shape_t shape(data.shape().begin(), data.shape().begin() + static_cast<std::ptrdiff_t>(axis));
  shape.insert(shape.end(), indices_tensor.shape().begin(), indices_tensor.shape().end());
  shape.insert(shape.end(), data.shape().begin() + static_cast<std::ptrdiff_t>(axis) + 1,
               data.shape().end());
  tensor& out = output(n, outputs, 0);
  out = tensor(data.type(), std::move(shape));
  const auto outer = static_cast<std::size_t>(product(data.shape(), 0, axis));
  const auto block =
      static_cast<std::size_t>(product(data.shape(), axis + 1, data.rank())) * size_of(data.type());
  const std::byte* from = data.raw().data();
  std::byte* to = out.raw().data();
  for (const std::int64_t index : indices) {
    if (index < -dim || index >= dim) {
      fail(n, "expected indices in [" + std::to_string(-dim) + ", " + std::to_string(dim - 1) +
                  "], got " + std::to_string(index));
    }
  }
  if (block == 0) return;
  for (std::size_t o = 0; o < outer; ++o) {
    for (const std::int64_t index : indices) {
      const auto row = static_cast<std::size_t>(index < 0 ? index + dim : index);
      std::memcpy(to, from + (o * static_cast<std::size_t>(dim) + row) * block, block);
      to += block;
    }
  }
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

// GatherND: each index tuple in the last axis of `indices` picks a slice of
// `data`, within the leading batch_dims dimensions both share.
void gather_nd(const node& n, std::span<const tensor* const> inputs, std::span<tensor> outputs) {
  const tensor& data = input(n, inputs, 0);
  const tensor& indices_tensor = input(n, inputs, 1);
  const int_list indices = read_ints(n, indices_tensor, "indices");
  const std::int64_t batch_dims = n.get<std::int64_t>("batch_dims", 0);
  const shape_t& ds = data.shape();
  const shape_t& is = indices_tensor.shape();
  const auto b = static_cast<std::size_t>(batch_dims);
  if (batch_dims < 0 || b >= is.size() || b >= ds.size()) {
    fail(n, "expected batch_dims in [0, min(rank of data, rank of indices) - 1], got " +
                std::to_string(batch_dims) + " for data " + to_string(ds) + " and indices " +
                to_string(is));
  }
  for (std::size_t d = 0; d < b; ++d) {
    if (ds[d] != is[d]) {
      fail(n, "expected the first batch_dims dimensions of data " + to_string(ds) +
                  " and indices " + to_string(is) + " to match");
    }
  }
  const auto k = static_cast<std::size_t>(is.back());
  if (k < 1 || b + k > ds.size()) {
    fail(n, "expected the last dimension of indices " + to_string(is) + " in [1, " +
                std::to_string(ds.size() - b) + "] for data " + to_string(ds));
  }
  shape_t shape(is.begin(), is.end() - 1);
  shape.insert(shape.end(), ds.begin() + static_cast<std::ptrdiff_t>(b + k), ds.end());
  tensor& out = output(n, outputs, 0);
  out = tensor(data.type(), std::move(shape));
  const std::int64_t batches = product(ds, 0, b);
  const std::int64_t per_batch = product(is, b, is.size() - 1);  // index tuples per batch
  const auto slice_bytes =
      static_cast<std::size_t>(product(ds, b + k, ds.size())) * size_of(data.type());
  const std::int64_t batch_elements = product(ds, b, ds.size());
  const int_list strides = strides_of(ds);
  const std::byte* from = data.raw().data();
  std::byte* to = out.raw().data();
  for (std::int64_t batch = 0; batch < batches; ++batch) {
    for (std::int64_t t = 0; t < per_batch; ++t) {
      std::int64_t offset = batch * batch_elements;
      for (std::size_t j = 0; j < k; ++j) {
        std::int64_t index = indices[static_cast<std::size_t>((batch * per_batch + t)) * k + j];
        const std::int64_t dim = ds[b + j];
        if (index < -dim || index >= dim) {
          fail(n, "expected indices in [" + std::to_string(-dim) + ", " + std::to_string(dim - 1) +
                      "] for axis " + std::to_string(b + j) + ", got " + std::to_string(index));
        }
        if (index < 0) index += dim;
        offset += index * strides[b + j];
      }
      if (slice_bytes != 0) {
        std::memcpy(to, from + static_cast<std::size_t>(offset) * size_of(data.type()),
                    slice_bytes);
      }
      to += slice_bytes;
    }
  }
}

tensor int64_vector(const int_list& values) {
  tensor t(dtype::int64, {static_cast<std::int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.data<std::int64_t>().begin());
  return t;
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

shape_t shape_input(const node& n, const tensor& t) {
  if (t.rank() != 1) fail(n, "expected a 1-D shape input, got shape " + to_string(t.shape()));
  return read_ints(n, t, "shape");
}

void constant_of_shape(const node& n, std::span<const tensor* const> inputs,
                       std::span<tensor> outputs) {
  const shape_t shape = shape_input(n, input(n, inputs, 0));
  for (const std::int64_t d : shape) {
    if (d < 0) fail(n, "expected non-negative dimensions, got " + to_string(shape));
  }
  tensor& out = output(n, outputs, 0);
  if (!n.has("value")) {  // float 0: the zero-filled allocation already is that
    out = tensor(dtype::float32, shape);
    return;
  }
  const tensor& value = n.get<tensor>("value");
  if (value.size() != 1) {
    fail(n, "expected a one-element value, got shape " + to_string(value.shape()));
  }
  out = tensor(value.type(), shape);
  const std::span<const std::byte> pattern = value.raw();
  std::byte* to = out.raw().data();
  for (std::int64_t i = 0; i < out.size(); ++i, to += pattern.size()) {
    std::memcpy(to, pattern.data(), pattern.size());
  }
}

void constant(const node& n, std::span<const tensor* const>, std::span<tensor> outputs) {
  tensor& out = output(n, outputs, 0);
  if (n.has("value")) {
    out = n.get<tensor>("value");
  } else if (n.has("value_float")) {
    out = tensor(dtype::float32, {});
    out.data<float>()[0] = n.get<float>("value_float");
  } else if (n.has("value_floats")) {
    const auto& values = n.get<std::vector<float>>("value_floats");
    out = tensor(dtype::float32, {static_cast<std::int64_t>(values.size())});
    std::copy(values.begin(), values.end(), out.data<float>().begin());
  } else if (n.has("value_int")) {
    out = tensor(dtype::int64, {});
    out.data<std::int64_t>()[0] = n.get<std::int64_t>("value_int");
  } else if (n.has("value_ints")) {
    out = int64_vector(n.get<int_list>("value_ints"));
  } else {
    fail(n,
         "expected a value, value_float(s) or value_int(s) attribute, got none of them "
         "(string and sparse constants are not supported)");
  }
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

template <class T>
T scalar_of(const node& n, const tensor& t, const char* what) {
  if (t.size() != 1)
    fail(n, std::string("expected a scalar ") + what + ", got shape " + to_string(t.shape()));
  return t.data<T>()[0];
}

// Element count of [start, limit) by delta, without overflow for any int64.
std::int64_t integer_range_count(const node& n, std::int64_t start, std::int64_t limit,
                                 std::int64_t delta) {
  if (delta == 0) fail(n, "expected a non-zero delta, got 0");
  if (delta > 0 ? limit <= start : limit >= start) return 0;
  const std::uint64_t span =
      delta > 0 ? static_cast<std::uint64_t>(limit) - static_cast<std::uint64_t>(start)
                : static_cast<std::uint64_t>(start) - static_cast<std::uint64_t>(limit);
  const std::uint64_t step =
      delta > 0 ? static_cast<std::uint64_t>(delta) : static_cast<std::uint64_t>(-(delta + 1)) + 1;
  const std::uint64_t count = span / step + (span % step != 0 ? 1 : 0);
  return static_cast<std::int64_t>(count);
}

template <class T>
void range_as(const node& n, const tensor& start_t, const tensor& limit_t, const tensor& delta_t,
              tensor& out) {
  const T start = scalar_of<T>(n, start_t, "start");
  const T limit = scalar_of<T>(n, limit_t, "limit");
  const T delta = scalar_of<T>(n, delta_t, "delta");
  std::int64_t count = 0;
  if constexpr (std::is_floating_point_v<T>) {
    if (delta == 0 || !std::isfinite(delta) || !std::isfinite(start) || !std::isfinite(limit)) {
      fail(n, "expected finite start, limit and a finite non-zero delta");
    }
    const double steps = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) /
                                   static_cast<double>(delta));
    if (steps > 0x1p62) fail(n, "range of " + std::to_string(steps) + " elements is too large");
    count = std::max<std::int64_t>(static_cast<std::int64_t>(steps), 0);
  } else {
    count = integer_range_count(n, start, limit, delta);
  }
  out = tensor(dtype_of<T>(), {count});
  const std::span<T> values = out.data<T>();
  for (std::int64_t i = 0; i < count; ++i) {
    // start + i * delta in the wider type, so float ranges do not drift.
    if constexpr (std::is_floating_point_v<T>) {
      values[static_cast<std::size_t>(i)] = static_cast<T>(
          static_cast<double>(start) + static_cast<double>(i) * static_cast<double>(delta));
    } else {
      // Modulo 2^64 the sum is exact, and the true value lies in [start, limit).
      const std::uint64_t value = static_cast<std::uint64_t>(start) +
                                  static_cast<std::uint64_t>(i) * static_cast<std::uint64_t>(delta);
      values[static_cast<std::size_t>(i)] = static_cast<T>(static_cast<std::int64_t>(value));
    }
  }
}

void range(const node& n, std::span<const tensor* const> inputs, std::span<tensor> outputs) {
  const tensor& start = input(n, inputs, 0);
  const tensor& limit = input(n, inputs, 1);
  const tensor& delta = input(n, inputs, 2);
  if (limit.type() != start.type() || delta.type() != start.type()) {
    fail(n, "expected start, limit and delta of one type, got " +
                std::string(to_string(start.type())) + ", " + std::string(to_string(limit.type())) +
                ", " + std::string(to_string(delta.type())));
  }
  tensor& out = output(n, outputs, 0);
  switch (start.type()) {
    case dtype::float32: range_as<float>(n, start, limit, delta, out); break;
    case dtype::int64: range_as<std::int64_t>(n, start, limit, delta, out); break;
    case dtype::int32: range_as<std::int32_t>(n, start, limit, delta, out); break;
    default:
      fail(n, "unsupported dtype: expected float32, int32 or int64 scalars, got " +
                  std::string(to_string(start.type())));
  }
}

void trilu(const node& n, std::span<const tensor* const> inputs, std::span<tensor> outputs) {
  const tensor& data = input(n, inputs, 0);
  if (data.rank() < 2) fail(n, "expected rank >= 2, got shape " + to_string(data.shape()));
  const bool upper = n.get<std::int64_t>("upper", 1) != 0;
  const tensor* k_tensor = optional_input(inputs, 1);
  const std::int64_t k = k_tensor == nullptr ? 0 : read_int_scalar(n, *k_tensor, "k");
  tensor& out = output(n, outputs, 0);
  out = data;
  const std::int64_t rows = data.shape()[data.rank() - 2];
  const std::int64_t cols = data.shape()[data.rank() - 1];
  const std::int64_t matrices = product(data.shape(), 0, data.rank() - 2);
  const std::size_t element = size_of(data.type());
  std::byte* to = out.raw().data();
  // Zero bytes are zero in every dtype; clear what falls outside the band.
  for (std::int64_t m = 0; m < matrices; ++m) {
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < cols; ++j) {
        // j - i lies within the matrix, so comparing it with k cannot overflow.
        const bool keep = upper ? j - i >= k : j - i <= k;
        if (!keep) {
          const auto index = static_cast<std::size_t>((m * rows + i) * cols + j);
          std::memset(to + index * element, 0, element);
        }
      }
    }
  }
}

constexpr std::array<kernel_entry, 17> k_kernels = {{
    {"Flatten", flatten},
    {"GatherND", gather_nd},
    {"Reshape", reshape},
    {"Transpose", transpose},
    {"Squeeze", squeeze},
    {"Unsqueeze", unsqueeze},
    {"Concat", concat},
    {"Split", split},
    {"Slice", slice},
    {"Gather", gather},
    {"Shape", shape_op},
    {"Size", size_op},
    {"ConstantOfShape", constant_of_shape},
    {"Constant", constant},
    {"Expand", expand},
    {"Range", range},
    {"Trilu", trilu},
}};

}  // namespace

std::span<const kernel_entry> shape_kernels() { return k_kernels; }

}  // namespace coolbench::engine::cpu
