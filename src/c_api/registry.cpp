// The named-function registry: one table, built by the compiler. A function is
// registered by adding a row here, never by a static object elsewhere.
#include "coolbench/registry.hpp"

#include <algorithm>
#include <array>

#include "coolbench/c_api.h"

namespace coolbench {
namespace {

using namespace std::string_view_literals;

// The registry's generic function type, as void* is for data: cast back before calling.
using generic = void (*)();

// Not constexpr, as a cast between function pointer types is not a constant expression. The
// addresses are link-time constants all the same and the names are ""sv literals (not a
// string_view(const char*) call), so GCC and Clang initialize the table statically: no code runs
// at load time (`nm registry.cpp.o` shows no _GLOBAL__sub_I).
const std::array<registered_function, 6> table{{
    // The name the original request used (TVM's device API naming).
    {"device_api.cuda_reset"sv, "int(int,unsigned,char*,size_t)"sv,
     reinterpret_cast<generic>(&coolbench_release_device)},
    {"coolbench.release_device"sv, "int(int,unsigned,char*,size_t)"sv,
     reinterpret_cast<generic>(&coolbench_release_device)},
    {"coolbench.device_state"sv, "int(int,char*,size_t)"sv,
     reinterpret_cast<generic>(&coolbench_device_state)},
    {"coolbench.last_error"sv, "const char*(void)"sv,
     reinterpret_cast<generic>(&coolbench_last_error)},
    {"coolbench.version"sv, "const char*(void)"sv, reinterpret_cast<generic>(&coolbench_version)},
    {"coolbench.find_function"sv, "void*(const char*)"sv,
     reinterpret_cast<generic>(&coolbench_find_function)},
}};

}  // namespace

const registered_function* find_function(std::string_view name) noexcept {
  const auto it = std::find_if(table.begin(), table.end(),
                               [&](const registered_function& f) { return f.name == name; });
  return it == table.end() ? nullptr : &*it;
}

std::span<const registered_function> registered_functions() noexcept { return table; }

}  // namespace coolbench
