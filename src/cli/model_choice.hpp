// What `coolbench run` and `coolbench nodes` share to choose a model: the
// device (cpu or a CUDA ordinal), the bound dimensions, the built-in default.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace coolbench::cli {

/// "NAME=VALUE" strings (--dim) as a binding; throws invalid_argument naming a bad one.
[[nodiscard]] std::map<std::string, std::int64_t> parse_dims(const std::vector<std::string>& dims);

/// CLI11's check of --device for a model: "" when `value` is cpu or a CUDA ordinal.
[[nodiscard]] std::string check_model_device(const std::string& value);

/// The engine backend for --device: "cpu", "cuda:N", or (not given) "cuda:0"
/// when a GPU is seen, else "cpu" with one line saying so (unless quiet). An explicit
/// ordinal is checked here: not_available without a driver (exit 3),
/// invalid_argument for a GPU that does not exist (exit 4).
[[nodiscard]] std::string model_backend(const std::string& device, bool quiet);

#ifdef COOLBENCH_HAVE_ENGINE
/// The built-in default: GPT-2 small, written once into the user's cache;
/// float16 for a GPU, float32 for the CPU backend (its float16 kernels
/// convert each element, so fp32 is the CPU's fast case).
[[nodiscard]] std::filesystem::path default_model(bool half, bool quiet);
#endif

}  // namespace coolbench::cli
