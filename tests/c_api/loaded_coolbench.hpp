// libcoolbench.so opened with dlopen and its C API found with dlsym, as a foreign program (a
// ctypes script, another runtime) does. Only c_api.h is used, for its types and constants.
#pragma once

#include <dlfcn.h>

#include <stdexcept>
#include <string>

#include "coolbench/c_api.h"

namespace coolbench::testing {

class loaded_coolbench {
 public:
  explicit loaded_coolbench(const char* path) : m_handle(dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
    if (m_handle == nullptr) throw std::runtime_error(std::string("dlopen: ") + dlerror());
    release_device = find<decltype(&coolbench_release_device)>("coolbench_release_device");
    device_state = find<decltype(&coolbench_device_state)>("coolbench_device_state");
    last_error = find<decltype(&coolbench_last_error)>("coolbench_last_error");
    version = find<decltype(&coolbench_version)>("coolbench_version");
    find_function = find<decltype(&coolbench_find_function)>("coolbench_find_function");
    function_signature =
        find<decltype(&coolbench_function_signature)>("coolbench_function_signature");
  }
  // Kept loaded for the life of the process, as a runtime that loads it would.
  loaded_coolbench(const loaded_coolbench&) = delete;
  loaded_coolbench& operator=(const loaded_coolbench&) = delete;
  ~loaded_coolbench() = default;

  /// dlsym in this library; nullptr when it does not export `name`.
  [[nodiscard]] void* symbol(const char* name) const { return dlsym(m_handle, name); }

  decltype(&coolbench_release_device) release_device = nullptr;
  decltype(&coolbench_device_state) device_state = nullptr;
  decltype(&coolbench_last_error) last_error = nullptr;
  decltype(&coolbench_version) version = nullptr;
  decltype(&coolbench_find_function) find_function = nullptr;
  decltype(&coolbench_function_signature) function_signature = nullptr;

 private:
  template <class Function>
  Function find(const char* name) const {
    void* address = symbol(name);
    if (address == nullptr) throw std::runtime_error(std::string("dlsym: not exported: ") + name);
    return reinterpret_cast<Function>(address);  // NOLINT: how dlsym is used
  }

  void* m_handle;
};

}  // namespace coolbench::testing
