#include "coolbench/telemetry/cpu_sensors.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

namespace coolbench::telemetry {
namespace {

namespace fs = std::filesystem;

// sysfs gives temperatures in millidegrees C and frequencies in kHz.
constexpr double millidegrees_per_degree = 1000.0;
constexpr double khz_per_mhz = 1000.0;

/// The first line of `file` without surrounding whitespace (sysfs attributes
/// hold one value each), or nullopt when it is not a regular file or cannot be read.
std::optional<std::string> read_trimmed_file(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    return std::nullopt;
  }
  std::ifstream in(file);
  if (!in) {
    return std::nullopt;
  }
  std::string text;
  std::getline(in, text);
  if (in.bad()) {
    return std::nullopt;
  }
  constexpr std::string_view whitespace = " \t\r\n";
  const auto first = text.find_first_not_of(whitespace);
  if (first == std::string::npos) {
    return std::string{};
  }
  const auto last = text.find_last_not_of(whitespace);
  return text.substr(first, last - first + 1);
}

/// The trimmed text of `file`, or empty when it is missing or unreadable.
std::string read_text(const fs::path& file) { return read_trimmed_file(file).value_or(""); }

/// `text` as a number divided by `divisor`: failed unless the whole text is one number.
reading<double> parse_scaled(std::string_view text, double divisor) {
  double value = 0.0;
  const auto* const end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || ptr != end) {
    return reading<double>::failed();
  }
  return reading<double>::of(value / divisor);
}

/// The number in `file` divided by `divisor`: unsupported when the file is
/// missing, failed when it exists but cannot be read or parsed.
reading<double> read_scaled(const fs::path& file, double divisor) {
  std::error_code ec;
  const bool exists = fs::exists(file, ec);
  if (ec) {
    return reading<double>::failed();  // cannot even tell, e.g. an unsearchable folder
  }
  if (!exists) {
    return reading<double>::unsupported();
  }
  const auto text = read_trimmed_file(file);
  if (!text) {
    return reading<double>::failed();
  }
  return parse_scaled(*text, divisor);
}

/// N when `name` is exactly `prefix` N `suffix` with N a non-negative decimal number.
std::optional<int> index_in(std::string_view name, std::string_view prefix,
                            std::string_view suffix = {}) {
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) ||
      !name.ends_with(suffix)) {
    return std::nullopt;
  }
  const auto digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  int index = 0;
  const auto* const end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(digits.data(), end, index);
  if (ec != std::errc{} || ptr != end || index < 0) {
    return std::nullopt;
  }
  return index;
}

struct numbered_entry {
  int index = 0;
  fs::path path;
};

/// The entries of `dir` named `prefix` N `suffix`, sorted by N; empty when `dir`
/// is missing or cannot be listed.
std::vector<numbered_entry> numbered_entries(const fs::path& dir, std::string_view prefix,
                                             std::string_view suffix = {}) {
  std::vector<numbered_entry> entries;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto index = index_in(it->path().filename().string(), prefix, suffix);
    if (index) {
      entries.push_back({*index, it->path()});
    }
  }
  std::ranges::sort(entries, [](const numbered_entry& a, const numbered_entry& b) {
    return std::tie(a.index, a.path) < std::tie(b.index, b.path);
  });
  return entries;
}

/// numbered_entries that are folders (sysfs links to folders count).
std::vector<numbered_entry> numbered_dirs(const fs::path& dir, std::string_view prefix) {
  auto entries = numbered_entries(dir, prefix);
  std::erase_if(entries, [](const numbered_entry& entry) {
    std::error_code ec;
    return !fs::is_directory(entry.path, ec);
  });
  return entries;
}

std::vector<thermal_zone> read_thermal_zones(const fs::path& sys_root) {
  std::vector<thermal_zone> zones;
  for (const auto& entry : numbered_dirs(sys_root / "class" / "thermal", "thermal_zone")) {
    zones.push_back({.zone = entry.path.filename().string(),
                     .type = read_text(entry.path / "type"),
                     .temp_c = read_scaled(entry.path / "temp", millidegrees_per_degree)});
  }
  return zones;
}

void read_hwmon_chip(const fs::path& hwmon_dir, std::vector<hwmon_temperature>& out) {
  // Older kernels keep the sensor files under hwmonN/device/ instead of hwmonN/.
  fs::path dir = hwmon_dir;
  auto inputs = numbered_entries(dir, "temp", "_input");
  if (inputs.empty()) {
    dir = hwmon_dir / "device";
    inputs = numbered_entries(dir, "temp", "_input");
  }
  std::string chip = read_text(hwmon_dir / "name");
  if (chip.empty()) {
    chip = read_text(hwmon_dir / "device" / "name");
  }

  for (const auto& input : inputs) {
    const std::string temp = "temp" + std::to_string(input.index);
    std::string label = read_text(dir / (temp + "_label"));
    if (label.empty()) {
      label = temp;
    }
    out.push_back({.chip = chip,
                   .label = std::move(label),
                   .temp_c = read_scaled(input.path, millidegrees_per_degree),
                   .max_c = read_scaled(dir / (temp + "_max"), millidegrees_per_degree),
                   .crit_c = read_scaled(dir / (temp + "_crit"), millidegrees_per_degree)});
  }
}

std::vector<hwmon_temperature> read_hwmon(const fs::path& sys_root) {
  std::vector<hwmon_temperature> temperatures;
  for (const auto& entry : numbered_dirs(sys_root / "class" / "hwmon", "hwmon")) {
    read_hwmon_chip(entry.path, temperatures);
  }
  return temperatures;
}

/// `primary` in MHz, or `fallback` when `primary` is missing.
reading<double> read_mhz(const fs::path& dir, std::string_view primary, std::string_view fallback) {
  const auto mhz = read_scaled(dir / primary, khz_per_mhz);
  if (mhz.status != reading_status::unsupported) {
    return mhz;
  }
  return read_scaled(dir / fallback, khz_per_mhz);
}

std::vector<cpu_frequency> read_frequencies(const fs::path& sys_root) {
  std::vector<cpu_frequency> frequencies;
  for (const auto& [index, cpu_dir] :
       numbered_dirs(sys_root / "devices" / "system" / "cpu", "cpu")) {
    const fs::path dir = cpu_dir / "cpufreq";
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      continue;  // no cpufreq driver for this CPU
    }
    frequencies.push_back({.cpu = index,
                           .cur_mhz = read_mhz(dir, "scaling_cur_freq", "cpuinfo_cur_freq"),
                           .min_mhz = read_mhz(dir, "scaling_min_freq", "cpuinfo_min_freq"),
                           .max_mhz = read_mhz(dir, "scaling_max_freq", "cpuinfo_max_freq"),
                           .governor = read_text(dir / "scaling_governor")});
  }
  return frequencies;
}

}  // namespace

cpu_sensors read_cpu_sensors(const std::filesystem::path& sys_root) {
  return {.thermal_zones = read_thermal_zones(sys_root),
          .hwmon = read_hwmon(sys_root),
          .frequencies = read_frequencies(sys_root)};
}

}  // namespace coolbench::telemetry
