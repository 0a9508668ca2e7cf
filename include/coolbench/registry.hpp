/// @file
/// A small registry of named C functions, so that a runtime that knows a
/// function only by name (TVM's `device_api.cuda_reset`, a ctypes program)
/// finds it: coolbench_find_function() in c_api.h is its C face.
#pragma once

#include <span>
#include <string_view>

namespace coolbench {

/// One registered function. `name` and `signature` view NUL-terminated string
/// literals; `function` is the C function, cast to the type `signature` names
/// before it is called.
struct registered_function {
  std::string_view name;
  std::string_view signature;  ///< C signature, e.g. "int(int,unsigned,char*,size_t)"
  void (*function)();
};

/// The function registered under `name`, or nullptr.
[[nodiscard]] const registered_function* find_function(std::string_view name) noexcept;

/// Every registered function, in a fixed order.
[[nodiscard]] std::span<const registered_function> registered_functions() noexcept;

}  // namespace coolbench
