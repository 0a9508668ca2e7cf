// `coolbench run --device`: cpu, one CUDA ordinal, or several GPUs ("all", "0,2,3") measured
// at once (docs/cli/run.md, "Several GPUs").
#pragma once

#include <string>
#include <vector>

namespace coolbench::cli {

/// CLI11's check of run's --device: "" when `value` is cpu, an ordinal, all, or a list of
/// distinct ordinals N,M,...; else what is wrong.
[[nodiscard]] std::string check_run_device(const std::string& value);

/// Whether `value` names several GPUs: "all" or a list with a comma.
[[nodiscard]] bool names_several_gpus(const std::string& value);

/// The ordinals `value` names ("all": 0 to count − 1; "0,2,3": those, in that order) on a host
/// where CUDA sees `count` GPUs. Throws not_available when count is 0, invalid_argument for an
/// ordinal the host does not have.
[[nodiscard]] std::vector<int> resolve_gpus(const std::string& value, int count);

}  // namespace coolbench::cli
