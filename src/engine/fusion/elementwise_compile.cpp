// Compiling a set of elementwise nodes into an ew_program: values get
// virtual registers in node order, inputs and constants are loaded just
// before their first use, and a linear scan over the last uses maps the
// virtual registers onto the few a program has.
#include <algorithm>

#include "engine/fusion/fusion_graph.hpp"

namespace coolbench::engine::fusion_detail {
namespace {

bool float_or_bool(dtype t) { return is_float(t) || t == dtype::boolean; }

}  // namespace

bool ew_member_ok(const graph& g, const fusion_context& context, const node& n) {
  int arity = 0;
  const auto op = ew_op_of(n, arity);
  if (!op || n.inputs.size() != static_cast<std::size_t>(arity) || n.outputs.size() != 1) {
    return false;
  }
  const auto out_type = type_of(context, n.outputs[0]);
  const auto out_shape = static_shape(context, n.outputs[0]);
  if (!out_type || !float_or_bool(*out_type) || !out_shape || out_shape->size() > 8) return false;
  for (std::size_t i = 0; i < n.inputs.size(); ++i) {
    const auto t = type_of(context, n.inputs[i]);
    if (n.inputs[i].empty() || !t || !static_shape(context, n.inputs[i])) return false;
    if (*op == ew_op::copy && n.op_type == "Cast") continue;  // any dtype in
    if (*op == ew_op::where && i == 0) {
      if (*t != dtype::boolean) return false;
      continue;
    }
    if (!float_or_bool(*t)) return false;
  }
  // Pow by a value known only at run time stays a node of its own.
  if (*op == ew_op::pow && !scalar_constant(g, n.inputs[1])) return false;
  return true;
}

std::optional<ew_compiled> ew_compile(const graph& g, const fusion_context& context,
                                      const std::vector<std::size_t>& members) {
  struct virtual_instruction {
    ew_instruction code;
    int dst = 0, a = 0, b = 0, c = 0;
    int arity = 0;  // registers read
  };
  ew_compiled out;
  std::vector<virtual_instruction> list;
  std::map<std::string, int> value_register;  // values computed, loaded or constant
  int next = 0;
  const auto operand = [&](const std::string& name) {
    if (const auto it = value_register.find(name); it != value_register.end()) return it->second;
    virtual_instruction v;
    if (const auto c = scalar_constant(g, name)) {
      v.code.op = ew_op::constant;
      v.code.a = static_cast<std::uint8_t>(out.program.constants.size());
      out.program.constants.push_back(static_cast<float>(*c));
    } else {
      v.code.op = ew_op::load;
      v.code.a = static_cast<std::uint8_t>(out.inputs.size());
      out.inputs.push_back(name);
    }
    v.dst = next++;
    list.push_back(v);
    return value_register[name] = v.dst;
  };
  for (const std::size_t index : members) {
    const node& n = g.nodes[index];
    virtual_instruction v;
    v.code.op = *ew_op_of(n, v.arity);
    int* slots[] = {&v.a, &v.b, &v.c};
    for (int i = 0; i < v.arity; ++i) *slots[i] = operand(n.inputs[static_cast<std::size_t>(i)]);
    v.code.round = ew_round_for(*type_of(context, n.outputs[0]));
    v.dst = next++;
    list.push_back(v);
    value_register[n.outputs[0]] = v.dst;
  }
  if (list.size() > static_cast<std::size_t>(k_ew_max_instructions) ||
      out.inputs.size() > static_cast<std::size_t>(k_ew_max_inputs) ||
      out.program.constants.size() > static_cast<std::size_t>(k_ew_max_constants)) {
    return std::nullopt;
  }
  // Linear scan: a register is free again after its value's last read.
  std::vector<std::size_t> last_use(static_cast<std::size_t>(next), list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    int arity = list[i].arity;
    for (const int r : {list[i].a, list[i].b, list[i].c}) {
      if (arity-- > 0) last_use[static_cast<std::size_t>(r)] = i;
    }
  }
  std::vector<int> physical(static_cast<std::size_t>(next), -1);
  std::vector<bool> busy(k_ew_max_registers, false);
  for (std::size_t i = 0; i < list.size(); ++i) {
    virtual_instruction& v = list[i];
    const int reads[] = {v.a, v.b, v.c};
    std::uint8_t* fields[] = {&v.code.a, &v.code.b, &v.code.c};
    for (int k = 0; k < v.arity; ++k) {
      *fields[k] = static_cast<std::uint8_t>(physical[static_cast<std::size_t>(reads[k])]);
    }
    for (int k = 0; k < v.arity; ++k) {  // an operand's register may take the result
      const auto r = static_cast<std::size_t>(reads[k]);
      if (last_use[r] == i) busy[static_cast<std::size_t>(physical[r])] = false;
    }
    const auto free_register = std::find(busy.begin(), busy.end(), false);
    if (free_register == busy.end()) return std::nullopt;
    *free_register = true;
    physical[static_cast<std::size_t>(v.dst)] = static_cast<int>(free_register - busy.begin());
    v.code.dst = static_cast<std::uint8_t>(physical[static_cast<std::size_t>(v.dst)]);
    out.program.code.push_back(v.code);
  }
  out.program.inputs = static_cast<int>(out.inputs.size());
  return out;
}

}  // namespace coolbench::engine::fusion_detail
