// A shared library opened at run time (NVML, the CUDA driver), so that
// coolbench builds and starts on machines without the NVIDIA driver.
#pragma once

#include <string>
#include <vector>

namespace coolbench::core {

class dynamic_library {
 public:
  /// Opens the first of `names` that loads. Throws not_available naming every
  /// name tried and dlerror's answer for the last one, plus `hint`.
  dynamic_library(const std::vector<std::string>& names, const std::string& hint);
  ~dynamic_library();
  dynamic_library(const dynamic_library&) = delete;
  dynamic_library& operator=(const dynamic_library&) = delete;
  dynamic_library(dynamic_library&& other) noexcept;
  dynamic_library& operator=(dynamic_library&& other) noexcept;

  /// The address of `name`, or nullptr when the library does not export it.
  [[nodiscard]] void* find(const char* name) const noexcept;

  /// The first of `names` that is exported, or nullptr. Lets a caller prefer
  /// versioned symbols (nvmlInit_v2) and fall back to older names.
  [[nodiscard]] void* find_first(std::initializer_list<const char*> names) const noexcept;

  /// The file name that was opened.
  [[nodiscard]] const std::string& name() const noexcept { return m_name; }

 private:
  void* m_handle = nullptr;
  std::string m_name;
};

}  // namespace coolbench::core
