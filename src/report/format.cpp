#include "coolbench/report/format.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "coolbench/core/error.hpp"

namespace coolbench::report {

using telemetry::reading;

template <class T>
std::string show(const reading<T>& r, int decimals) {
  if (!r.ok()) return "n/a";
  if constexpr (std::is_same_v<T, bool>) {
    return r.value ? "on" : "off";
  } else if constexpr (std::is_floating_point_v<T>) {
    return fmt::format("{:.{}f}", r.value, decimals);
  } else {
    return fmt::format("{}", r.value);
  }
}

template std::string show(const reading<int>&, int);
template std::string show(const reading<unsigned>&, int);
template std::string show(const reading<std::uint64_t>&, int);
template std::string show(const reading<double>&, int);
template std::string show(const reading<bool>&, int);

namespace {

constexpr double mib = 1024.0 * 1024.0;

reading<double> to_mib(const reading<std::uint64_t>& bytes) {
  return {static_cast<double>(bytes.value) / mib, bytes.status};
}

reading<double> ns_to_ms(const reading<std::uint64_t>& ns) {
  return {static_cast<double>(ns.value) / 1e6, ns.status};
}

std::string show_pstate(const reading<int>& p) {
  return p.ok() ? fmt::format("P{}", p.value) : "n/a";
}

std::string show_reasons_long(const reading<std::uint64_t>& bits) {
  if (!bits.ok()) return "n/a";
  const auto names = telemetry::clock_reason_names(bits.value);
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

std::string show_version(const reading<int>& cuda) {
  return cuda.ok() ? fmt::format("{}.{}", cuda.value / 1000, (cuda.value % 1000) / 10) : "n/a";
}

std::string show_cc(const reading<int>& cc) {
  return cc.ok() ? fmt::format("{}.{}", cc.value / 10, cc.value % 10) : "n/a";
}

// A cell of CSV: the value, or nothing.
template <class T>
std::string cell(const reading<T>& r, int decimals = 0) {
  return r.ok() ? show(r, decimals) : std::string{};
}

}  // namespace

std::string format_topology(const std::vector<int>& ordinals,
                            const std::vector<std::vector<telemetry::gpu_link>>& links) {
  std::string out = "\nTopology (NVML; the row's GPU to the column's):\n" + std::string(8, ' ');
  for (const int ordinal : ordinals) out += fmt::format("{:>7}", fmt::format("GPU{}", ordinal));
  out += "\n";
  for (std::size_t i = 0; i < ordinals.size(); ++i) {
    out += fmt::format("  {:<6}", fmt::format("GPU{}", ordinals[i]));
    for (std::size_t j = 0; j < ordinals.size(); ++j) {
      out += fmt::format("{:>7}", i == j ? std::string("X") : links[i][j].label());
    }
    out += "\n";
  }
  out +=
      "  NV#  # active NVLinks (direct, or through an NVSwitch when NVLink P2P reaches the GPU)\n"
      "  PIX  one PCIe switch    PXB  several PCIe switches    PHB  a PCIe host bridge\n"
      "  NODE host bridges of one NUMA node    SYS  across NUMA nodes    BOARD  the same board\n"
      "  ?    the driver reported neither\n";
  return out;
}

std::string format_gpu_info(const telemetry::gpu_identity& id, const telemetry::gpu_sample& s,
                            const std::vector<telemetry::gpu_process>& processes) {
  std::string out;
  auto line = [&out](std::string_view key, const std::string& value) {
    out += fmt::format("  {:<22}{}\n", key, value);
  };
  out += fmt::format("GPU {}: {}\n", id.cuda_ordinal, id.name);
  line("UUID", id.uuid);
  line("PCI bus id", id.pci_bus_id);
  line("NVML index", std::to_string(id.nvml_index));
  line("driver", fmt::format("{} (CUDA {}, NVML {})", id.driver_version,
                             show_version(id.cuda_driver_version), id.nvml_version));
  line("compute capability", show_cc(id.compute_capability));
  line("persistence mode", show(id.persistence_mode));
  out += "  clocks [MHz]          now    max    boost  app    default app\n";
  out += fmt::format("    {:<20}{:<7}{:<7}{}\n", "SM", show(s.clock_sm_mhz),
                     show(id.clock_sm_max_mhz), show(id.clock_sm_boost_mhz));
  out += fmt::format("    {:<20}{:<7}{:<7}{:<7}{:<7}{}\n", "graphics", show(s.clock_graphics_mhz),
                     show(id.clock_graphics_max_mhz), "", show(id.clock_graphics_app_mhz),
                     show(id.clock_graphics_default_app_mhz));
  out += fmt::format("    {:<20}{:<7}{}\n", "memory", show(s.clock_mem_mhz),
                     show(id.clock_mem_max_mhz));
  line("temperature [C]", fmt::format("GPU {}, memory {}", show(s.temp_gpu_c), show(s.temp_mem_c)));
  line("thresholds [C]",
       fmt::format("slowdown {}, shutdown {}, GPU max operating {}, memory max {}",
                   show(id.temp_slowdown_c), show(id.temp_shutdown_c), show(id.temp_gpu_max_c),
                   show(id.temp_mem_max_c)));
  line("power [W]", fmt::format("now {}, average {}", show(s.power_w, 1), show(s.power_avg_w, 1)));
  line("power limit [W]",
       fmt::format("{} (default {}, range {} to {})", show(id.power_limit_w, 0),
                   show(id.power_default_limit_w, 0), show(id.power_min_limit_w, 0),
                   show(id.power_max_limit_w, 0)));
  line("energy [J]",
       fmt::format("{} since the driver loaded",
                   show(reading<double>{static_cast<double>(s.energy_mj.value) / 1000.0,
                                        s.energy_mj.status},
                        1)));
  line("performance state", show_pstate(s.pstate));
  line("clock-event reasons", show_reasons_long(s.clock_reasons));
  const auto& c = s.reason_counters;
  line(
      "time in reason [ms]",
      fmt::format("sw_power_cap {}, sync_boost {}, sw_thermal {}, hw_thermal {}, hw_power_brake {}",
                  show(ns_to_ms(c.sw_power_cap_ns), 1), show(ns_to_ms(c.sync_boost_ns), 1),
                  show(ns_to_ms(c.sw_thermal_ns), 1), show(ns_to_ms(c.hw_thermal_ns), 1),
                  show(ns_to_ms(c.hw_power_brake_ns), 1)));
  line("utilization [%]",
       fmt::format("GPU {}, memory {}", show(s.util_gpu_pct), show(s.util_mem_pct)));
  line("memory [MiB]", fmt::format("{} used of {}", show(to_mib(s.memory_used_bytes)),
                                   show(to_mib(id.memory_total_bytes))));
  if (processes.empty()) {
    line("processes", "none");
  } else {
    line("processes", fmt::format("{} (coolbench who lists them)", processes.size()));
  }
  return out;
}

std::string format_cpu_sensors(const telemetry::cpu_sensors& sensors) {
  std::string out = "Host sensors\n";
  if (sensors.thermal_zones.empty()) out += "  thermal zones         absent\n";
  for (const auto& zone : sensors.thermal_zones) {
    out += fmt::format("  {:<22}{} C ({})\n", zone.zone, show(zone.temp_c, 1), zone.type);
  }
  if (sensors.hwmon.empty()) out += "  hwmon                 absent\n";
  for (const auto& t : sensors.hwmon) {
    out += fmt::format("  {:<22}{} C (max {}, critical {})\n", t.chip + " " + t.label,
                       show(t.temp_c, 1), show(t.max_c, 0), show(t.crit_c, 0));
  }
  if (sensors.frequencies.empty()) {
    out += "  cpufreq               absent\n";
  } else {
    double low = 1e300;
    double high = 0;
    std::size_t readable = 0;
    for (const auto& f : sensors.frequencies) {
      if (!f.cur_mhz.ok()) continue;
      low = std::min(low, f.cur_mhz.value);
      high = std::max(high, f.cur_mhz.value);
      ++readable;
    }
    const auto& first = sensors.frequencies.front();
    out += fmt::format("  {:<22}{} CPUs, now {} MHz, range {} to {} MHz, governor {}\n", "cpufreq",
                       sensors.frequencies.size(),
                       readable == 0 ? std::string("n/a") : fmt::format("{:.0f}-{:.0f}", low, high),
                       show(first.min_mhz), show(first.max_mhz),
                       first.governor.empty() ? "n/a" : first.governor);
  }
  return out;
}

std::string format_gpu_processes(const telemetry::gpu_identity& id,
                                 const std::vector<telemetry::gpu_process>& processes) {
  std::string out = fmt::format("GPU {}: {} ({}): ", id.cuda_ordinal, id.name, id.pci_bus_id);
  if (processes.empty()) return out + "no process holds a context\n";
  const bool one = processes.size() == 1;
  out += fmt::format("{} process{} hold{} a context and keep{} it from idling\n", processes.size(),
                     one ? "" : "es", one ? "s" : "", one ? "s" : "");
  out += fmt::format("  {:>8}  {:<8}  {:>10}  {}\n", "pid", "type", "memory MiB", "command");
  for (const auto& p : processes) {
    out += fmt::format("  {:>8}  {:<8}  {:>10}  {}\n", p.pid, p.graphics ? "graphics" : "compute",
                       show(to_mib(p.used_memory_bytes)),
                       p.name.empty() ? "(not visible from here)" : p.name);
  }
  return out;
}

std::string monitor_header() {
  const auto row = [](auto... cells) {
    std::string line = fmt::format(
        "# {:>8} {:>3} {:>6} {:>6} {:>5} {:>5} {:>6} {:>6} {:>5} {:>4} {:>4} {:>8}  {}", cells...);
    line.erase(line.find_last_not_of(' ') + 1);
    return line + "\n";
  };
  return row("time", "gpu", "pwr", "avg", "gtemp", "mtemp", "sm", "mem", "pst", "sm", "mem", "fb",
             "reasons") +
         row("s", "idx", "W", "W", "C", "C", "MHz", "MHz", "", "%", "%", "MiB", "");
}

std::string monitor_line(double time_s, int gpu, const telemetry::gpu_sample& s) {
  return fmt::format(
      "  {:>8.2f} {:>3} {:>6} {:>6} {:>5} {:>5} {:>6} {:>6} {:>5} {:>4} {:>4} {:>8}  {}\n", time_s,
      gpu, show(s.power_w, 1), show(s.power_avg_w, 1), show(s.temp_gpu_c), show(s.temp_mem_c),
      show(s.clock_sm_mhz), show(s.clock_mem_mhz), show_pstate(s.pstate), show(s.util_gpu_pct),
      show(s.util_mem_pct), show(to_mib(s.memory_used_bytes)),
      s.clock_reasons.ok() ? telemetry::clock_reasons_short(s.clock_reasons.value) : "n/a");
}

std::string csv_header() {
  return "time_s,unix_time_s,gpu,power_w,power_avg_w,temp_gpu_c,temp_mem_c,clock_sm_mhz,"
         "clock_mem_mhz,clock_graphics_mhz,pstate,util_gpu_pct,util_mem_pct,memory_used_bytes,"
         "energy_mj,clock_reasons,clock_reason_names,sw_power_cap_ns,sync_boost_ns,sw_thermal_ns,"
         "hw_thermal_ns,hw_power_brake_ns\n";
}

std::string csv_row(double time_s, double unix_time_s, int gpu, const telemetry::gpu_sample& s) {
  const auto& c = s.reason_counters;
  return fmt::format(
      "{:.4f},{:.4f},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", time_s,
      unix_time_s, gpu, cell(s.power_w, 3), cell(s.power_avg_w, 3), cell(s.temp_gpu_c),
      cell(s.temp_mem_c), cell(s.clock_sm_mhz), cell(s.clock_mem_mhz), cell(s.clock_graphics_mhz),
      cell(s.pstate), cell(s.util_gpu_pct), cell(s.util_mem_pct), cell(s.memory_used_bytes),
      cell(s.energy_mj),
      s.clock_reasons.ok() ? fmt::format("0x{:x}", s.clock_reasons.value) : std::string{},
      s.clock_reasons.ok()
          ? fmt::format("{}", fmt::join(telemetry::clock_reason_names(s.clock_reasons.value), "|"))
          : std::string{},
      cell(c.sw_power_cap_ns), cell(c.sync_boost_ns), cell(c.sw_thermal_ns), cell(c.hw_thermal_ns),
      cell(c.hw_power_brake_ns));
}

namespace {

// Writes readings into a JSON object: the value, or null with the name listed
// under "unsupported" / "failed".
class json_writer {
 public:
  explicit json_writer(nlohmann::json& object) : m_object(object) {}
  ~json_writer() {
    if (!m_unsupported.empty()) m_object["unsupported"] = m_unsupported;
    if (!m_failed.empty()) m_object["failed"] = m_failed;
    if (!m_skipped.empty()) m_object["skipped"] = m_skipped;
  }
  json_writer(const json_writer&) = delete;
  json_writer& operator=(const json_writer&) = delete;
  json_writer(json_writer&&) = delete;
  json_writer& operator=(json_writer&&) = delete;

  template <class T>
  void put(const char* name, const reading<T>& r) {
    if (r.ok()) {
      m_object[name] = r.value;
      return;
    }
    m_object[name] = nullptr;
    switch (r.status) {
      case telemetry::reading_status::failed: m_failed.emplace_back(name); break;
      case telemetry::reading_status::skipped: m_skipped.emplace_back(name); break;
      default: m_unsupported.emplace_back(name); break;
    }
  }

 private:
  nlohmann::json& m_object;
  std::vector<std::string> m_unsupported;
  std::vector<std::string> m_failed;
  std::vector<std::string> m_skipped;
};

}  // namespace

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.close();
    if (!out)
      throw invalid_argument("cannot write " + tmp + ": check the folder exists and is writable");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw invalid_argument("cannot rename " + tmp + " to " + path + ": " + ec.message());
}

nlohmann::json to_json(const telemetry::gpu_link& link) {
  const auto value = [](const auto& r) -> nlohmann::json {
    return r.ok() ? nlohmann::json(r.value) : nlohmann::json();
  };
  return {{"label", link.label()},
          {"pcie_path", link.pcie_path.empty() ? nlohmann::json() : nlohmann::json(link.pcie_path)},
          {"direct_nvlinks", value(link.direct_nvlinks)},
          {"active_nvlinks", value(link.active_nvlinks)},
          {"nvlink_p2p", value(link.nvlink_p2p)}};
}

nlohmann::json to_json(const telemetry::gpu_identity& id) {
  nlohmann::json j = {{"cuda_ordinal", id.cuda_ordinal},
                      {"nvml_index", id.nvml_index},
                      {"name", id.name},
                      {"uuid", id.uuid},
                      {"pci_bus_id", id.pci_bus_id},
                      {"driver_version", id.driver_version},
                      {"nvml_version", id.nvml_version}};
  json_writer w(j);
  w.put("cuda_driver_version", id.cuda_driver_version);
  w.put("compute_capability", id.compute_capability);
  w.put("temp_shutdown_c", id.temp_shutdown_c);
  w.put("temp_slowdown_c", id.temp_slowdown_c);
  w.put("temp_mem_max_c", id.temp_mem_max_c);
  w.put("temp_gpu_max_c", id.temp_gpu_max_c);
  w.put("clock_sm_max_mhz", id.clock_sm_max_mhz);
  w.put("clock_mem_max_mhz", id.clock_mem_max_mhz);
  w.put("clock_graphics_max_mhz", id.clock_graphics_max_mhz);
  w.put("clock_sm_boost_mhz", id.clock_sm_boost_mhz);
  w.put("clock_graphics_app_mhz", id.clock_graphics_app_mhz);
  w.put("clock_graphics_default_app_mhz", id.clock_graphics_default_app_mhz);
  w.put("power_limit_w", id.power_limit_w);
  w.put("power_default_limit_w", id.power_default_limit_w);
  w.put("power_min_limit_w", id.power_min_limit_w);
  w.put("power_max_limit_w", id.power_max_limit_w);
  w.put("memory_total_bytes", id.memory_total_bytes);
  w.put("persistence_mode", id.persistence_mode);
  w.put("supported_clock_reasons", id.supported_clock_reasons);
  return j;
}

nlohmann::json to_json(const telemetry::gpu_sample& s) {
  nlohmann::json j = {{"time_ns", s.time_ns}};
  {
    json_writer w(j);
    w.put("temp_gpu_c", s.temp_gpu_c);
    w.put("temp_mem_c", s.temp_mem_c);
    w.put("clock_sm_mhz", s.clock_sm_mhz);
    w.put("clock_mem_mhz", s.clock_mem_mhz);
    w.put("clock_graphics_mhz", s.clock_graphics_mhz);
    w.put("power_w", s.power_w);
    w.put("power_avg_w", s.power_avg_w);
    w.put("energy_mj", s.energy_mj);
    w.put("pstate", s.pstate);
    w.put("clock_reasons", s.clock_reasons);
    w.put("sw_power_cap_ns", s.reason_counters.sw_power_cap_ns);
    w.put("sync_boost_ns", s.reason_counters.sync_boost_ns);
    w.put("sw_thermal_ns", s.reason_counters.sw_thermal_ns);
    w.put("hw_thermal_ns", s.reason_counters.hw_thermal_ns);
    w.put("hw_power_brake_ns", s.reason_counters.hw_power_brake_ns);
    w.put("util_gpu_pct", s.util_gpu_pct);
    w.put("util_mem_pct", s.util_mem_pct);
    w.put("memory_used_bytes", s.memory_used_bytes);
  }
  if (s.clock_reasons.ok())
    j["clock_reason_names"] = telemetry::clock_reason_names(s.clock_reasons.value);
  return j;
}

nlohmann::json to_json(const std::vector<telemetry::gpu_process>& processes) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& p : processes) {
    nlohmann::json j = {
        {"pid", p.pid}, {"name", p.name}, {"type", p.graphics ? "graphics" : "compute"}};
    json_writer(j).put("used_memory_bytes", p.used_memory_bytes);
    list.push_back(std::move(j));
  }
  return list;
}

nlohmann::json to_json(const telemetry::cpu_sensors& sensors) {
  nlohmann::json j = {{"thermal_zones", nlohmann::json::array()},
                      {"hwmon", nlohmann::json::array()},
                      {"cpufreq", nlohmann::json::array()}};
  for (const auto& zone : sensors.thermal_zones) {
    nlohmann::json z = {{"zone", zone.zone}, {"type", zone.type}};
    json_writer(z).put("temp_c", zone.temp_c);
    j["thermal_zones"].push_back(std::move(z));
  }
  for (const auto& t : sensors.hwmon) {
    nlohmann::json h = {{"chip", t.chip}, {"label", t.label}};
    {
      json_writer w(h);
      w.put("temp_c", t.temp_c);
      w.put("max_c", t.max_c);
      w.put("crit_c", t.crit_c);
    }
    j["hwmon"].push_back(std::move(h));
  }
  for (const auto& f : sensors.frequencies) {
    nlohmann::json c = {{"cpu", f.cpu}, {"governor", f.governor}};
    {
      json_writer w(c);
      w.put("cur_mhz", f.cur_mhz);
      w.put("min_mhz", f.min_mhz);
      w.put("max_mhz", f.max_mhz);
    }
    j["cpufreq"].push_back(std::move(c));
  }
  return j;
}

}  // namespace coolbench::report
