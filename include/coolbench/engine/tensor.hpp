/// @file
/// Tensors of the engine: a dtype, a shape and contiguous row-major storage,
/// in host memory or in a backend's device memory. The CPU backend computes on
/// host tensors; the CUDA backend on device tensors, copying to and from the
/// host at a session's edges.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coolbench/core/error.hpp"

namespace coolbench::engine {

/// Element types the engine supports (ONNX TensorProto.DataType values in the
/// comments). float16 is stored as IEEE binary16 bits, bfloat16 as the upper
/// half of a float32; both are computed in float32.
enum class dtype : std::uint8_t {
  float32,   ///< FLOAT = 1
  float16,   ///< FLOAT16 = 10
  int64,     ///< INT64 = 7
  int32,     ///< INT32 = 6
  boolean,   ///< BOOL = 9, one byte per element
  bfloat16,  ///< BFLOAT16 = 16
};

/// float32, float16 or bfloat16.
[[nodiscard]] constexpr bool is_float(dtype type) noexcept {
  return type == dtype::float32 || type == dtype::float16 || type == dtype::bfloat16;
}

[[nodiscard]] std::string_view to_string(dtype type) noexcept;
[[nodiscard]] std::size_t size_of(dtype type) noexcept;

using shape_t = std::vector<std::int64_t>;

/// "[1, 2, 3]".
[[nodiscard]] std::string to_string(const shape_t& shape);

/// Product of the dimensions. Throws invalid_argument for a negative
/// dimension or when the product overflows (a hostile model must not make
/// the engine allocate a wrapped-around size).
[[nodiscard]] std::int64_t element_count(const shape_t& shape);

/// Memory a backend holds outside the host (a CUDA buffer from the device
/// layer). Tensors share it; it is freed when the last one drops it, or by a
/// device release, after which address() throws.
class device_storage {
 public:
  virtual ~device_storage() = default;
  /// The device address. Throws once the memory is gone (after a release).
  [[nodiscard]] virtual void* address() const = 0;
  /// False once a device release freed the memory.
  [[nodiscard]] virtual bool valid() const noexcept = 0;
  /// Where it lives, for messages: "cuda:0".
  [[nodiscard]] virtual std::string location() const = 0;
};

/// A dense tensor in host memory, or a view of device memory. Copyable: a
/// host tensor copies its data, a device tensor shares its storage.
class tensor {
 public:
  tensor() = default;
  /// Zero-filled storage for `shape` (allocation only; kernels overwrite it).
  tensor(dtype type, shape_t shape);
  /// Takes `bytes` as the contents; their size must match the shape.
  tensor(dtype type, shape_t shape, std::vector<std::byte> bytes);
  /// A device tensor: `storage` from `offset` bytes on (a backend made it).
  tensor(dtype type, shape_t shape, std::shared_ptr<device_storage> storage,
         std::size_t offset = 0);

  [[nodiscard]] dtype type() const noexcept { return m_type; }
  [[nodiscard]] const shape_t& shape() const noexcept { return m_shape; }
  [[nodiscard]] std::int64_t size() const noexcept { return m_count; }
  [[nodiscard]] std::size_t bytes() const noexcept {
    return static_cast<std::size_t>(m_count) * size_of(m_type);
  }
  [[nodiscard]] std::size_t rank() const noexcept { return m_shape.size(); }

  /// Whether the data lives in a backend's device memory.
  [[nodiscard]] bool on_device() const noexcept { return m_device != nullptr; }
  /// Host bytes; throws invalid_argument for a device tensor.
  [[nodiscard]] std::span<std::byte> raw();
  [[nodiscard]] std::span<const std::byte> raw() const;
  /// The device address of the first element; throws invalid_argument for a
  /// host tensor, and what the storage throws once a release freed it.
  [[nodiscard]] void* device_data() const;
  [[nodiscard]] const std::shared_ptr<device_storage>& storage() const noexcept { return m_device; }

  /// Typed view; throws invalid_argument when T does not match the dtype.
  template <class T>
  [[nodiscard]] std::span<T> data();
  template <class T>
  [[nodiscard]] std::span<const T> data() const;

  /// The same data under another shape of the same element count (a device
  /// tensor shares its storage).
  [[nodiscard]] tensor reshaped(shape_t shape) const;
  /// A device tensor's elements [first, first + count) under `shape` (count
  /// its element count), sharing the storage: a Split's part that is one
  /// contiguous range. Throws invalid_argument for a host tensor or a range
  /// past the end.
  [[nodiscard]] tensor elements_from(std::int64_t first, shape_t shape) const;

 private:
  dtype m_type = dtype::float32;
  shape_t m_shape;
  std::int64_t m_count = 0;
  std::vector<std::byte> m_data;
  std::shared_ptr<device_storage> m_device;
  std::size_t m_offset = 0;
};

/// The dtype that stores T (float → float32, std::int64_t → int64, …);
/// float16 has no C++ type here and is reached through raw().
template <class T>
[[nodiscard]] constexpr dtype dtype_of() noexcept;

template <>
constexpr dtype dtype_of<float>() noexcept {
  return dtype::float32;
}
template <>
constexpr dtype dtype_of<std::int64_t>() noexcept {
  return dtype::int64;
}
template <>
constexpr dtype dtype_of<std::int32_t>() noexcept {
  return dtype::int32;
}
template <>
constexpr dtype dtype_of<bool>() noexcept {
  return dtype::boolean;
}

template <class T>
std::span<T> tensor::data() {
  if (dtype_of<std::remove_const_t<T>>() != m_type) {
    throw invalid_argument("tensor holds " + std::string(to_string(m_type)) + ", not " +
                           std::string(to_string(dtype_of<std::remove_const_t<T>>())));
  }
  return {reinterpret_cast<T*>(raw().data()), static_cast<std::size_t>(m_count)};  // NOLINT
}

template <class T>
std::span<const T> tensor::data() const {
  return const_cast<tensor*>(this)->data<const T>();  // NOLINT: one check, two constnesses
}

/// IEEE binary16 <-> float32, round to nearest even.
[[nodiscard]] float half_to_float(std::uint16_t bits) noexcept;
[[nodiscard]] std::uint16_t float_to_half(float value) noexcept;
/// bfloat16 <-> float32, round to nearest even (NaN stays NaN).
[[nodiscard]] float bfloat16_to_float(std::uint16_t bits) noexcept;
[[nodiscard]] std::uint16_t float_to_bfloat16(float value) noexcept;

}  // namespace coolbench::engine
