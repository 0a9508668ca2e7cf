#include "core/dynamic_library.hpp"

#include <dlfcn.h>

#include <utility>

#include "coolbench/core/error.hpp"

namespace coolbench::core {

dynamic_library::dynamic_library(const std::vector<std::string>& names, const std::string& hint) {
  std::string last_error;
  for (const auto& name : names) {
    // RTLD_LOCAL keeps the library's symbols out of the global namespace, so
    // a test double and the real library cannot be mixed up.
    m_handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (m_handle != nullptr) {
      m_name = name;
      return;
    }
    const char* message = dlerror();
    last_error = message != nullptr ? message : "unknown dlopen error";
  }
  std::string tried;
  for (const auto& name : names) tried += (tried.empty() ? "" : ", ") + name;
  throw not_available("could not load " + tried + " (" + last_error + "). " + hint);
}

dynamic_library::~dynamic_library() {
  if (m_handle != nullptr) dlclose(m_handle);
}

dynamic_library::dynamic_library(dynamic_library&& other) noexcept
    : m_handle(std::exchange(other.m_handle, nullptr)), m_name(std::move(other.m_name)) {}

dynamic_library& dynamic_library::operator=(dynamic_library&& other) noexcept {
  if (this != &other) {
    if (m_handle != nullptr) dlclose(m_handle);
    m_handle = std::exchange(other.m_handle, nullptr);
    m_name = std::move(other.m_name);
  }
  return *this;
}

void* dynamic_library::find(const char* name) const noexcept { return dlsym(m_handle, name); }

void* dynamic_library::find_first(std::initializer_list<const char*> names) const noexcept {
  for (const char* name : names) {
    if (void* address = find(name)) return address;
  }
  return nullptr;
}

}  // namespace coolbench::core
