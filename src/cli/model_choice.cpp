// Choosing a model to run: device, dimensions, the built-in default.
#include "cli/model_choice.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <system_error>

#include "coolbench/core/error.hpp"
#include "coolbench/device/device.hpp"
#ifdef COOLBENCH_HAVE_ENGINE
#include "coolbench/engine/model.hpp"
#endif

namespace coolbench::cli {

std::string check_model_device(const std::string& value) {
  if (value == "cpu") return {};
  if (!value.empty() && value.size() <= 4 &&
      value.find_first_not_of("0123456789") == std::string::npos) {
    return {};
  }
  return "must be cpu or a CUDA ordinal (0, 1, ...), got '" + value + "'";
}

std::map<std::string, std::int64_t> parse_dims(const std::vector<std::string>& dims) {
  std::map<std::string, std::int64_t> out;
  for (const auto& d : dims) {
    const auto eq = d.find('=');
    char* end = nullptr;
    const long long value =
        eq == std::string::npos ? 0 : std::strtoll(d.c_str() + eq + 1, &end, 10);
    if (eq == std::string::npos || eq == 0 || end == nullptr || *end != '\0' || value < 1) {
      throw invalid_argument(
          "--dim takes NAME=VALUE with VALUE >= 1, e.g. --dim sequence=128; got '" + d + "'");
    }
    out[d.substr(0, eq)] = value;
  }
  return out;
}

#ifdef COOLBENCH_HAVE_ENGINE
std::filesystem::path default_model(bool half, bool quiet) {
  const char* cache = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::filesystem::path folder =
      cache != nullptr && *cache != '\0'
          ? std::filesystem::path(cache) / "coolbench"
          : std::filesystem::path(home != nullptr ? home : ".") / ".cache" / "coolbench";
  const auto path = folder / (half ? "gpt2-small-fp16-seed1.onnx" : "gpt2-small-seed1.onnx");
  if (!std::filesystem::exists(path)) {
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    if (!quiet) fmt::print("writing GPT-2 small (124M parameters) to {} ...\n", path.string());
    engine::gpt2_config config;
    if (half) config.element_type = engine::dtype::float16;
    engine::write_gpt2_model(config, path);
  }
  return path;
}

#endif

std::string model_backend(const std::string& device, bool quiet) {
  if (device == "cpu") return "cpu";
  if (device.empty()) {
    if (device::device::count() > 0) return "cuda:0";
    // Not an error, so on stdout; the summary names the backend as well.
    if (!quiet) {
      fmt::print(
          "no NVIDIA GPU or driver found: running the model on the CPU (choose with --device "
          "cpu or --device N)\n");
    }
    return "cpu";
  }
  const int ordinal = std::stoi(device);
  (void)device::device::get(ordinal);
  return "cuda:" + device;
}

}  // namespace coolbench::cli
