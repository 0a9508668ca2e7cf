// A test double of the CUDA driver library (libcuda.so.1): exports the few driver functions
// coolbench calls, with scripted answers (COOLBENCH_CUDA_LIBRARY=<this library>).
//
// The script is read from the environment at every cuInit:
//   FAKE_CUDA_INIT_RESULT  what cuInit returns (default 0; 100 = CUDA_ERROR_NO_DEVICE)
//   FAKE_CUDA_DEVICES      the fake NVML's GPU indices in CUDA ordinal order, comma-separated
//                          (default "0,1"; "1,0" makes ordinal 0 the GPU on bus 01; "" none)
// CUDA device ordinal k is the NVML GPU FAKE_CUDA_DEVICES[k], and its PCI bus id is that GPU's in
// CUDA's form, "0000:0i:00.0" (fake::cuda_bus_id). Before a successful cuInit every other call
// returns CUDA_ERROR_NOT_INITIALIZED (3). A malformed script aborts with a message on stderr.

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "telemetry/fake/fake_values.hpp"

namespace {

namespace fake = coolbench::fake;

using cu_result = int;  // CUresult
using cu_device = int;  // CUdevice
constexpr cu_result cuda_success = 0;
constexpr cu_result cuda_error_invalid_value = 1;
constexpr cu_result cuda_error_not_initialized = 3;
constexpr cu_result cuda_error_no_device = 100;
constexpr cu_result cuda_error_invalid_device = 101;
constexpr cu_result cuda_error_unknown = 999;

struct error_text {
  cu_result code;
  const char* name;
  const char* text;  // CUDA's own wording
};
constexpr std::array error_texts{
    error_text{cuda_success, "CUDA_SUCCESS", "no error"},
    error_text{cuda_error_invalid_value, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    error_text{cuda_error_not_initialized, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    error_text{cuda_error_no_device, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    error_text{cuda_error_invalid_device, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    error_text{cuda_error_unknown, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const error_text* find_error(cu_result code) {
  for (const error_text& e : error_texts) {
    if (e.code == code) return &e;
  }
  return nullptr;
}

[[noreturn]] void bad_script(const char* variable, std::string_view value) {
  std::fprintf(stderr, "fake_cuda: cannot read %s=\"%.*s\"\n", variable,
               static_cast<int>(value.size()), value.data());
  std::abort();
}

template <class T>
bool parse_number(std::string_view text, T* value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return !text.empty() && error == std::errc() && end == text.data() + text.size();
}

// Serialises cuInit against the other calls; the driver is thread-safe and so is this double.
std::mutex g_mutex;               // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
bool g_initialized = false;       // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
std::vector<unsigned> g_devices;  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)

cu_result read_script() {
  cu_result result = cuda_success;
  if (const char* text = std::getenv(fake::env_cuda_init_result); text != nullptr && *text != 0) {
    if (!parse_number(text, &result)) bad_script(fake::env_cuda_init_result, text);
  }
  const char* env_devices = std::getenv(fake::env_cuda_devices);
  const std::string_view devices =
      env_devices != nullptr ? env_devices : fake::default_cuda_devices;
  g_devices.clear();
  for (std::size_t start = 0; start < devices.size();) {
    const std::size_t end = std::min(devices.find(',', start), devices.size());
    unsigned gpu = 0;
    if (!parse_number(devices.substr(start, end - start), &gpu) || gpu > 0xFF) {
      bad_script(fake::env_cuda_devices, devices);
    }
    g_devices.push_back(gpu);
    start = end + 1;
  }
  return result;
}

}  // namespace

// NOLINTBEGIN(readability-identifier-naming): the CUDA driver's names

#pragma GCC visibility push(default)
extern "C" {

cu_result cuInit(unsigned flags) {
  std::lock_guard lock(g_mutex);
  if (flags != 0) return cuda_error_invalid_value;
  const cu_result result = read_script();
  g_initialized = result == cuda_success;
  return result;
}

cu_result cuDeviceGetCount(int* count) {
  std::lock_guard lock(g_mutex);
  if (!g_initialized) return cuda_error_not_initialized;
  if (count == nullptr) return cuda_error_invalid_value;
  *count = static_cast<int>(g_devices.size());
  return cuda_success;
}

cu_result cuDeviceGet(cu_device* device, int ordinal) {
  std::lock_guard lock(g_mutex);
  if (!g_initialized) return cuda_error_not_initialized;
  if (device == nullptr) return cuda_error_invalid_value;
  if (ordinal < 0 || static_cast<std::size_t>(ordinal) >= g_devices.size()) {
    return cuda_error_invalid_device;
  }
  *device = ordinal;
  return cuda_success;
}

// Like the driver, writes at most `length` bytes, the terminator included.
cu_result cuDeviceGetPCIBusId(char* bus_id, int length, cu_device device) {
  std::lock_guard lock(g_mutex);
  if (!g_initialized) return cuda_error_not_initialized;
  if (bus_id == nullptr || length <= 0) return cuda_error_invalid_value;
  if (device < 0 || static_cast<std::size_t>(device) >= g_devices.size()) {
    return cuda_error_invalid_device;
  }
  const std::string text = fake::cuda_bus_id(g_devices[static_cast<std::size_t>(device)]);
  std::snprintf(bus_id, static_cast<std::size_t>(length), "%s", text.c_str());
  return cuda_success;
}

// Work without cuInit, as in the driver; an unknown code gives nullptr and INVALID_VALUE.
cu_result cuGetErrorName(cu_result error, const char** name) {
  if (name == nullptr) return cuda_error_invalid_value;
  const error_text* found = find_error(error);
  *name = found != nullptr ? found->name : nullptr;
  return found != nullptr ? cuda_success : cuda_error_invalid_value;
}

cu_result cuGetErrorString(cu_result error, const char** text) {
  if (text == nullptr) return cuda_error_invalid_value;
  const error_text* found = find_error(error);
  *text = found != nullptr ? found->text : nullptr;
  return found != nullptr ? cuda_success : cuda_error_invalid_value;
}

}  // extern "C"
#pragma GCC visibility pop

// NOLINTEND(readability-identifier-naming)
