// The CUDA driver, opened at run time, for one question only: which PCI bus
// id has CUDA ordinal N. That is how a CUDA ordinal (which honours
// CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER) finds its NVML handle. cuInit
// creates no context, so asking leaves the GPU free to idle.
#pragma once

#include <string>
#include <vector>

namespace coolbench::telemetry::detail {

/// PCI bus ids ("0000:00:06.0") of the GPUs CUDA sees, by CUDA ordinal. Empty
/// when CUDA sees none. Throws not_available without a CUDA driver.
[[nodiscard]] std::vector<std::string> cuda_pci_bus_ids();

/// Parses "dddd:bb:dd.f" or "dddddddd:bb:dd.f" (hex) into one comparable
/// number, so NVML's and CUDA's spellings of a bus id compare equal. Returns
/// -1 for text that is not a bus id.
[[nodiscard]] long long pci_bus_key(const std::string& bus_id) noexcept;

}  // namespace coolbench::telemetry::detail
