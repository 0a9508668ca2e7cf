// gemm:DTYPE:M:N:K[:COUNT]: parsing, checking and writing the GEMM chain spec.
#include <charconv>
#include <string>
#include <string_view>
#include <vector>

#include "coolbench/measure/workload.hpp"

namespace coolbench::measure {
namespace {

constexpr std::string_view form = "gemm:DTYPE:M:N:K[:COUNT]";
constexpr std::string_view example = "gemm:fp16:128:2304:768:4";

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
  const auto parts = split(text, ':');
  if (parts.front() != "gemm") fail(text, "not a GEMM chain: it must start with 'gemm:'");
  if (parts.size() != 5 && parts.size() != 6) {
    fail(text, "has " + std::to_string(parts.size() - 1) +
                   " parts after 'gemm', not 4 (DTYPE:M:N:K) or 5 (DTYPE:M:N:K:COUNT)");
  }
  gemm_chain_spec spec;
  const std::string_view dtype = parts[1];
  if (dtype == "fp16") {
    spec.dtype = gemm_dtype::fp16;
  } else if (dtype == "bf16") {
    spec.dtype = gemm_dtype::bf16;
  } else if (dtype == "fp32") {
    spec.dtype = gemm_dtype::fp32;
  } else {
    fail(text, "DTYPE '" + std::string(dtype) + "' is not fp16, bf16 or fp32");
  }
  spec.m = parse_number(text, parts[2], "M", gemm_max_dimension);
  spec.n = parse_number(text, parts[3], "N", gemm_max_dimension);
  spec.k = parse_number(text, parts[4], "K", gemm_max_dimension);
  if (parts.size() == 6) {
    spec.count = static_cast<int>(parse_number(text, parts[5], "COUNT", gemm_max_count));
  }
  return spec;
}

std::string to_string(const gemm_chain_spec& spec) {
  return "gemm:" + std::string(to_string(spec.dtype)) + ":" + std::to_string(spec.m) + ":" +
         std::to_string(spec.n) + ":" + std::to_string(spec.k) + ":" + std::to_string(spec.count);
}

void validate(const gemm_chain_spec& spec) {
  const auto check = [&](std::int64_t value, std::string_view name, std::int64_t max) {
    if (value < 1 || value > max) {
      throw invalid_argument("GEMM chain: " + std::string(name) + " is " + std::to_string(value) +
                             ", not in 1.." + std::to_string(max));
    }
  };
  check(spec.m, "M", gemm_max_dimension);
  check(spec.n, "N", gemm_max_dimension);
  check(spec.k, "K", gemm_max_dimension);
  check(spec.count, "COUNT", gemm_max_count);
  if (spec.dtype != gemm_dtype::fp16 && spec.dtype != gemm_dtype::bf16 &&
      spec.dtype != gemm_dtype::fp32) {
    throw invalid_argument("GEMM chain: the dtype is not fp16, bf16 or fp32");
  }
}

}  // namespace coolbench::measure
