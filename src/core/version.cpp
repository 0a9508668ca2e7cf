#include "coolbench/core/version.hpp"

namespace coolbench {

std::string_view version() noexcept { return COOLBENCH_VERSION_STRING; }

}  // namespace coolbench
