/// @file
/// Linux host sensors (thermal zones, hwmon, cpufreq), for machines without a
/// GPU and for the CPU backend. Absent sensors come back as empty lists.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "coolbench/telemetry/reading.hpp"

namespace coolbench::telemetry {

/// /sys/class/thermal/thermal_zoneN.
struct thermal_zone {
  std::string zone;  ///< "thermal_zone0"
  std::string type;  ///< "x86_pkg_temp", "acpitz", …
  reading<double> temp_c;
};

/// One temperature input of a hwmon chip: /sys/class/hwmon/hwmonN/tempK_*.
struct hwmon_temperature {
  std::string chip;   ///< the chip's `name` file: "coretemp", "k10temp", …
  std::string label;  ///< tempK_label, or "tempK" when the chip gives none
  reading<double> temp_c;
  reading<double> max_c;   ///< tempK_max
  reading<double> crit_c;  ///< tempK_crit
};

/// /sys/devices/system/cpu/cpuN/cpufreq.
struct cpu_frequency {
  int cpu = 0;
  reading<double> cur_mhz;  ///< scaling_cur_freq
  reading<double> min_mhz;  ///< scaling_min_freq
  reading<double> max_mhz;  ///< scaling_max_freq (cpuinfo_max_freq when absent)
  std::string governor;     ///< empty when absent
};

struct cpu_sensors {
  std::vector<thermal_zone> thermal_zones;
  std::vector<hwmon_temperature> hwmon;
  std::vector<cpu_frequency> frequencies;

  [[nodiscard]] bool empty() const noexcept {
    return thermal_zones.empty() && hwmon.empty() && frequencies.empty();
  }
};

/// Reads every sensor below `sys_root` (normally "/sys"; tests pass a folder
/// laid out the same way). Never throws for a missing or unreadable sensor.
[[nodiscard]] cpu_sensors read_cpu_sensors(const std::filesystem::path& sys_root = "/sys");

}  // namespace coolbench::telemetry
