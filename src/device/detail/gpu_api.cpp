// The foreign-state queries' defaults, and the scan of loaded libraries.
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "coolbench/core/error.hpp"
#include "device/detail/gpu_api.hpp"

namespace coolbench::device::detail {
namespace {

/// A loaded object's name, as a framework's user would know it; empty when
/// it is not one of the CUDA users looked for.
std::string cuda_user(std::string_view path) {
  const std::string_view file =
      path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1);
  if (file.starts_with("libtorch_cuda")) return "PyTorch (" + std::string(file) + ")";
  if (path.find("/cupy_backends/") != std::string_view::npos ||
      path.find("/cupy/") != std::string_view::npos)
    return "CuPy";
  if (file.starts_with("libtvm")) return "TVM (" + std::string(file) + ")";
  if (file.starts_with("libonnxruntime_providers_cuda")) return "ONNX Runtime (CUDA provider)";
  if (file.starts_with("libtensorflow")) return "TensorFlow (" + std::string(file) + ")";
  if (path.find("jaxlib") != std::string_view::npos) return "JAX";
  if (file.starts_with("libcudart.so")) return std::string(file);
  return {};
}

int collect(dl_phdr_info* info, std::size_t /*size*/, void* data) {
  auto& names = *static_cast<std::vector<std::string>*>(data);
  if (info->dlpi_name == nullptr) return 0;
  std::string name = cuda_user(info->dlpi_name);
  if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end())
    names.push_back(std::move(name));
  return 0;
}

}  // namespace

gpu_api::process_memory_reading gpu_api::process_memory(int ordinal) {
  process_memory_reading r;
  r.bytes = process_memory_bytes(ordinal);
  if (!r.bytes) r.why_not = "NVML has no per-process figure for this process here";
  return r;
}

baseline_key gpu_api::baseline_key_of(int /*ordinal*/) {
  throw not_available("this GPU interface cannot identify the GPU and driver");
}

bare_context_figures gpu_api::measure_bare_context(int /*ordinal*/, const baseline_key& /*key*/) {
  throw not_available("this GPU interface cannot measure a bare context");
}

std::vector<std::string> gpu_api::cuda_libraries() {
  std::vector<std::string> names;
  dl_iterate_phdr(collect, &names);
  return names;
}

std::string gpu_api::module_loading() {
  const char* mode = std::getenv("CUDA_MODULE_LOADING");
  return mode != nullptr && std::string_view(mode) == "EAGER" ? "EAGER" : "LAZY";
}

}  // namespace coolbench::device::detail
