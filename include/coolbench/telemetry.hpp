/// @file
/// Umbrella header of the telemetry layer: GPU sensors through NVML, Linux
/// host sensors, and the sampler thread.
#pragma once

#include "coolbench/telemetry/clock_reasons.hpp"
#include "coolbench/telemetry/cpu_sensors.hpp"
#include "coolbench/telemetry/energy_probe.hpp"
#include "coolbench/telemetry/gpu.hpp"
#include "coolbench/telemetry/reading.hpp"
#include "coolbench/telemetry/ring_buffer.hpp"
#include "coolbench/telemetry/sampler.hpp"
