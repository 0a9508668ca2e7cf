// gemm:DTYPE:M:N:K[:COUNT][,M:N:K[:COUNT]...][@ROUNDS]: parsing, checking and
// writing the GEMM chain spec.
#include <charconv>
#include <string>
#include <string_view>
#include <vector>

#include "coolbench/measure/workload.hpp"

namespace coolbench::measure {
namespace {

constexpr std::string_view form = "gemm:DTYPE:M:N:K[:COUNT][,M:N:K[:COUNT]...][@ROUNDS]";
constexpr std::string_view example = "gemm:fp16:128:2304:768:4 or gemm:fp16:gpt2-small";

// GPT-2 small at sequence 128, per layer: the QKV projection, the attention
// output projection, the MLP's two GEMMs; 12 layers.
const std::vector<gemm_shape>& gpt2_small_shapes() {
  static const std::vector<gemm_shape> shapes = {
      {.m = 128, .n = 2304, .k = 768, .count = 1},
      {.m = 128, .n = 768, .k = 768, .count = 1},
      {.m = 128, .n = 3072, .k = 768, .count = 1},
      {.m = 128, .n = 768, .k = 3072, .count = 1},
  };
  return shapes;
}
constexpr int gpt2_small_layers = 12;

[[noreturn]] void fail(std::string_view text, const std::string& what) {
  throw invalid_argument("'" + std::string(text) + "': " + what + " (the form is " +
                         std::string(form) + ", e.g. " + std::string(example) + ")");
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = text.find(separator, begin);
    parts.push_back(text.substr(begin, end == std::string_view::npos ? end : end - begin));
    if (end == std::string_view::npos) return parts;
    begin = end + 1;
  }
}

std::int64_t parse_number(std::string_view text, std::string_view part, std::string_view name,
                          std::int64_t max) {
  std::int64_t value = 0;
  const auto* first = part.data();
  const auto* last = part.data() + part.size();
  const auto [end, ec] = std::from_chars(first, last, value);
  if (part.empty() || ec == std::errc::invalid_argument || end != last) {
    fail(text, std::string(name) + " '" + std::string(part) + "' is not a whole number");
  }
  if (ec == std::errc::result_out_of_range || value < 1 || value > max) {
    fail(text,
         std::string(name) + " is " + std::string(part) + ", not in 1.." + std::to_string(max));
  }
  return value;
}

}  // namespace

std::string_view to_string(gemm_dtype dtype) noexcept {
  switch (dtype) {
    case gemm_dtype::fp16: return "fp16";
    case gemm_dtype::bf16: return "bf16";
    case gemm_dtype::fp32: return "fp32";
  }
  return "?";
}

gemm_chain_spec parse_gemm_chain(std::string_view text) {
  if (!text.starts_with("gemm:")) fail(text, "not a GEMM chain: it must start with 'gemm:'");
  std::string_view rest = text.substr(5);
  const std::size_t colon = rest.find(':');
  const std::string_view dtype = rest.substr(0, colon);
  gemm_chain_spec spec;
  if (dtype == "fp16") {
    spec.dtype = gemm_dtype::fp16;
  } else if (dtype == "bf16") {
    spec.dtype = gemm_dtype::bf16;
  } else if (dtype == "fp32") {
    spec.dtype = gemm_dtype::fp32;
  } else {
    fail(text, "DTYPE '" + std::string(dtype) + "' is not fp16, bf16 or fp32");
  }
  if (colon == std::string_view::npos) fail(text, "has no shape after the DTYPE");
  rest = rest.substr(colon + 1);
  if (rest == "gpt2-small") {
    spec.shapes = gpt2_small_shapes();
    spec.rounds = gpt2_small_layers;
    return spec;
  }
  if (rest.find("gpt2-small") != std::string_view::npos) {
    fail(text, "gpt2-small stands alone: no other shape and no @ROUNDS with it");
  }
  const std::size_t at = rest.find('@');
  if (at != std::string_view::npos) {
    spec.rounds =
        static_cast<int>(parse_number(text, rest.substr(at + 1), "ROUNDS", gemm_max_count));
    rest = rest.substr(0, at);
  }
  const auto shapes = split(rest, ',');
  if (shapes.size() > gemm_max_shapes) {
    fail(text, "has " + std::to_string(shapes.size()) + " shapes, more than " +
                   std::to_string(gemm_max_shapes));
  }
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const auto parts = split(shapes[i], ':');
    const std::string where = shapes.size() > 1 ? " of shape " + std::to_string(i + 1) : "";
    if (parts.size() == 1 && !shapes[i].empty() &&
        shapes[i].find_first_not_of("0123456789") != std::string_view::npos) {
      fail(text, "'" + std::string(shapes[i]) + "' is neither a shape M:N:K nor gpt2-small");
    }
    if (parts.size() != 3 && parts.size() != 4) {
      fail(text, "shape " + std::to_string(i + 1) + " '" + std::string(shapes[i]) + "' has " +
                     std::to_string(parts.size()) + " parts, not 3 (M:N:K) or 4 (M:N:K:COUNT)");
    }
    gemm_shape shape;
    shape.m = parse_number(text, parts[0], "M" + where, gemm_max_dimension);
    shape.n = parse_number(text, parts[1], "N" + where, gemm_max_dimension);
    shape.k = parse_number(text, parts[2], "K" + where, gemm_max_dimension);
    if (parts.size() == 4) {
      shape.count = static_cast<int>(parse_number(text, parts[3], "COUNT" + where, gemm_max_count));
    }
    spec.shapes.push_back(shape);
  }
  if (gemm_count(spec) > gemm_max_total) {
    fail(text, "runs " + std::to_string(gemm_count(spec)) + " GEMMs, more than " +
                   std::to_string(gemm_max_total));
  }
  return spec;
}

std::string to_string(const gemm_chain_spec& spec) {
  std::string text = "gemm:" + std::string(to_string(spec.dtype)) + ":";
  for (std::size_t i = 0; i < spec.shapes.size(); ++i) {
    const gemm_shape& s = spec.shapes[i];
    if (i > 0) text += ",";
    text += std::to_string(s.m) + ":" + std::to_string(s.n) + ":" + std::to_string(s.k) + ":" +
            std::to_string(s.count);
  }
  if (spec.rounds != 1) text += "@" + std::to_string(spec.rounds);
  return text;
}

std::int64_t gemm_count(const gemm_chain_spec& spec) noexcept {
  std::int64_t per_round = 0;
  for (const gemm_shape& s : spec.shapes) per_round += s.count;
  return per_round * spec.rounds;
}

double gemm_flops(const gemm_chain_spec& spec) noexcept {
  double per_round = 0;
  for (const gemm_shape& s : spec.shapes) {
    per_round += 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) *
                 static_cast<double>(s.k) * s.count;
  }
  return per_round * spec.rounds;
}

void validate(const gemm_chain_spec& spec) {
  const auto check = [&](std::int64_t value, const std::string& name, std::int64_t max) {
    if (value < 1 || value > max) {
      throw invalid_argument("GEMM chain: " + name + " is " + std::to_string(value) +
                             ", not in 1.." + std::to_string(max));
    }
  };
  if (spec.shapes.empty()) throw invalid_argument("GEMM chain: it has no shape");
  if (spec.shapes.size() > gemm_max_shapes) {
    throw invalid_argument("GEMM chain: " + std::to_string(spec.shapes.size()) +
                           " shapes, more than " + std::to_string(gemm_max_shapes));
  }
  for (std::size_t i = 0; i < spec.shapes.size(); ++i) {
    const gemm_shape& s = spec.shapes[i];
    const std::string where = spec.shapes.size() > 1 ? " of shape " + std::to_string(i + 1) : "";
    check(s.m, "M" + where, gemm_max_dimension);
    check(s.n, "N" + where, gemm_max_dimension);
    check(s.k, "K" + where, gemm_max_dimension);
    check(s.count, "COUNT" + where, gemm_max_count);
  }
  check(spec.rounds, "ROUNDS", gemm_max_count);
  check(gemm_count(spec), "the GEMM count", gemm_max_total);
  if (spec.dtype != gemm_dtype::fp16 && spec.dtype != gemm_dtype::bf16 &&
      spec.dtype != gemm_dtype::fp32) {
    throw invalid_argument("GEMM chain: the dtype is not fp16, bf16 or fp32");
  }
}

}  // namespace coolbench::measure
