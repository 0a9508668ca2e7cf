/// @file
/// JSON texts of the device layer's reports, one serializer for every place
/// that shows them (the C ABI, release-check).
#pragma once

#include <string>

#include "coolbench/device/device.hpp"

namespace coolbench::device {

/// {"ordinal", "released", "context_reset", "forced", "note", "bytes_freed",
/// "live_bytes_freed", "destroyed": {kind: count}, "seconds",
/// "generation_after", "foreign_bytes" (null when unknown), "foreign_check",
/// "foreign_state", "context_made_by", "process_bytes", "baseline_bytes"
/// (null when unknown), "baseline_source", "coolbench_bytes",
/// "granularity_bytes", "threshold_bytes", "dangling",
/// "process_listed_after" (null when unknown)}, on one line.
[[nodiscard]] std::string to_json(const release_report& report);

/// {"ordinal", "context_active", "generation", "leases", "live_bytes",
/// "cached_bytes", "peak_bytes", "resources": {kind: count}, "releases"}.
[[nodiscard]] std::string to_json(const device_status& status);

}  // namespace coolbench::device
