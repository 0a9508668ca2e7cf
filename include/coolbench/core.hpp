/// @file
/// Umbrella header of the core layer: errors and clocks.
#pragma once

#include "coolbench/core/clock.hpp"
#include "coolbench/core/error.hpp"
#include "coolbench/core/version.hpp"
