// Runs coolbench-context-probe (src/device/context_probe.cpp) as short-lived
// child processes, one per way of making a context, and collects the figures.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "device/detail/context_baseline.hpp"

namespace coolbench::device::detail {

/// The probe executable: $COOLBENCH_CONTEXT_PROBE, else beside the binary
/// that holds the device layer (., ../bin, ../libexec/coolbench, ../../bin),
/// else where the build put it. Empty when none exists; `tried` lists where
/// it looked.
[[nodiscard]] std::optional<std::filesystem::path> find_context_probe(std::string& tried);

/// The four bare-context figures and the granularity for CUDA ordinal
/// `ordinal`, each from a child process of its own. Throws error saying why
/// not (no probe, a failed probe, another GPU or version than `key`).
[[nodiscard]] bare_context_figures run_context_probe(int ordinal, const baseline_key& key);

/// Runs the probe once (runtime API, lazy loading, nothing allocated): another
/// process makes a context on CUDA ordinal `ordinal` and exits. Throws error
/// saying why not.
void touch_with_context_probe(int ordinal);

}  // namespace coolbench::device::detail
