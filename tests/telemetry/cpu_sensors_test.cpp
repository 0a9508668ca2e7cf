#include "coolbench/telemetry/cpu_sensors.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace coolbench::telemetry {
namespace {

namespace fs = std::filesystem;

/// Builds a fake sysfs tree in a fresh temporary folder.
class cpu_sensors_test : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    m_root = fs::temp_directory_path() / ("coolbench_cpu_sensors_" + std::string(info->name()) +
                                          "_" + std::to_string(std::random_device{}()));
    fs::create_directories(m_root);
  }

  void TearDown() override {
    std::error_code ec;
    fs::remove_all(m_root, ec);
  }

  /// Writes `contents` to `relative` below the root, creating its folders.
  void write(const fs::path& relative, const std::string& contents) const {
    const fs::path file = m_root / relative;
    fs::create_directories(file.parent_path());
    std::ofstream(file) << contents;
  }

  void make_dir(const fs::path& relative) const { fs::create_directories(m_root / relative); }

  [[nodiscard]] const fs::path& root() const noexcept { return m_root; }

 private:
  fs::path m_root;
};

TEST_F(cpu_sensors_test, EmptyRootGivesEmptyLists) {
  const auto sensors = read_cpu_sensors(root());
  EXPECT_TRUE(sensors.thermal_zones.empty());
  EXPECT_TRUE(sensors.hwmon.empty());
  EXPECT_TRUE(sensors.frequencies.empty());
  EXPECT_TRUE(sensors.empty());
}

TEST_F(cpu_sensors_test, MissingRootGivesEmptyLists) {
  EXPECT_TRUE(read_cpu_sensors(root() / "does_not_exist").empty());
}

TEST_F(cpu_sensors_test, ThermalZonesParsedAndSortedNumerically) {
  write("class/thermal/thermal_zone10/type", "acpitz\n");
  write("class/thermal/thermal_zone10/temp", "30000\n");
  write("class/thermal/thermal_zone2/type", "x86_pkg_temp\n");
  write("class/thermal/thermal_zone2/temp", "45500\n");
  write("class/thermal/thermal_zone0/type", "cpu-thermal\n");
  write("class/thermal/thermal_zone0/temp", "-2000\n");
  write("class/thermal/cooling_device0/type", "Processor\n");

  const auto sensors = read_cpu_sensors(root());
  ASSERT_EQ(sensors.thermal_zones.size(), 3U);
  EXPECT_FALSE(sensors.empty());

  const auto& zones = sensors.thermal_zones;
  EXPECT_EQ(zones[0].zone, "thermal_zone0");
  EXPECT_EQ(zones[0].type, "cpu-thermal");
  ASSERT_TRUE(zones[0].temp_c.ok());
  EXPECT_DOUBLE_EQ(zones[0].temp_c.value, -2.0);

  EXPECT_EQ(zones[1].zone, "thermal_zone2");
  EXPECT_EQ(zones[1].type, "x86_pkg_temp");
  ASSERT_TRUE(zones[1].temp_c.ok());
  EXPECT_DOUBLE_EQ(zones[1].temp_c.value, 45.5);

  EXPECT_EQ(zones[2].zone, "thermal_zone10");
  EXPECT_EQ(zones[2].type, "acpitz");
  ASSERT_TRUE(zones[2].temp_c.ok());
  EXPECT_DOUBLE_EQ(zones[2].temp_c.value, 30.0);
}

TEST_F(cpu_sensors_test, MissingFileIsUnsupported) {
  make_dir("class/thermal/thermal_zone0");

  const auto sensors = read_cpu_sensors(root());
  ASSERT_EQ(sensors.thermal_zones.size(), 1U);
  EXPECT_EQ(sensors.thermal_zones[0].type, "");
  EXPECT_EQ(sensors.thermal_zones[0].temp_c.status, reading_status::unsupported);
}

TEST_F(cpu_sensors_test, GarbageOrEmptyValueIsFailed) {
  write("class/thermal/thermal_zone0/temp", "abc\n");
  write("class/thermal/thermal_zone1/temp", "42000x\n");
  write("class/thermal/thermal_zone2/temp", "\n");

  const auto sensors = read_cpu_sensors(root());
  ASSERT_EQ(sensors.thermal_zones.size(), 3U);
  for (const auto& zone : sensors.thermal_zones) {
    EXPECT_EQ(zone.temp_c.status, reading_status::failed) << zone.zone;
  }
}

TEST_F(cpu_sensors_test, UnreadableFileIsFailed) {
  // A folder where a file belongs exists but cannot be read as one, whatever
  // the user (permission bits do not stop root).
  make_dir("class/thermal/thermal_zone0/temp");

  const auto sensors = read_cpu_sensors(root());
  ASSERT_EQ(sensors.thermal_zones.size(), 1U);
  EXPECT_EQ(sensors.thermal_zones[0].temp_c.status, reading_status::failed);
}

TEST_F(cpu_sensors_test, HwmonWithAndWithoutLabels) {
  write("class/hwmon/hwmon0/name", "coretemp\n");
  write("class/hwmon/hwmon0/temp1_input", "50000\n");
  write("class/hwmon/hwmon0/temp1_label", "Package id 0\n");
  write("class/hwmon/hwmon0/temp1_max", "80000\n");
  write("class/hwmon/hwmon0/temp1_crit", "100000\n");
  write("class/hwmon/hwmon0/temp10_input", "47000\n");
  write("class/hwmon/hwmon0/temp2_input", "48000\n");
  write("class/hwmon/hwmon0/temp2_max", "oops\n");

  const auto sensors = read_cpu_sensors(root());
  ASSERT_EQ(sensors.hwmon.size(), 3U);

  const auto& labelled = sensors.hwmon[0];
  EXPECT_EQ(labelled.chip, "coretemp");
  EXPECT_EQ(labelled.label, "Package id 0");
  ASSERT_TRUE(labelled.temp_c.ok());
  EXPECT_DOUBLE_EQ(labelled.temp_c.value, 50.0);
  ASSERT_TRUE(labelled.max_c.ok());
  EXPECT_DOUBLE_EQ(labelled.max_c.value, 80.0);
  ASSERT_TRUE(labelled.crit_c.ok());
  EXPECT_DOUBLE_EQ(labelled.crit_c.value, 100.0);

  const auto& unlabelled = sensors.hwmon[1];
  EXPECT_EQ(unlabelled.chip, "coretemp");
  EXPECT_EQ(unlabelled.label, "temp2");
  ASSERT_TRUE(unlabelled.temp_c.ok());
  EXPECT_DOUBLE_EQ(unlabelled.temp_c.value, 48.0);
  EXPECT_EQ(unlabelled.max_c.status, reading_status::failed);
  EXPECT_EQ(unlabelled.crit_c.status, reading_status::unsupported);

  EXPECT_EQ(sensors.hwmon[2].label, "temp10");
  EXPECT_DOUBLE_EQ(sensors.hwmon[2].temp_c.value_or(0.0), 47.0);
}

TEST_F(cpu_sensors_test, HwmonSortedByChipNumber) {
  write("class/hwmon/hwmon10/name", "nvme\n");
  write("class/hwmon/hwmon10/temp1_input", "35000\n");
  write("class/hwmon/hwmon2/name", "k10temp\n");
  write("class/hwmon/hwmon2/temp1_input", "55000\n");
  make_dir("class/hwmon/hwmon3");  // a chip with no temperatures (fans only)
  write("class/hwmon/hwmon3/name", "nct6775\n");

  const auto sensors = read_cpu_sensors(root());
  ASSERT_EQ(sensors.hwmon.size(), 2U);
  EXPECT_EQ(sensors.hwmon[0].chip, "k10temp");
  EXPECT_EQ(sensors.hwmon[1].chip, "nvme");
}

TEST_F(cpu_sensors_test, HwmonOlderDeviceLayout) {
  write("class/hwmon/hwmon1/device/name", "it87\n");
  write("class/hwmon/hwmon1/device/temp1_input", "41000\n");
  write("class/hwmon/hwmon1/device/temp1_label", "SYSTIN\n");
  write("class/hwmon/hwmon1/device/temp1_crit", "95000\n");

  const auto sensors = read_cpu_sensors(root());
  ASSERT_EQ(sensors.hwmon.size(), 1U);
  const auto& temperature = sensors.hwmon[0];
  EXPECT_EQ(temperature.chip, "it87");
  EXPECT_EQ(temperature.label, "SYSTIN");
  ASSERT_TRUE(temperature.temp_c.ok());
  EXPECT_DOUBLE_EQ(temperature.temp_c.value, 41.0);
  EXPECT_EQ(temperature.max_c.status, reading_status::unsupported);
  ASSERT_TRUE(temperature.crit_c.ok());
  EXPECT_DOUBLE_EQ(temperature.crit_c.value, 95.0);
}

TEST_F(cpu_sensors_test, CpufreqConvertsKhzToMhzAndSortsCpus) {
  const fs::path cpu = "devices/system/cpu";
  write(cpu / "cpu10/cpufreq/scaling_cur_freq", "1200000\n");
  write(cpu / "cpu2/cpufreq/scaling_cur_freq", "2400000\n");
  write(cpu / "cpu2/cpufreq/scaling_min_freq", "800000\n");
  write(cpu / "cpu2/cpufreq/scaling_max_freq", "3600500\n");
  write(cpu / "cpu2/cpufreq/scaling_governor", "performance\n");
  make_dir(cpu / "cpu3");  // no cpufreq driver: left out
  write(cpu / "cpufreq/policy0/scaling_cur_freq", "1\n");
  write(cpu / "cpuidle/current_driver", "intel_idle\n");

  const auto sensors = read_cpu_sensors(root());
  ASSERT_EQ(sensors.frequencies.size(), 2U);

  const auto& cpu2 = sensors.frequencies[0];
  EXPECT_EQ(cpu2.cpu, 2);
  ASSERT_TRUE(cpu2.cur_mhz.ok());
  EXPECT_DOUBLE_EQ(cpu2.cur_mhz.value, 2400.0);
  ASSERT_TRUE(cpu2.min_mhz.ok());
  EXPECT_DOUBLE_EQ(cpu2.min_mhz.value, 800.0);
  ASSERT_TRUE(cpu2.max_mhz.ok());
  EXPECT_DOUBLE_EQ(cpu2.max_mhz.value, 3600.5);
  EXPECT_EQ(cpu2.governor, "performance");

  const auto& cpu10 = sensors.frequencies[1];
  EXPECT_EQ(cpu10.cpu, 10);
  EXPECT_DOUBLE_EQ(cpu10.cur_mhz.value_or(0.0), 1200.0);
  EXPECT_EQ(cpu10.min_mhz.status, reading_status::unsupported);
  EXPECT_EQ(cpu10.max_mhz.status, reading_status::unsupported);
  EXPECT_EQ(cpu10.governor, "");
}

TEST_F(cpu_sensors_test, CpufreqFallsBackToCpuinfo) {
  const fs::path dir = "devices/system/cpu/cpu0/cpufreq";
  write(dir / "cpuinfo_cur_freq", "1500000\n");
  write(dir / "cpuinfo_min_freq", "400000\n");
  write(dir / "cpuinfo_max_freq", "4200000\n");
  write(dir / "scaling_governor", "schedutil\n");

  const auto sensors = read_cpu_sensors(root());
  ASSERT_EQ(sensors.frequencies.size(), 1U);
  const auto& frequency = sensors.frequencies[0];
  EXPECT_EQ(frequency.cpu, 0);
  ASSERT_TRUE(frequency.cur_mhz.ok());
  EXPECT_DOUBLE_EQ(frequency.cur_mhz.value, 1500.0);
  ASSERT_TRUE(frequency.min_mhz.ok());
  EXPECT_DOUBLE_EQ(frequency.min_mhz.value, 400.0);
  ASSERT_TRUE(frequency.max_mhz.ok());
  EXPECT_DOUBLE_EQ(frequency.max_mhz.value, 4200.0);
  EXPECT_EQ(frequency.governor, "schedutil");
}

TEST_F(cpu_sensors_test, CpufreqPrefersScalingOverCpuinfo) {
  const fs::path dir = "devices/system/cpu/cpu0/cpufreq";
  write(dir / "scaling_max_freq", "3000000\n");
  write(dir / "cpuinfo_max_freq", "4200000\n");

  const auto sensors = read_cpu_sensors(root());
  ASSERT_EQ(sensors.frequencies.size(), 1U);
  EXPECT_DOUBLE_EQ(sensors.frequencies[0].max_mhz.value_or(0.0), 3000.0);
}

// The machine running the tests may have no sensors at all; only check that
// reading the real tree does not throw.
TEST(cpu_sensors_real_sys, DoesNotThrow) { EXPECT_NO_THROW((void)read_cpu_sensors("/sys")); }

}  // namespace
}  // namespace coolbench::telemetry
