// The sentinel's decision on simulated figures: a moved sentinel with every sensor steady is
// hidden state; within its noise it is not; with a sensor changed it is the sensor's doing.
#include "coolbench/measure/hidden_state.hpp"

#include <gtest/gtest.h>

#include <random>
#include <utility>

#include "coolbench/core/error.hpp"
#include "coolbench/telemetry/clock_reasons.hpp"

namespace coolbench::measure {
namespace {

const sensor_reading nominal{40, 1980, 0};
const auto idle_bit = static_cast<std::uint64_t>(telemetry::clock_reason::gpu_idle);

/// A calibration from 5 checks spread ±0.3 % around 0.040 ms.
sentinel_calibration clean() {
  return calibrate_sentinel({0.0400, 0.0401, 0.0399, 0.04012, 0.03988}, nominal);
}

TEST(HiddenState, CalibrationTakesTheMedianAndTheSecondLargestDeviation) {
  const auto c = clean();
  EXPECT_DOUBLE_EQ(c.median_ms, 0.0400);
  EXPECT_NEAR(c.noise, 0.003, 1e-9);
  EXPECT_EQ(c.checks, 5);
  EXPECT_EQ(c.check_ms, (std::vector<double>{0.0400, 0.0401, 0.0399, 0.04012, 0.03988}));
}

TEST(HiddenState, OneStrayCheckDoesNotRaiseTheNoise) {
  // Four checks within 0.2 %, one 2 % slow (as H100 calibrations had, hidden-state.md §14).
  const auto c = calibrate_sentinel({0.2100, 0.2102, 0.2098, 0.2142, 0.2101}, nominal);
  EXPECT_NEAR(c.noise, 0.3 / 210.1, 1e-9);  // the 0.2098 check, not the 0.2142
  // Up to three checks, the largest deviation is all there is.
  EXPECT_NEAR(calibrate_sentinel({0.2100, 0.2142, 0.2100}, nominal).noise, 0.02, 1e-9);
}

TEST(HiddenState, CalibrationRefusesNothingAndNonPositiveFigures) {
  EXPECT_THROW((void)calibrate_sentinel({}, nominal), invalid_argument);
  EXPECT_THROW((void)calibrate_sentinel({0.04, 0.0}, nominal), invalid_argument);
  EXPECT_THROW((void)sentinel_median({}), invalid_argument);
}

TEST(HiddenState, MedianOfAnEvenCountIsTheMeanOfTheMiddleTwo) {
  EXPECT_DOUBLE_EQ(sentinel_median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(sentinel_median({5, 1, 3}), 3);
}

TEST(HiddenState, AMoveWithSteadySensorsIsHiddenState) {
  const auto c = judge_sentinel(clean(), 0.0400 * 1.093, nominal, "after the run");
  EXPECT_TRUE(c.moved);
  EXPECT_TRUE(c.sensors_unchanged);
  EXPECT_TRUE(c.hidden_state());
  EXPECT_EQ(c.summary(), "hidden state: sentinel +9.3 %, sensors unchanged");
}

TEST(HiddenState, WithinTheNoiseIsNotAMove) {
  const auto c = judge_sentinel(clean(), 0.0400 * 1.008, nominal, "start");
  EXPECT_FALSE(c.moved);
  EXPECT_FALSE(c.hidden_state());
  EXPECT_NEAR(c.threshold, 0.025, 1e-9);  // the 2.5 % floor, above 2 x the calibration's 0.3 %
  EXPECT_EQ(c.summary(), "sentinel +0.8 %, within its noise (2.5 %)");
  EXPECT_DOUBLE_EQ(c.reference_ms, clean().median_ms);
}

TEST(HiddenState, ANoisyCalibrationRaisesTheThreshold) {
  const auto noisy = calibrate_sentinel({0.040, 0.042, 0.038}, nominal);  // ±5 %
  const auto c = judge_sentinel(noisy, 0.040 * 1.093, nominal, "start");
  EXPECT_NEAR(c.threshold, 0.10, 1e-9);
  EXPECT_FALSE(c.moved);
}

TEST(HiddenState, AFasterSentinelCountsToo) {
  // A calibration taken in the disturbed state shows up as a later check that is faster.
  EXPECT_TRUE(judge_sentinel(clean(), 0.0400 * 0.90, nominal, "start").hidden_state());
}

TEST(HiddenState, AClockDropIsTheSensorsNotHiddenState) {
  sensor_reading hot = nominal;
  hot.sm_clock_mhz = 1755;
  const auto c = judge_sentinel(clean(), 0.0400 * 1.12, hot, "before burst 4");
  EXPECT_TRUE(c.moved);
  EXPECT_FALSE(c.sensors_unchanged);
  EXPECT_FALSE(c.hidden_state());
  EXPECT_EQ(c.summary(), "sentinel +12.0 %, sensors changed (SM clock 1980 -> 1755 MHz)");
}

TEST(HiddenState, ATemperatureStepAndAPowerCapAreSensorChanges) {
  sensor_reading warm = nominal;
  warm.temp_c = 62;
  EXPECT_FALSE(judge_sentinel(clean(), 0.044, warm, "x").sensors_unchanged);
  sensor_reading capped = nominal;
  capped.clock_reasons = static_cast<std::uint64_t>(telemetry::clock_reason::sw_power_cap);
  const auto c = judge_sentinel(clean(), 0.044, capped, "x");
  EXPECT_FALSE(c.sensors_unchanged);
  EXPECT_NE(c.sensor_change.find("sw_power_cap"), std::string::npos) << c.sensor_change;
}

TEST(HiddenState, IdleBitAndSmallDriftAreNotSensorChanges) {
  sensor_reading idle{44, 345, idle_bit};  // idle, at the idle clock, 4 C warmer
  EXPECT_TRUE(judge_sentinel(clean(), 0.0437, idle, "x").hidden_state());
  sensor_reading unknown{};  // readings missing: nothing to compare, nothing changed
  EXPECT_TRUE(judge_sentinel(clean(), 0.0437, unknown, "x").sensors_unchanged);
}

/// 1000 simulated trials: a calibration of 5 checks, then one check at `level` times the clean
/// figure and one clean `bias` slow (a process's first check), each check scattered by
/// `scatter`, and the calibration's last check `stray` slow. How many of each were flagged.
std::pair<int, int> simulated_trials(unsigned seed, double clean_ms, double scatter, double level,
                                     double bias = 0, double stray = 0) {
  std::mt19937 random(seed);
  std::normal_distribution<double> noise(0.0, scatter);
  auto check = [&](double l) { return clean_ms * l * (1 + noise(random)); };
  int flagged_disturbed = 0;
  int flagged_clean = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    std::vector<double> calibration;
    for (int i = 0; i < 5; ++i) calibration.push_back(check(i == 4 ? 1.0 + stray : 1.0));
    const auto c = calibrate_sentinel(calibration, nominal);
    flagged_disturbed += judge_sentinel(c, check(level), nominal, "d").hidden_state() ? 1 : 0;
    flagged_clean += judge_sentinel(c, check(1.0 + bias), nominal, "c").hidden_state() ? 1 : 0;
  }
  return {flagged_disturbed, flagged_clean};
}

/// The detection target on simulated figures: a sentinel whose checks scatter like the
/// calibration's flags a +9 % state in every trial and never a clean one.
TEST(HiddenState, SimulatedTrialsFlagDisturbedAndNotClean) {
  const auto [flagged_disturbed, flagged_clean] = simulated_trials(7, 0.040, 0.002, 1.09);
  EXPECT_EQ(flagged_disturbed, 1000);
  EXPECT_EQ(flagged_clean, 0);
}

/// The bench victim's move on an H100 (2.2 % faster, docs/perf/hidden-state.md §8) is below the
/// 2.5 % floor: not flagged even with checks that scatter by 0.1 % (a documented limit: a fresh
/// process's first check alone is up to 1.8 % off).
TEST(HiddenState, AMoveBelowTheFloorIsNotFlagged) {
  const auto [flagged_disturbed, flagged_clean] = simulated_trials(11, 0.25, 0.001, 0.978);
  EXPECT_LE(flagged_disturbed, 10);  // only where the scatter adds 0.3 % to it
  EXPECT_EQ(flagged_clean, 0);
}

/// The H100s of 2026-12-06 (docs/perf/hidden-state.md §14): a fresh process's first check
/// +0.86 % off its calibration (SD 0.47 %), one calibration check 2 % slow, the state the
/// smallest seen (+3.9 %). The rule of 4 x the largest deviation let every such state pass; with
/// the stray check left out and the 2.5 % floor, 99 in 100 are flagged and no clean check.
TEST(HiddenState, SimulatedTrialsFlagTheH100StateDespiteAStrayCalibrationCheck) {
  const auto [flagged_disturbed, flagged_clean] =
      simulated_trials(13, 0.21, 0.0047, 1.039, 0.0086, 0.02);
  EXPECT_GE(flagged_disturbed, 990);
  EXPECT_LE(flagged_clean, 1);
}

TEST(HiddenState, RecordSummaryNamesTheFirstHiddenState) {
  hidden_state_record r;
  r.calibration = clean();
  r.applied = isolation::touch;
  r.checks.push_back(judge_sentinel(r.calibration, 0.0401, nominal, "start"));
  EXPECT_EQ(r.summary(),
            "hidden state: none seen, the sentinel within its noise in 1 checks (isolation touch)");
  r.checks.push_back(judge_sentinel(r.calibration, 0.04368, nominal, "after the run"));
  EXPECT_EQ(r.summary(), "hidden state: sentinel +9.2 %, sensors unchanged (after the run)");
}

TEST(HiddenState, IsolationNames) {
  EXPECT_EQ(to_string(isolation::touch), "touch");
  EXPECT_EQ(parse_isolation("process"), isolation::process);
  EXPECT_THROW((void)parse_isolation("reset"), invalid_argument);
  EXPECT_EQ(isolation_names().size(), 4U);
}

TEST(hidden_state, the_sensors_of_a_sample_are_what_it_read) {
  EXPECT_FALSE(sensors_of(std::nullopt).temp_c);
  telemetry::gpu_sample t;
  t.temp_gpu_c = telemetry::reading<int>::of(41);
  t.clock_sm_mhz = telemetry::reading<unsigned>::failed();
  t.clock_reasons = telemetry::reading<std::uint64_t>::of(4);
  const sensor_reading s = sensors_of(t);
  EXPECT_EQ(s.temp_c, 41);
  EXPECT_FALSE(s.sm_clock_mhz);
  EXPECT_EQ(s.clock_reasons, 4U);
}

}  // namespace
}  // namespace coolbench::measure
