/// @file
/// The library's version.
#pragma once

#include <string_view>

namespace coolbench {

/// "MAJOR.MINOR.PATCH" of this build of coolbench.
[[nodiscard]] std::string_view version() noexcept;

}  // namespace coolbench
