/// @file
/// The engine's graph IR: what an ONNX model becomes once loaded. Nodes keep
/// ONNX's op types and attribute semantics.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "coolbench/engine/tensor.hpp"

namespace coolbench::engine {

/// One attribute value, as ONNX's AttributeProto types it.
using attribute = std::variant<float, std::int64_t, std::string, tensor, std::vector<float>,
                               std::vector<std::int64_t>, std::vector<std::string>>;

struct node {
  std::string name;
  std::string op_type;
  std::string domain;               ///< "" for the default ONNX domain
  std::vector<std::string> inputs;  ///< "" for an omitted optional input
  std::vector<std::string> outputs;
  std::map<std::string, attribute> attributes;

  [[nodiscard]] bool has(const std::string& attribute_name) const {
    return attributes.contains(attribute_name);
  }
  /// The attribute as T, or `fallback` when absent. Throws invalid_argument
  /// naming the node when it is present with another type.
  template <class T>
  [[nodiscard]] T get(const std::string& attribute_name, T fallback) const;
  /// The attribute as T; throws invalid_argument when absent or mistyped.
  template <class T>
  [[nodiscard]] const T& get(const std::string& attribute_name) const;

  /// "node 'name' (OpType)", for messages.
  [[nodiscard]] std::string describe() const;
};

/// A dimension of a declared input or output: a number, a symbol (bound when
/// a session sees the input), or unknown.
struct dimension {
  std::int64_t value = -1;  ///< >= 0 when known
  std::string symbol;       ///< e.g. "batch"; empty when not symbolic
};

struct value_info {
  std::string name;
  dtype type = dtype::float32;
  std::vector<dimension> shape;
  bool has_shape = false;  ///< false: the model declares no shape
};

struct graph {
  std::string name;
  std::int64_t opset = 0;          ///< of the default domain
  std::vector<node> nodes;         ///< in a topological order once loaded
  std::vector<value_info> inputs;  ///< without initializers
  std::vector<value_info> outputs;
  std::map<std::string, tensor> initializers;
};

template <class T>
T node::get(const std::string& attribute_name, T fallback) const {
  const auto it = attributes.find(attribute_name);
  return it == attributes.end() ? fallback : get<T>(attribute_name);
}

template <class T>
const T& node::get(const std::string& attribute_name) const {
  const auto it = attributes.find(attribute_name);
  if (it == attributes.end()) {
    throw invalid_argument(describe() + " lacks its required attribute '" + attribute_name + "'");
  }
  if (const T* value = std::get_if<T>(&it->second)) return *value;
  throw invalid_argument(describe() + ": attribute '" + attribute_name + "' has another type");
}

}  // namespace coolbench::engine
