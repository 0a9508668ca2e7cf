// make_backend: the backends by name ("cpu", "cuda", "cuda:N").
#include "engine/backends/registry.hpp"

#include <charconv>
#include <optional>
#include <string>

#include "coolbench/core/error.hpp"

namespace coolbench::engine {
namespace {

#if COOLBENCH_ENGINE_CUDA
constexpr const char* k_names = "cpu, cuda (GPU 0) and cuda:N";
#else
constexpr const char* k_names = "cpu (this build has no CUDA backend)";
#endif

// "cuda" → 0, "cuda:3" → 3; nullopt for anything else.
std::optional<int> cuda_ordinal(std::string_view name) {
  constexpr std::string_view prefix = "cuda";
  if (!name.starts_with(prefix)) return std::nullopt;
  name.remove_prefix(prefix.size());
  if (name.empty()) return 0;
  if (name.front() != ':' || name.size() == 1) return std::nullopt;
  name.remove_prefix(1);
  int ordinal = -1;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), ordinal);
  if (ec != std::errc{} || end != name.data() + name.size() || ordinal < 0) return std::nullopt;
  return ordinal;
}

bool names_output(const node& n, std::size_t from) {
  for (std::size_t i = from; i < n.outputs.size(); ++i) {
    if (!n.outputs[i].empty()) return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> unsupported_form(const node& n) {
  if (!n.domain.empty()) return std::nullopt;
  if (n.op_type == "MaxPool" && names_output(n, 1)) {
    return "the Indices output (each window's argmax) is not computed; export without it";
  }
  if (n.op_type == "BatchNormalization") {
    if (n.get<std::int64_t>("training_mode", 0) != 0 || names_output(n, 1)) {
      return "training_mode and the running-statistics outputs are not computed (the engine "
             "runs inference only); export the model in eval mode";
    }
    if (n.get<std::int64_t>("spatial", 1) == 0) {
      return "spatial 0 (per-element statistics, opset < 9) is not supported";
    }
  }
  return std::nullopt;
}

std::unique_ptr<backend> make_backend(std::string_view name) {
  if (name == "cpu") return make_cpu_backend();
  if (const auto ordinal = cuda_ordinal(name)) {
#if COOLBENCH_ENGINE_CUDA
    return make_cuda_backend(*ordinal);
#else
    throw not_available("backend '" + std::string(name) +
                        "': this build of coolbench has no CUDA backend (configure with a CUDA "
                        "compiler and COOLBENCH_CUDA=ON)");
#endif
  }
  throw invalid_argument("unknown backend '" + std::string(name) + "': coolbench has " + k_names);
}

}  // namespace coolbench::engine
