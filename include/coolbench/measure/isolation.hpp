/// @file
/// Clearing hidden GPU state between workloads (docs/measure.md, "Hidden state"): one call that
/// the protocol, `coolbench compare` and A/B runs share.
#pragma once

#include <string>

#include "coolbench/measure/options.hpp"

namespace coolbench::measure {

/// Clears hidden state on CUDA ordinal `ordinal` the way `how` says and returns a line for the
/// report ("isolation touch: another process made a context and exited, 112 ms"); empty for
/// `none`.
/// - `release`: device::release() and nothing else; whatever this process holds through
///   coolbench must be released first, and the next acquire makes a new context. Throws
///   device::release_refused as the release does.
/// - `touch`: device::touch_from_another_process(); this process's context lives on, so it
///   serves a context that a framework keeps.
/// - `process`: nothing can be done inside a process: throws invalid_argument saying to run the
///   workload in a process of its own.
/// Throws error when the touch's helper is missing or fails.
std::string isolate(isolation how, int ordinal);

}  // namespace coolbench::measure
