// Kernels that pick or join parts of tensors: Concat, Split, Slice, Gather,
// GatherElements and GatherND.
#include "engine/backends/cpu/shape_ops.hpp"

#include "engine/backends/cpu/shape_ops_support.hpp"

namespace coolbench::engine::cpu {
namespace shape_detail {
namespace {

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

// GatherElements: out[i] = data[i with its `axis` coordinate replaced by
// indices[i]]; indices has data's rank, and may be smaller on every axis.
void gather_elements(const node& n, std::span<const tensor* const> inputs,
                     std::span<tensor> outputs) {
  const tensor& data = input(n, inputs, 0);
  const tensor& indices_tensor = input(n, inputs, 1);
  const int_list indices = read_ints(n, indices_tensor, "indices");
  const shape_t& ds = data.shape();
  const shape_t& is = indices_tensor.shape();
  if (ds.empty() || is.size() != ds.size()) {
    fail(n, "expected data of rank >= 1 and indices of its rank, got data " + to_string(ds) +
                " and indices " + to_string(is));
  }
  const std::size_t axis = normalize_axis(n, n.get<std::int64_t>("axis", 0), ds.size());
  for (std::size_t d = 0; d < ds.size(); ++d) {
    if (d != axis && is[d] > ds[d]) {
      fail(n, "expected indices " + to_string(is) + " no larger than data " + to_string(ds) +
                  " outside axis " + std::to_string(axis));
    }
  }
  tensor& out = output(n, outputs, 0);
  out = tensor(data.type(), is);
  const std::size_t element = size_of(data.type());
  const int_list strides = strides_of(ds);
  const std::int64_t dim = ds[axis];
  int_list index(is.size(), 0);
  std::int64_t offset = 0;  // data offset of `index` without the axis coordinate
  for (std::size_t i = 0; i < indices.size(); ++i) {
    std::int64_t k = indices[i];
    if (k < -dim || k >= dim) {
      fail(n, "expected indices in [" + std::to_string(-dim) + ", " + std::to_string(dim - 1) +
                  "] on axis " + std::to_string(axis) + ", got " + std::to_string(k));
    }
    if (k < 0) k += dim;
    std::memcpy(out.raw().data() + i * element,
                data.raw().data() + static_cast<std::size_t>(offset + k * strides[axis]) * element,
                element);
    for (std::size_t d = is.size(); d-- > 0;) {
      const std::int64_t step = d == axis ? 0 : strides[d];
      offset += step;
      if (++index[d] < is[d]) break;
      offset -= step * is[d];
      index[d] = 0;
    }
  }
}

constexpr std::array<kernel_entry, 6> k_kernels = {{
    {"GatherElements", gather_elements},
    {"GatherND", gather_nd},
    {"Concat", concat},
    {"Split", split},
    {"Slice", slice},
    {"Gather", gather},
}};

}  // namespace
}  // namespace shape_detail

std::span<const kernel_entry> shape_select_kernels() { return shape_detail::k_kernels; }

}  // namespace coolbench::engine::cpu
