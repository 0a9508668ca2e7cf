#include "cli/device_list.hpp"

#include <charconv>
#include <set>

#include "coolbench/core/error.hpp"

namespace coolbench::cli {
namespace {

/// The comma-separated ordinals of `value`; empty with what is wrong in `why`.
std::vector<int> parse_list(const std::string& value, std::string& why) {
  std::vector<int> out;
  std::set<int> seen;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = value.find(',', start);
    const std::string item = value.substr(start, end == std::string::npos ? end : end - start);
    int ordinal = -1;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), ordinal);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || ordinal < 0) {
      why = "'" + item + "' in '" + value + "' is not a CUDA ordinal";
      return {};
    }
    if (!seen.insert(ordinal).second) {
      why = "GPU " + item + " is listed twice in '" + value + "'";
      return {};
    }
    out.push_back(ordinal);
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

}  // namespace

std::string check_run_device(const std::string& value) {
  if (value == "cpu" || value == "all") return {};
  std::string why;
  if (parse_list(value, why).empty()) {
    return "must be cpu or a CUDA ordinal (0, 1, ...), or several GPUs: all, or distinct "
           "ordinals N,M,... (" +
           why + ")";
  }
  return {};
}

bool names_several_gpus(const std::string& value) {
  return value == "all" || value.find(',') != std::string::npos;
}

std::vector<int> resolve_gpus(const std::string& value, int count) {
  if (count <= 0) {
    throw not_available("no NVIDIA GPU or driver found: --device " + value +
                        " needs the CUDA runtime to see GPUs");
  }
  std::vector<int> out;
  if (value == "all") {
    for (int i = 0; i < count; ++i) out.push_back(i);
    return out;
  }
  std::string why;
  out = parse_list(value, why);
  if (out.empty()) throw invalid_argument(why);
  for (int ordinal : out) {
    if (ordinal >= count) {
      throw invalid_argument("no GPU with CUDA ordinal " + std::to_string(ordinal) +
                             ": CUDA sees " + std::to_string(count) + " GPU(s)");
    }
  }
  return out;
}

}  // namespace coolbench::cli
