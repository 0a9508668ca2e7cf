// Kernels that make tensors from attributes or scalars: ConstantOfShape,
// Constant, Range, and Trilu (a triangular mask over its input).
#include "engine/backends/cpu/shape_ops.hpp"

#include "engine/backends/cpu/shape_ops_support.hpp"

namespace coolbench::engine::cpu {
namespace shape_detail {
namespace {

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

constexpr std::array<kernel_entry, 4> k_kernels = {{
    {"ConstantOfShape", constant_of_shape},
    {"Constant", constant},
    {"Range", range},
    {"Trilu", trilu},
}};

}  // namespace
}  // namespace shape_detail

std::span<const kernel_entry> shape_generator_kernels() { return shape_detail::k_kernels; }

}  // namespace coolbench::engine::cpu
