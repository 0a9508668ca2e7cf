// ONNX protobuf (Debian's libonnx) to the graph IR. Everything a hostile or
// broken file can get wrong becomes a model_error naming the file and the
// place, never a crash: sizes are checked before anything is allocated.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <queue>
#include <set>

#include "coolbench/engine/model.hpp"

namespace coolbench::engine {
namespace {

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw model_error(source + ": " + what);
}

dtype dtype_from_onnx(int code, const std::string& source, const std::string& where) {
  switch (code) {
    case onnx::TensorProto_DataType_FLOAT: return dtype::float32;
    case onnx::TensorProto_DataType_FLOAT16: return dtype::float16;
    case onnx::TensorProto_DataType_INT64: return dtype::int64;
    case onnx::TensorProto_DataType_INT32: return dtype::int32;
    case onnx::TensorProto_DataType_BOOL: return dtype::boolean;
    case onnx::TensorProto_DataType_BFLOAT16: return dtype::bfloat16;
    default:
      fail(source, where + " has ONNX data type " + std::to_string(code) +
                       ", which coolbench does not support (float32, float16, bfloat16, int64, "
                       "int32, bool)");
  }
}

std::vector<std::byte> read_file_bytes(const std::filesystem::path& path, std::uint64_t offset,
                                       std::int64_t length, const std::string& source) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) fail(source, "external data file " + path.string() + " cannot be read: " + ec.message());
  const std::uint64_t available = offset <= size ? size - offset : 0;
  const std::uint64_t count = length < 0 ? available : static_cast<std::uint64_t>(length);
  if (offset > size || count > available) {
    fail(source, "external data file " + path.string() + " holds " + std::to_string(size) +
                     " bytes; the model asks for " + std::to_string(count) + " at offset " +
                     std::to_string(offset));
  }
  std::vector<std::byte> bytes(count);
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(count));  // NOLINT
  if (!in) fail(source, "reading external data file " + path.string() + " failed");
  return bytes;
}

template <class Field>
void copy_elements(const Field& field, std::vector<std::byte>& out, std::size_t element_size) {
  // Typed fields hold wider types for narrow dtypes (int32_data carries
  // float16 bits and bools): narrow each element.
  out.resize(static_cast<std::size_t>(field.size()) * element_size);
  for (int i = 0; i < field.size(); ++i) {
    const auto value = field.Get(i);
    std::memcpy(out.data() + static_cast<std::size_t>(i) * element_size, &value,
                std::min(element_size, sizeof(value)));
  }
}

tensor tensor_from_onnx(const onnx::TensorProto& proto, const std::filesystem::path& base_dir,
                        const std::string& source) {
  const std::string where = "tensor '" + proto.name() + "'";
  const dtype type = dtype_from_onnx(proto.data_type(), source, where);
  shape_t shape(proto.dims().begin(), proto.dims().end());
  std::int64_t count = 0;
  try {
    count = element_count(shape);
  } catch (const invalid_argument& e) {
    fail(source, where + ": " + e.what());
  }
  const std::size_t element = size_of(type);
  std::vector<std::byte> bytes;
  if (proto.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    std::string location;
    std::uint64_t offset = 0;
    std::int64_t length = -1;
    for (const auto& entry : proto.external_data()) {
      try {
        if (entry.key() == "location") location = entry.value();
        if (entry.key() == "offset") offset = std::stoull(entry.value());
        if (entry.key() == "length") length = std::stoll(entry.value());
      } catch (const std::exception&) {
        fail(source, where + ": external data entry '" + entry.key() + "' is not a number");
      }
    }
    if (location.empty()) fail(source, where + " is external but names no location");
    // ONNX's external-data rule: the location is relative to the model's
    // folder and never climbs out of it. Without this check a model could make
    // the loader read any file on the machine (an absolute path, "../..").
    const std::filesystem::path relative(location);
    const bool climbs = std::any_of(relative.begin(), relative.end(),
                                    [](const std::filesystem::path& part) { return part == ".."; });
    if (relative.has_root_path() || climbs) {
      fail(source, where + ": external data location '" + location +
                       "' must be a path inside the model's folder (no root, no '..')");
    }
    const auto file = (base_dir / relative).lexically_normal();
    bytes = read_file_bytes(file, offset, length, source);
  } else if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    // An empty tensor has no data pointer to copy into (memcpy of null is UB).
    bytes.resize(raw.size());
    if (!raw.empty()) std::memcpy(bytes.data(), raw.data(), raw.size());
  } else {
    switch (type) {
      case dtype::float32: copy_elements(proto.float_data(), bytes, element); break;
      case dtype::int64: copy_elements(proto.int64_data(), bytes, element); break;
      case dtype::int32:
      case dtype::float16:
      case dtype::bfloat16:
      case dtype::boolean: copy_elements(proto.int32_data(), bytes, element); break;
    }
  }
  if (bytes.size() != static_cast<std::uint64_t>(count) * element) {
    fail(source, where + " of shape " + to_string(shape) + " needs " +
                     std::to_string(static_cast<std::uint64_t>(count) * element) + " bytes of " +
                     std::string(to_string(type)) + ", the file gives " +
                     std::to_string(bytes.size()));
  }
  return {type, std::move(shape), std::move(bytes)};
}

attribute attribute_from_onnx(const onnx::AttributeProto& a, const node& n,
                              const std::filesystem::path& base_dir, const std::string& source) {
  switch (a.type()) {
    case onnx::AttributeProto_AttributeType_FLOAT: return a.f();
    case onnx::AttributeProto_AttributeType_INT: return static_cast<std::int64_t>(a.i());
    case onnx::AttributeProto_AttributeType_STRING: return a.s();
    case onnx::AttributeProto_AttributeType_TENSOR:
      return tensor_from_onnx(a.t(), base_dir, source);
    case onnx::AttributeProto_AttributeType_FLOATS:
      return std::vector<float>(a.floats().begin(), a.floats().end());
    case onnx::AttributeProto_AttributeType_INTS:
      return std::vector<std::int64_t>(a.ints().begin(), a.ints().end());
    case onnx::AttributeProto_AttributeType_STRINGS:
      return std::vector<std::string>(a.strings().begin(), a.strings().end());
    default:
      fail(source, n.describe() + ": attribute '" + a.name() +
                       "' has a type coolbench does not support (" +
                       std::to_string(static_cast<int>(a.type())) + ")");
  }
}

value_info value_from_onnx(const onnx::ValueInfoProto& v, const std::string& source) {
  value_info info;
  info.name = v.name();
  if (!v.type().has_tensor_type()) fail(source, "graph value '" + v.name() + "' is not a tensor");
  const auto& t = v.type().tensor_type();
  info.type = dtype_from_onnx(t.elem_type(), source, "graph value '" + v.name() + "'");
  info.has_shape = t.has_shape();
  for (const auto& d : t.shape().dim()) {
    dimension dim;
    if (d.has_dim_value()) dim.value = d.dim_value();
    if (d.has_dim_param()) dim.symbol = d.dim_param();
    info.shape.push_back(dim);
  }
  return info;
}

/// Orders nodes so that each comes after the producers of its inputs; fails
/// on a value nothing provides and on cycles.
std::vector<node> topological_order(std::vector<node> nodes, const std::set<std::string>& available,
                                    const std::string& source) {
  std::map<std::string, std::size_t> producer;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& out : nodes[i].outputs) {
      if (out.empty()) continue;
      if (available.contains(out) || !producer.emplace(out, i).second) {
        fail(source, nodes[i].describe() + " writes '" + out + "', which is already defined");
      }
    }
  }
  std::vector<std::size_t> waiting(nodes.size(), 0);
  std::vector<std::vector<std::size_t>> consumers(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& in : nodes[i].inputs) {
      if (in.empty() || available.contains(in)) continue;
      const auto it = producer.find(in);
      if (it == producer.end()) {
        fail(source, nodes[i].describe() + " reads '" + in +
                         "', which no node, initializer or graph input provides");
      }
      ++waiting[i];
      consumers[it->second].push_back(i);
    }
  }
  std::queue<std::size_t> ready;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (waiting[i] == 0) ready.push(i);
  }
  std::vector<node> ordered;
  ordered.reserve(nodes.size());
  while (!ready.empty()) {
    const std::size_t i = ready.front();
    ready.pop();
    for (const std::size_t c : consumers[i]) {
      if (--waiting[c] == 0) ready.push(c);
    }
    ordered.push_back(std::move(nodes[i]));
  }
  if (ordered.size() != nodes.size()) {
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (waiting[i] > 0) fail(source, "the graph has a cycle through " + nodes[i].describe());
    }
  }
  return ordered;
}

}  // namespace

graph parse_onnx(std::span<const std::byte> bytes, const std::filesystem::path& base_dir,
                 const std::string& source) {
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    fail(source, "larger than 2 GiB: store the weights as external data");
  }
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    fail(source, "not a valid ONNX model (the protobuf is corrupt or truncated)");
  }
  if (!model.has_graph()) fail(source, "the model has no graph");
  graph g;
  g.name = model.graph().name();
  for (const auto& opset : model.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") g.opset = opset.version();
  }
  if (g.opset == 0) fail(source, "the model imports no opset of the default ONNX domain");

  std::set<std::string> available;
  for (const auto& init : model.graph().initializer()) {
    g.initializers.insert_or_assign(init.name(), tensor_from_onnx(init, base_dir, source));
    available.insert(init.name());
  }
  for (const auto& input : model.graph().input()) {
    if (g.initializers.contains(input.name())) continue;  // older exporters list weights as inputs
    g.inputs.push_back(value_from_onnx(input, source));
    available.insert(input.name());
  }
  for (const auto& output : model.graph().output())
    g.outputs.push_back(value_from_onnx(output, source));

  std::vector<node> nodes;
  nodes.reserve(static_cast<std::size_t>(model.graph().node_size()));
  for (const auto& proto : model.graph().node()) {
    node n;
    n.name = proto.name();
    n.op_type = proto.op_type();
    n.domain = proto.domain() == "ai.onnx" ? "" : proto.domain();
    n.inputs.assign(proto.input().begin(), proto.input().end());
    n.outputs.assign(proto.output().begin(), proto.output().end());
    for (const auto& a : proto.attribute())
      n.attributes.emplace(a.name(), attribute_from_onnx(a, n, base_dir, source));
    nodes.push_back(std::move(n));
  }
  g.nodes = topological_order(std::move(nodes), available, source);
  std::set<std::string> produced = available;
  for (const auto& n : g.nodes) produced.insert(n.outputs.begin(), n.outputs.end());
  for (const auto& output : g.outputs) {
    if (!produced.contains(output.name))
      fail(source, "graph output '" + output.name + "' is never computed");
  }
  return g;
}

graph load_onnx(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw model_error(path.string() + ": cannot be read: " + ec.message());
  std::vector<std::byte> bytes(size);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));  // NOLINT
  if (!in) throw model_error(path.string() + ": reading it failed");
  return parse_onnx(bytes, path.parent_path(), path.string());
}

std::vector<std::byte> make_add_model() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("coolbench");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(13);
  auto* g = model.mutable_graph();
  g->set_name("add");
  const auto declare = [](onnx::ValueInfoProto* v, const char* name) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto_DataType_FLOAT);
    for (const int d : {1, 2, 3, 3}) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  declare(g->add_input(), "A");
  declare(g->add_input(), "B");
  declare(g->add_output(), "C");
  auto* add = g->add_node();
  add->set_name("add");
  add->set_op_type("Add");
  add->add_input("A");
  add->add_input("B");
  add->add_output("C");
  const std::string text = model.SerializeAsString();
  std::vector<std::byte> bytes(text.size());
  std::memcpy(bytes.data(), text.data(), text.size());
  return bytes;
}

void write_model(const std::filesystem::path& path, std::span<const std::byte> bytes) {
  const auto temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));  // NOLINT
    if (!out) throw invalid_argument("cannot write " + temporary);
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) throw invalid_argument("cannot write " + path.string() + ": " + ec.message());
}

}  // namespace coolbench::engine
