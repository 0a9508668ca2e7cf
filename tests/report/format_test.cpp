// The text, CSV and JSON renderings of src/report/format.hpp on hand-built values: a reading
// without a value shows as n/a, an empty CSV cell or null, and never as 0.
#include "coolbench/report.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace coolbench::report {
namespace {

using telemetry::reading;

telemetry::gpu_identity identity() {
  telemetry::gpu_identity id;
  id.cuda_ordinal = 0;
  id.nvml_index = 0;
  id.name = "NVIDIA H200";
  id.uuid = "GPU-00000000-0000-0000-0000-000000000000";
  id.pci_bus_id = "00000000:18:00.0";
  id.driver_version = "580.159.04";
  id.nvml_version = "13.580.159.04";
  id.cuda_driver_version = reading<int>::of(13000);
  id.compute_capability = reading<int>::of(90);
  id.temp_shutdown_c = reading<int>::of(95);
  id.temp_slowdown_c = reading<int>::of(89);
  id.temp_mem_max_c = reading<int>::of(95);
  id.temp_gpu_max_c = reading<int>::of(87);
  id.clock_sm_max_mhz = reading<unsigned>::of(1980);
  id.clock_mem_max_mhz = reading<unsigned>::of(3201);
  id.clock_graphics_max_mhz = reading<unsigned>::of(1980);
  id.clock_sm_boost_mhz = reading<unsigned>::of(1980);
  id.clock_graphics_app_mhz = reading<unsigned>::of(1980);
  id.clock_graphics_default_app_mhz = reading<unsigned>::of(1980);
  id.power_limit_w = reading<double>::of(700);
  id.power_default_limit_w = reading<double>::of(700);
  id.power_min_limit_w = reading<double>::of(200);
  id.power_max_limit_w = reading<double>::of(700);
  id.memory_total_bytes = reading<std::uint64_t>::of(150000000000);
  id.persistence_mode = reading<bool>::of(true);
  id.supported_clock_reasons = reading<std::uint64_t>::of(0x1ff);
  return id;
}

// Every reading present.
telemetry::gpu_sample full_sample() {
  telemetry::gpu_sample s;
  s.time_ns = 123456789;
  s.temp_gpu_c = reading<int>::of(40);
  s.temp_mem_c = reading<int>::of(35);
  s.clock_sm_mhz = reading<unsigned>::of(1980);
  s.clock_mem_mhz = reading<unsigned>::of(3201);
  s.clock_graphics_mhz = reading<unsigned>::of(1965);
  s.power_w = reading<double>::of(120.0);
  s.power_avg_w = reading<double>::of(110.25);
  s.energy_mj = reading<std::uint64_t>::of(5000000);
  s.pstate = reading<int>::of(0);
  s.clock_reasons = reading<std::uint64_t>::of(0x4);
  s.reason_counters.sw_power_cap_ns = reading<std::uint64_t>::of(1234000);
  s.reason_counters.sync_boost_ns = reading<std::uint64_t>::of(0);
  s.reason_counters.sw_thermal_ns = reading<std::uint64_t>::of(0);
  s.reason_counters.hw_thermal_ns = reading<std::uint64_t>::of(0);
  s.reason_counters.hw_power_brake_ns = reading<std::uint64_t>::of(0);
  s.util_gpu_pct = reading<unsigned>::of(87);
  s.util_mem_pct = reading<unsigned>::of(45);
  s.memory_used_bytes = reading<std::uint64_t>::of(1000000000);
  return s;
}

// No reading present: the default is unsupported; some are marked failed.
telemetry::gpu_sample empty_sample() {
  telemetry::gpu_sample s;
  s.time_ns = 5;
  s.power_w = reading<double>::failed();
  s.clock_reasons = reading<std::uint64_t>::failed();
  return s;
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The cells of one CSV line (its '\n' removed), empty ones included.
std::vector<std::string> cells(std::string line) {
  if (!line.empty() && line.back() == '\n') line.pop_back();
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t comma; (comma = line.find(',', start)) != std::string::npos; start = comma + 1) {
    out.push_back(line.substr(start, comma - start));
  }
  out.push_back(line.substr(start));
  return out;
}

// Start and end offsets of each whitespace-separated word of `line`.
std::vector<std::pair<std::size_t, std::size_t>> spans(const std::string& line) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t i = 0; i < line.size();) {
    if (line[i] == ' ' || line[i] == '\n') {
      ++i;
      continue;
    }
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\n') ++i;
    out.emplace_back(start, i);
  }
  return out;
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(show, prints_values_and_na_for_readings_without_one) {
  EXPECT_EQ(show(reading<int>::of(40)), "40");
  EXPECT_EQ(show(reading<int>::of(0)), "0");  // a real zero is a zero
  EXPECT_EQ(show(reading<int>::of(-5)), "-5");
  EXPECT_EQ(show(reading<unsigned>::of(1980)), "1980");
  EXPECT_EQ(show(reading<std::uint64_t>::of(150000000000)), "150000000000");
  EXPECT_EQ(show(reading<double>::of(123.456), 1), "123.5");
  EXPECT_EQ(show(reading<double>::of(123.456), 3), "123.456");
  EXPECT_EQ(show(reading<double>::of(700.0)), "700");
  EXPECT_EQ(show(reading<bool>::of(true)), "on");
  EXPECT_EQ(show(reading<bool>::of(false)), "off");

  EXPECT_EQ(show(reading<int>::unsupported()), "n/a");
  EXPECT_EQ(show(reading<int>::failed()), "n/a");
  EXPECT_EQ(show(reading<unsigned>::unsupported()), "n/a");
  EXPECT_EQ(show(reading<unsigned>::failed()), "n/a");
  EXPECT_EQ(show(reading<std::uint64_t>::failed()), "n/a");
  EXPECT_EQ(show(reading<double>::unsupported(), 1), "n/a");
  EXPECT_EQ(show(reading<double>::failed(), 3), "n/a");
  EXPECT_EQ(show(reading<bool>::unsupported()), "n/a");
  EXPECT_EQ(show(reading<bool>::failed()), "n/a");
  // A value left behind a non-ok status is never shown.
  EXPECT_EQ(show(reading<int>{7, telemetry::reading_status::failed}), "n/a");
}

TEST(monitor, line_has_the_columns_of_the_header_in_order) {
  const std::string line = monitor_line(1.5, 0, full_sample());
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(count_of(line, "\n"), 1U);
  const std::vector<std::string> expected = {"1.50", "0",  "120.0", "110.2", "40",  "35", "1980",
                                             "3201", "P0", "87",    "45",    "954", "pwr"};
  EXPECT_EQ(words(line), expected) << line;

  const std::vector<std::string> header = lines(monitor_header());
  ASSERT_EQ(header.size(), 2U);
  const std::vector<std::string> names = {"#",  "time", "gpu", "pwr", "avg", "gtemp", "mtemp",
                                          "sm", "mem",  "pst", "sm",  "mem", "fb",    "reasons"};
  EXPECT_EQ(words(header[0]), names);
  EXPECT_EQ(words(header[1]), (std::vector<std::string>{"#", "s", "idx", "W", "W", "C", "C", "MHz",
                                                        "MHz", "%", "%", "MiB"}));
  // Right-aligned columns end where their header ends; the reasons start under theirs.
  const auto value_spans = spans(line);
  auto name_spans = spans(header[0]);
  name_spans.erase(name_spans.begin());  // the '#'
  ASSERT_EQ(value_spans.size(), name_spans.size());
  for (std::size_t i = 0; i + 1 < value_spans.size(); ++i) {
    EXPECT_EQ(value_spans[i].second, name_spans[i].second) << "column " << names[i + 1];
  }
  EXPECT_EQ(value_spans.back().first, name_spans.back().first);
}

TEST(monitor, readings_without_a_value_are_na_never_zero) {
  const std::string line = monitor_line(0.25, 1, empty_sample());
  const std::vector<std::string> got = words(line);
  ASSERT_EQ(got.size(), 13U) << line;
  EXPECT_EQ(got[0], "0.25");
  EXPECT_EQ(got[1], "1");
  for (std::size_t i = 2; i < got.size(); ++i) EXPECT_EQ(got[i], "n/a") << "column " << i;
  for (const std::string& word : got) {
    EXPECT_NE(word, "0");
    EXPECT_NE(word, "0.0");
    EXPECT_NE(word, "P0");
  }

  telemetry::gpu_sample partial = full_sample();
  partial.temp_mem_c = reading<int>::unsupported();
  partial.util_gpu_pct = reading<unsigned>::failed();
  partial.memory_used_bytes = reading<std::uint64_t>::unsupported();
  const std::vector<std::string> some = words(monitor_line(2, 0, partial));
  const std::vector<std::string> expected = {"2.00", "0",  "120.0", "110.2", "40",  "n/a", "1980",
                                             "3201", "P0", "n/a",   "45",    "n/a", "pwr"};
  EXPECT_EQ(some, expected);
}

TEST(monitor, reasons_column_is_short_names_or_a_dash) {
  telemetry::gpu_sample s = full_sample();
  s.clock_reasons = reading<std::uint64_t>::of(0x0);
  EXPECT_EQ(words(monitor_line(0, 0, s)).back(), "-");
  s.clock_reasons = reading<std::uint64_t>::of(0x1 | 0x40);
  EXPECT_EQ(words(monitor_line(0, 0, s)).back(), "idle,hwt");
}

TEST(csv, header_and_rows_have_the_same_columns) {
  const std::string header = csv_header();
  ASSERT_EQ(header.back(), '\n');
  EXPECT_EQ(count_of(header, "\n"), 1U);
  const std::vector<std::string> names = cells(header);
  EXPECT_EQ(names.size(), 22U);
  EXPECT_EQ(names.front(), "time_s");
  for (const auto& sample : {full_sample(), empty_sample()}) {
    const std::string row = csv_row(1.5, 1700000000.25, 0, sample);
    ASSERT_EQ(row.back(), '\n');
    EXPECT_EQ(count_of(row, "\n"), 1U);
    EXPECT_EQ(cells(row).size(), names.size()) << row;
  }
  // Several reasons are joined without a comma, so they stay in one cell.
  telemetry::gpu_sample many = full_sample();
  many.clock_reasons = reading<std::uint64_t>::of(0x1ff);
  EXPECT_EQ(cells(csv_row(0, 0, 0, many)).size(), names.size());
}

TEST(csv, row_holds_each_value_under_its_name) {
  const std::vector<std::string> names = cells(csv_header());
  const std::vector<std::string> row = cells(csv_row(1.5, 1700000000.25, 1, full_sample()));
  ASSERT_EQ(row.size(), names.size());
  const auto at = [&](const std::string& name) {
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) return row[i];
    }
    ADD_FAILURE() << "no column " << name;
    return std::string("?");
  };
  EXPECT_EQ(at("time_s"), "1.5000");
  EXPECT_EQ(at("unix_time_s"), "1700000000.2500");
  EXPECT_EQ(at("gpu"), "1");
  EXPECT_EQ(at("power_w"), "120.000");
  EXPECT_EQ(at("power_avg_w"), "110.250");
  EXPECT_EQ(at("temp_gpu_c"), "40");
  EXPECT_EQ(at("temp_mem_c"), "35");
  EXPECT_EQ(at("clock_sm_mhz"), "1980");
  EXPECT_EQ(at("clock_mem_mhz"), "3201");
  EXPECT_EQ(at("clock_graphics_mhz"), "1965");
  EXPECT_EQ(at("pstate"), "0");
  EXPECT_EQ(at("util_gpu_pct"), "87");
  EXPECT_EQ(at("util_mem_pct"), "45");
  EXPECT_EQ(at("memory_used_bytes"), "1000000000");
  EXPECT_EQ(at("energy_mj"), "5000000");
  EXPECT_EQ(at("clock_reasons"), "0x4");
  EXPECT_EQ(at("clock_reason_names"), "sw_power_cap");
  EXPECT_EQ(at("sw_power_cap_ns"), "1234000");
  EXPECT_EQ(at("sync_boost_ns"), "0");
  EXPECT_EQ(at("hw_power_brake_ns"), "0");
}

TEST(csv, readings_without_a_value_are_empty_cells) {
  const std::vector<std::string> row = cells(csv_row(0.5, 1700000000, 0, empty_sample()));
  ASSERT_EQ(row.size(), 22U);
  EXPECT_EQ(row[0], "0.5000");
  EXPECT_EQ(row[1], "1700000000.0000");
  EXPECT_EQ(row[2], "0");
  for (std::size_t i = 3; i < row.size(); ++i) EXPECT_EQ(row[i], "") << "column " << i;

  telemetry::gpu_sample partial = full_sample();
  partial.power_w = reading<double>::unsupported();
  partial.clock_reasons = reading<std::uint64_t>::failed();
  const std::vector<std::string> some = cells(csv_row(0, 0, 0, partial));
  EXPECT_EQ(some[3], "");          // power_w
  EXPECT_EQ(some[4], "110.250");   // power_avg_w
  EXPECT_EQ(some[15], "");         // clock_reasons
  EXPECT_EQ(some[16], "");         // clock_reason_names
  EXPECT_EQ(some[17], "1234000");  // sw_power_cap_ns
}

TEST(json, sample_gives_null_and_lists_the_name_by_why) {
  telemetry::gpu_sample s = full_sample();
  s.temp_mem_c = reading<int>::unsupported();
  s.util_gpu_pct = reading<unsigned>::unsupported();
  s.power_w = reading<double>::failed();
  const nlohmann::json j = to_json(s);
  EXPECT_EQ(j["time_ns"], 123456789);
  EXPECT_EQ(j["temp_gpu_c"], 40);
  EXPECT_EQ(j["power_avg_w"], 110.25);
  EXPECT_EQ(j["clock_reasons"], 4);
  EXPECT_EQ(j["clock_reason_names"], nlohmann::json::array({"sw_power_cap"}));
  ASSERT_TRUE(j.contains("temp_mem_c"));
  EXPECT_TRUE(j["temp_mem_c"].is_null());
  EXPECT_TRUE(j["util_gpu_pct"].is_null());
  EXPECT_TRUE(j["power_w"].is_null());
  EXPECT_EQ(j["unsupported"], nlohmann::json::array({"temp_mem_c", "util_gpu_pct"}));
  EXPECT_EQ(j["failed"], nlohmann::json::array({"power_w"}));

  const nlohmann::json full = to_json(full_sample());
  EXPECT_FALSE(full.contains("unsupported"));
  EXPECT_FALSE(full.contains("failed"));
  for (const auto& [key, value] : full.items()) EXPECT_FALSE(value.is_null()) << key;

  const nlohmann::json none = to_json(empty_sample());
  EXPECT_FALSE(none.contains("clock_reason_names"));
  EXPECT_EQ(none["failed"], nlohmann::json::array({"power_w", "clock_reasons"}));
  EXPECT_EQ(none["unsupported"].size(), 16U);
}

TEST(json, identity_gives_null_and_lists_the_name_by_why) {
  telemetry::gpu_identity id = identity();
  id.temp_mem_max_c = reading<int>::unsupported();
  id.persistence_mode = reading<bool>::failed();
  const nlohmann::json j = to_json(id);
  EXPECT_EQ(j["name"], "NVIDIA H200");
  EXPECT_EQ(j["pci_bus_id"], "00000000:18:00.0");
  EXPECT_EQ(j["cuda_driver_version"], 13000);
  EXPECT_EQ(j["compute_capability"], 90);
  EXPECT_EQ(j["power_limit_w"], 700.0);
  EXPECT_EQ(j["memory_total_bytes"], 150000000000ULL);
  EXPECT_TRUE(j["temp_mem_max_c"].is_null());
  EXPECT_TRUE(j["persistence_mode"].is_null());
  EXPECT_EQ(j["unsupported"], nlohmann::json::array({"temp_mem_max_c"}));
  EXPECT_EQ(j["failed"], nlohmann::json::array({"persistence_mode"}));
  EXPECT_EQ(to_json(identity())["persistence_mode"], true);
}

TEST(json, processes_give_null_memory_when_unsupported) {
  std::vector<telemetry::gpu_process> processes(2);
  processes[0].pid = 4242;
  processes[0].used_memory_bytes = reading<std::uint64_t>::of(1048576);
  processes[0].name = "python3";
  processes[1].pid = 17;
  processes[1].graphics = true;
  const nlohmann::json j = to_json(processes);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2U);
  EXPECT_EQ(j[0]["pid"], 4242);
  EXPECT_EQ(j[0]["name"], "python3");
  EXPECT_EQ(j[0]["type"], "compute");
  EXPECT_EQ(j[0]["used_memory_bytes"], 1048576);
  EXPECT_FALSE(j[0].contains("unsupported"));
  EXPECT_EQ(j[1]["type"], "graphics");
  EXPECT_TRUE(j[1]["used_memory_bytes"].is_null());
  EXPECT_EQ(j[1]["unsupported"], nlohmann::json::array({"used_memory_bytes"}));
  EXPECT_TRUE(to_json(std::vector<telemetry::gpu_process>{}).is_array());
  EXPECT_TRUE(to_json(std::vector<telemetry::gpu_process>{}).empty());
}

TEST(processes, none_is_one_line) {
  EXPECT_EQ(format_gpu_processes(identity(), {}),
            "GPU 0: NVIDIA H200 (00000000:18:00.0): no process holds a context\n");
}

TEST(processes, lists_each_with_memory_and_name) {
  std::vector<telemetry::gpu_process> processes(2);
  processes[0].pid = 4242;
  processes[0].used_memory_bytes = reading<std::uint64_t>::of(512 * 1024 * 1024);
  processes[0].name = "python3";
  processes[1].pid = 17;
  processes[1].graphics = true;  // memory unsupported, name not visible
  EXPECT_EQ(format_gpu_processes(identity(), processes),
            "GPU 0: NVIDIA H200 (00000000:18:00.0): 2 processes hold a context and keep it from "
            "idling\n"
            "       pid  type      memory MiB  command\n"
            "      4242  compute          512  python3\n"
            "        17  graphics         n/a  (not visible from here)\n");
  processes.pop_back();
  EXPECT_EQ(lines(format_gpu_processes(identity(), processes)).front(),
            "GPU 0: NVIDIA H200 (00000000:18:00.0): 1 process holds a context and keeps it from "
            "idling");
}

TEST(cpu_sensors, empty_sensors_are_absent) {
  const std::string text = format_cpu_sensors({});
  EXPECT_EQ(text,
            "Host sensors\n"
            "  thermal zones         absent\n"
            "  hwmon                 absent\n"
            "  cpufreq               absent\n");
  EXPECT_EQ(count_of(text, "absent"), 3U);
}

TEST(cpu_sensors, shows_each_sensor_and_na_for_missing_values) {
  telemetry::cpu_sensors sensors;
  sensors.thermal_zones.push_back({"thermal_zone0", "x86_pkg_temp", reading<double>::of(45.04)});
  sensors.hwmon.push_back({"coretemp", "Core 0", reading<double>::of(44.0),
                           reading<double>::of(100.0), reading<double>::unsupported()});
  sensors.frequencies.push_back({0, reading<double>::of(2400.0), reading<double>::of(800.0),
                                 reading<double>::of(3500.0), "performance"});
  sensors.frequencies.push_back({1, reading<double>::of(3000.0), reading<double>::of(800.0),
                                 reading<double>::of(3500.0), "performance"});
  const std::string text = format_cpu_sensors(sensors);
  EXPECT_EQ(count_of(text, "absent"), 0U) << text;
  EXPECT_NE(text.find("thermal_zone0         45.0 C (x86_pkg_temp)"), std::string::npos) << text;
  EXPECT_NE(text.find("coretemp Core 0       44.0 C (max 100, critical n/a)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("2 CPUs, now 2400-3000 MHz, range 800 to 3500 MHz, governor performance"),
            std::string::npos)
      << text;
}

TEST(gpu_info, shows_values_and_na_for_readings_without_one) {
  const std::string full = format_gpu_info(identity(), full_sample(), {});
  EXPECT_EQ(lines(full).front(), "GPU 0: NVIDIA H200");
  EXPECT_NE(full.find("(CUDA 13.0, NVML 13.580.159.04)"), std::string::npos) << full;
  EXPECT_NE(full.find("compute capability    9.0"), std::string::npos) << full;
  EXPECT_NE(full.find("temperature [C]       GPU 40, memory 35"), std::string::npos) << full;
  EXPECT_NE(full.find("power [W]             now 120.0, average 110.2"), std::string::npos) << full;
  EXPECT_NE(full.find("clock-event reasons   sw_power_cap"), std::string::npos) << full;
  EXPECT_NE(full.find("processes             none"), std::string::npos) << full;
  EXPECT_EQ(count_of(full, "n/a"), 0U) << full;

  const std::string empty = format_gpu_info(identity(), empty_sample(), {});
  EXPECT_NE(empty.find("temperature [C]       GPU n/a, memory n/a"), std::string::npos) << empty;
  EXPECT_NE(empty.find("power [W]             now n/a, average n/a"), std::string::npos) << empty;
  EXPECT_NE(empty.find("energy [J]            n/a since"), std::string::npos) << empty;
  EXPECT_NE(empty.find("performance state     n/a"), std::string::npos) << empty;
  EXPECT_NE(empty.find("clock-event reasons   n/a"), std::string::npos) << empty;
}

}  // namespace
}  // namespace coolbench::report
