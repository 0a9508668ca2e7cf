// What the shape kernel files share: reading int lists and scalars from
// index tensors, axis lists, and the strided byte copy that Transpose, Slice
// and Expand use. Internal to shape_views.cpp, shape_select.cpp and
// shape_generators.cpp.
#pragma once

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

namespace coolbench::engine::cpu::shape_detail {

using int_list = std::vector<std::int64_t>;

inline tensor& output(const node& n, std::span<tensor> outputs, std::size_t index) {
  if (index >= outputs.size()) {
    fail(n, "expected output " + std::to_string(index) + ", got " + std::to_string(outputs.size()) +
                " outputs");
  }
  return outputs[index];
}

// Index tensors may be int32 or int64 (Slice, Gather); widen both.
inline int_list read_ints(const node& n, const tensor& t, const std::string& what) {
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

inline std::int64_t read_int_scalar(const node& n, const tensor& t, const std::string& what) {
  const int_list values = read_ints(n, t, what);
  if (values.size() != 1) {
    fail(n, "expected " + what + " with one element, got shape " + to_string(t.shape()));
  }
  return values[0];
}

inline std::int64_t rank_of(const tensor& t) { return static_cast<std::int64_t>(t.rank()); }

// Normalized axes, each once.
inline std::vector<std::size_t> normalize_axes(const node& n, const int_list& axes,
                                               std::int64_t rank) {
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

inline int_list strides_of(const shape_t& shape) {
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
inline void strided_copy(const tensor& src, const int_list& strides, std::int64_t base,
                         tensor& out) {
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

inline tensor int64_vector(const int_list& values) {
  tensor t(dtype::int64, {static_cast<std::int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.data<std::int64_t>().begin());
  return t;
}

inline shape_t shape_input(const node& n, const tensor& t) {
  if (t.rank() != 1) fail(n, "expected a 1-D shape input, got shape " + to_string(t.shape()));
  return read_ints(n, t, "shape");
}

}  // namespace coolbench::engine::cpu::shape_detail
