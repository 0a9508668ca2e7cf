#include "coolbench/engine/tensor.hpp"

#include <bit>
#include <cstring>
#include <limits>

namespace coolbench::engine {

std::string_view to_string(dtype type) noexcept {
  switch (type) {
    case dtype::float32: return "float32";
    case dtype::float16: return "float16";
    case dtype::int64: return "int64";
    case dtype::int32: return "int32";
    case dtype::boolean: return "bool";
    case dtype::bfloat16: return "bfloat16";
  }
  return "unknown";
}

std::size_t size_of(dtype type) noexcept {
  switch (type) {
    case dtype::float32: return 4;
    case dtype::float16: return 2;
    case dtype::int64: return 8;
    case dtype::int32: return 4;
    case dtype::boolean: return 1;
    case dtype::bfloat16: return 2;
  }
  return 0;
}

std::string to_string(const shape_t& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    text += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  return text + "]";
}

std::int64_t element_count(const shape_t& shape) {
  std::int64_t count = 1;
  for (const std::int64_t d : shape) {
    if (d < 0) throw invalid_argument("negative dimension in shape " + to_string(shape));
    if (d != 0 && count > std::numeric_limits<std::int64_t>::max() / d) {
      throw invalid_argument("shape " + to_string(shape) +
                             " has more elements than fit in 64 bits");
    }
    count *= d;
  }
  return count;
}

namespace {

std::size_t byte_size(dtype type, std::int64_t count) {
  // Also refuse sizes no allocation could satisfy, before trying one.
  constexpr auto limit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (static_cast<std::uint64_t>(count) > limit / size_of(type)) {
    throw invalid_argument("tensor of " + std::to_string(count) + " elements is too large");
  }
  return static_cast<std::size_t>(count) * size_of(type);
}

}  // namespace

tensor::tensor(dtype type, shape_t shape)
    : m_type(type),
      m_shape(std::move(shape)),
      m_count(element_count(m_shape)),
      m_data(byte_size(type, m_count)) {}

tensor::tensor(dtype type, shape_t shape, std::vector<std::byte> bytes)
    : m_type(type),
      m_shape(std::move(shape)),
      m_count(element_count(m_shape)),
      m_data(std::move(bytes)) {
  if (m_data.size() != byte_size(type, m_count)) {
    throw invalid_argument("tensor of shape " + to_string(m_shape) + " and type " +
                           std::string(to_string(type)) + " needs " +
                           std::to_string(byte_size(type, m_count)) + " bytes, got " +
                           std::to_string(m_data.size()));
  }
}

tensor::tensor(dtype type, shape_t shape, std::shared_ptr<device_storage> storage,
               std::size_t offset)
    : m_type(type),
      m_shape(std::move(shape)),
      m_count(element_count(m_shape)),
      m_device(std::move(storage)),
      m_offset(offset) {
  byte_size(type, m_count);  // refuses impossible sizes
  if (m_device == nullptr) throw invalid_argument("a device tensor needs storage");
}

std::span<std::byte> tensor::raw() {
  if (m_device) {
    throw invalid_argument("the tensor's data is on " + m_device->location() +
                           ": copy it to the host first");
  }
  return m_data;
}

std::span<const std::byte> tensor::raw() const {
  return const_cast<tensor*>(this)->raw();
}  // NOLINT

void* tensor::device_data() const {
  if (!m_device) throw invalid_argument("the tensor is in host memory, not on a device");
  return static_cast<std::byte*>(m_device->address()) + m_offset;
}

tensor tensor::reshaped(shape_t shape) const {
  if (element_count(shape) != m_count) {
    throw invalid_argument("cannot reshape " + to_string(m_shape) + " (" + std::to_string(m_count) +
                           " elements) to " + to_string(shape));
  }
  if (m_device) return {m_type, std::move(shape), m_device, m_offset};
  return {m_type, std::move(shape), m_data};
}

tensor tensor::elements_from(std::int64_t first, shape_t shape) const {
  if (!m_device) throw invalid_argument("a view of elements needs a device tensor");
  const std::int64_t count = element_count(shape);
  if (first < 0 || first > m_count || count > m_count - first) {
    throw invalid_argument(std::to_string(count) + " elements from element " +
                           std::to_string(first) + " are not within the " +
                           std::to_string(m_count) + " of " + to_string(m_shape));
  }
  return {m_type, std::move(shape), m_device,
          m_offset + static_cast<std::size_t>(first) * size_of(m_type)};
}

float half_to_float(std::uint16_t bits) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000U) << 16U;
  const std::uint32_t exponent = (bits >> 10U) & 0x1FU;
  std::uint32_t mantissa = bits & 0x3FFU;
  std::uint32_t out = 0;
  if (exponent == 0x1FU) {
    out = sign | 0x7F800000U | (mantissa << 13U);  // inf or nan
  } else if (exponent != 0) {
    out = sign | ((exponent + 112U) << 23U) | (mantissa << 13U);
  } else if (mantissa != 0) {  // subnormal: normalise
    std::uint32_t e = 113;
    while ((mantissa & 0x400U) == 0) {
      mantissa <<= 1U;
      --e;
    }
    out = sign | (e << 23U) | ((mantissa & 0x3FFU) << 13U);
  } else {
    out = sign;
  }
  return std::bit_cast<float>(out);
}

std::uint16_t float_to_half(float value) noexcept {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16U) & 0x8000U);
  const std::uint32_t exponent = (bits >> 23U) & 0xFFU;
  std::uint32_t mantissa = bits & 0x7FFFFFU;
  if (exponent == 0xFFU) {  // inf or nan (keep nan quiet)
    return static_cast<std::uint16_t>(sign | 0x7C00U | (mantissa != 0 ? 0x200U : 0U));
  }
  const int e = static_cast<int>(exponent) - 127 + 15;
  if (e >= 0x1F) return static_cast<std::uint16_t>(sign | 0x7C00U);  // overflow to inf
  if (e <= 0) {
    if (e < -10) return sign;  // underflow to zero
    mantissa |= 0x800000U;
    const auto shift = static_cast<std::uint32_t>(14 - e);
    std::uint32_t half = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1U << shift) - 1U);
    const std::uint32_t halfway = 1U << (shift - 1U);
    if (rest > halfway || (rest == halfway && (half & 1U) != 0)) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = (static_cast<std::uint32_t>(e) << 10U) | (mantissa >> 13U);
  const std::uint32_t rest = mantissa & 0x1FFFU;
  if (rest > 0x1000U || (rest == 0x1000U && (half & 1U) != 0))
    ++half;  // may carry into inf: correct
  return static_cast<std::uint16_t>(sign | half);
}

float bfloat16_to_float(std::uint16_t bits) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16U);
}

std::uint16_t float_to_bfloat16(float value) noexcept {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7FFFFFFFU) > 0x7F800000U) {  // NaN: keep it quiet and a NaN
    return static_cast<std::uint16_t>((bits >> 16U) | 0x40U);
  }
  const std::uint32_t rounding = 0x7FFFU + ((bits >> 16U) & 1U);
  return static_cast<std::uint16_t>((bits + rounding) >> 16U);
}

}  // namespace coolbench::engine
