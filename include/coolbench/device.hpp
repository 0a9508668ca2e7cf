/// @file
/// Umbrella header of the device layer: leases, owned resources, release.
#pragma once

#include "coolbench/device/device.hpp"
#include "coolbench/device/resource.hpp"
