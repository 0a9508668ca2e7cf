// Shape rules of the elementwise ops: unary ops keep their input's shape;
// binary and variadic ops, comparisons and Where broadcast; Cast and the
// predicates change only the type.
#include "engine/shape_inference/rules.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace coolbench::engine::shape_rules {

std::vector<shape_info> same_as_input(const op_context& c) { return {c.shape(0)}; }

std::vector<shape_info> same_as_input_bool(const op_context& c) {
  shape_info s = c.shape(0);
  s.type_known = true;
  s.type = dtype::boolean;
  return {s};
}

std::vector<shape_info> broadcast_all(const op_context& c) { return {broadcast(c, 0, 0)}; }

std::vector<shape_info> compare(const op_context& c) {
  shape_info s = broadcast(c, 0, 0);
  s.type_known = true;
  s.type = dtype::boolean;
  return {s};
}

std::vector<shape_info> where(const op_context& c) { return {broadcast(c, 0, 1)}; }

std::vector<shape_info> dropout(const op_context& c) {
  return {c.shape(0), same_as_input_bool(c)[0]};
}

namespace {

std::optional<dtype> onnx_dtype(std::int64_t code) {
  switch (code) {
    case 1: return dtype::float32;
    case 10: return dtype::float16;
    case 7: return dtype::int64;
    case 6: return dtype::int32;
    case 9: return dtype::boolean;
    default: return std::nullopt;
  }
}

}  // namespace

std::vector<shape_info> cast(const op_context& c) {
  shape_info s = c.shape(0);
  const auto target = onnx_dtype(c.n.get<std::int64_t>("to"));
  s.type_known = target.has_value();
  s.type = target.value_or(dtype::float32);
  return {s};
}

std::vector<shape_info> cast_like(const op_context& c) {
  shape_info s = c.shape(0);
  s.type_known = c.shape(1).type_known;
  s.type = c.shape(1).type;
  return {s};
}

}  // namespace coolbench::engine::shape_rules
