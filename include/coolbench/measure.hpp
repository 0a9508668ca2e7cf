/// @file
/// The measurement layer: workloads (what is timed), the GEMM heater, and the
/// protocol that times them.
#pragma once

#include "coolbench/measure/ab.hpp"        // IWYU pragma: export
#include "coolbench/measure/heater.hpp"    // IWYU pragma: export
#include "coolbench/measure/multi.hpp"     // IWYU pragma: export
#include "coolbench/measure/options.hpp"   // IWYU pragma: export
#include "coolbench/measure/protocol.hpp"  // IWYU pragma: export
#include "coolbench/measure/result.hpp"    // IWYU pragma: export
#include "coolbench/measure/timing.hpp"    // IWYU pragma: export
#include "coolbench/measure/workload.hpp"  // IWYU pragma: export
