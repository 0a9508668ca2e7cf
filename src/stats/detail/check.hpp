/// @file
/// Input checks shared by the stats layer; each throws
/// coolbench::invalid_argument with a message naming the function and what was
/// wrong.
#pragma once

#include <span>
#include <string_view>

namespace coolbench::stats::detail {

/// Non-empty, every value finite.
void require_samples(std::span<const double> values, std::string_view function,
                     std::string_view what = "values");

/// 0 < level < 1.
void require_level(double level, std::string_view function);

}  // namespace coolbench::stats::detail
