#include "engine/fusion/elementwise_program.hpp"

#include <map>

namespace coolbench::engine {

std::optional<ew_op> ew_op_of(const node& n, int& arity) {
  if (!n.domain.empty()) return std::nullopt;
  static const std::map<std::string, std::pair<ew_op, int>> ops = {
      {"Add", {ew_op::add, 2}},
      {"Sub", {ew_op::sub, 2}},
      {"Mul", {ew_op::mul, 2}},
      {"Div", {ew_op::div, 2}},
      {"Pow", {ew_op::pow, 2}},
      {"Min", {ew_op::min, 2}},
      {"Max", {ew_op::max, 2}},
      {"Neg", {ew_op::neg, 1}},
      {"Abs", {ew_op::abs, 1}},
      {"Sqrt", {ew_op::sqrt, 1}},
      {"Exp", {ew_op::exp, 1}},
      {"Log", {ew_op::log, 1}},
      {"Tanh", {ew_op::tanh, 1}},
      {"Erf", {ew_op::erf, 1}},
      {"Sigmoid", {ew_op::sigmoid, 1}},
      {"Relu", {ew_op::relu, 1}},
      {"Reciprocal", {ew_op::reciprocal, 1}},
      {"Not", {ew_op::logical_not, 1}},
      {"Equal", {ew_op::equal, 2}},
      {"Less", {ew_op::less, 2}},
      {"Greater", {ew_op::greater, 2}},
      {"LessOrEqual", {ew_op::less_equal, 2}},
      {"GreaterOrEqual", {ew_op::greater_equal, 2}},
      {"Where", {ew_op::where, 3}},
      {"Cast", {ew_op::copy, 1}},
      {"Identity", {ew_op::copy, 1}},
  };
  if (n.op_type == "Gelu") {
    arity = 1;
    const std::string approximate = n.get<std::string>("approximate", "none");
    if (approximate == "none") return ew_op::gelu_erf;
    if (approximate == "tanh") return ew_op::gelu_tanh;
    return std::nullopt;
  }
  const auto it = ops.find(n.op_type);
  if (it == ops.end()) return std::nullopt;
  arity = it->second.second;
  return it->second.first;
}

ew_round ew_round_for(dtype type) {
  switch (type) {
    case dtype::float16: return ew_round::half;
    case dtype::bfloat16: return ew_round::bfloat16;
    case dtype::boolean: return ew_round::boolean;
    case dtype::int32:
    case dtype::int64: return ew_round::integer;
    case dtype::float32: return ew_round::none;
  }
  return ew_round::none;
}

void ew_to_attributes(const ew_program& program, node& n) {
  std::vector<std::int64_t> code;
  for (const auto& i : program.code) {
    code.insert(code.end(), {static_cast<std::int64_t>(i.op), i.dst, i.a, i.b, i.c,
                             static_cast<std::int64_t>(i.round)});
  }
  n.attributes["program"] = std::move(code);
  n.attributes["constants"] = program.constants;
}

ew_program ew_from_attributes(const node& n) {
  const auto& code = n.get<std::vector<std::int64_t>>("program");
  ew_program program;
  program.constants = n.get<std::vector<float>>("constants", {});
  program.inputs = static_cast<int>(n.inputs.size());
  const auto bad = [&](const std::string& what) {
    return invalid_argument(n.describe() + ": malformed elementwise program: " + what);
  };
  if (code.empty() || code.size() % 6 != 0 ||
      code.size() / 6 > static_cast<std::size_t>(k_ew_max_instructions)) {
    throw bad("expected 1 to " + std::to_string(k_ew_max_instructions) +
              " instructions of 6 integers");
  }
  if (program.constants.size() > static_cast<std::size_t>(k_ew_max_constants) ||
      program.inputs > k_ew_max_inputs) {
    throw bad("too many constants or inputs");
  }
  for (std::size_t k = 0; k < code.size(); k += 6) {
    ew_instruction i;
    if (code[k] < 0 || code[k] >= static_cast<std::int64_t>(ew_op::count_)) throw bad("unknown op");
    i.op = static_cast<ew_op>(code[k]);
    for (std::size_t r = 1; r < 5; ++r) {
      if (code[k + r] < 0 || code[k + r] >= k_ew_max_registers) throw bad("register out of range");
    }
    i.dst = static_cast<std::uint8_t>(code[k + 1]);
    i.a = static_cast<std::uint8_t>(code[k + 2]);
    i.b = static_cast<std::uint8_t>(code[k + 3]);
    i.c = static_cast<std::uint8_t>(code[k + 4]);
    if (code[k + 5] < 0 || code[k + 5] > static_cast<std::int64_t>(ew_round::integer)) {
      throw bad("unknown rounding");
    }
    i.round = static_cast<ew_round>(code[k + 5]);
    if (i.op == ew_op::load && i.a >= program.inputs) throw bad("load of a missing input");
    if (i.op == ew_op::constant && i.a >= program.constants.size()) throw bad("missing constant");
    program.code.push_back(i);
  }
  return program;
}

float ew_evaluate(const ew_program& program, const std::vector<float>& inputs) {
  float reg[k_ew_max_registers] = {};
  for (const auto& i : program.code) {
    float v = 0;
    if (i.op == ew_op::load) {
      v = inputs.at(i.a);
    } else if (i.op == ew_op::constant) {
      v = program.constants.at(i.a);
    } else {
      v = ew_apply(i.op, reg[i.a], reg[i.b], reg[i.c]);
    }
    switch (i.round) {
      case ew_round::half: v = half_to_float(float_to_half(v)); break;
      case ew_round::bfloat16: v = bfloat16_to_float(float_to_bfloat16(v)); break;
      case ew_round::boolean: v = v != 0.0F ? 1.0F : 0.0F; break;
      case ew_round::integer: v = std::trunc(v); break;
      case ew_round::none: break;
    }
    reg[i.dst] = v;
  }
  return program.code.empty() ? 0.0F : reg[program.code.back().dst];
}

}  // namespace coolbench::engine
