/// @file
/// Hidden state (docs/measure.md, "Hidden state"; docs/perf/hidden-state.md): what the GPU
/// carries from one workload to the next that no sensor shows. In the reference program a
/// GPT-2-shaped GEMM chain runs about 9 % slower on an H200 after a kernel with a large
/// shared-memory request or large bf16 GEMMs, with temperature, clocks and reason bits
/// unchanged; on an H100 the project's chain ran about 2 % faster. The sentinel is a short
/// GEMM chain, calibrated in a clean state of each CUDA context and measured again before and
/// after workloads; this header holds the decision (CPU only, so it is tested without a GPU)
/// and the isolations that clear the state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "coolbench/measure/options.hpp"
#include "coolbench/telemetry/gpu.hpp"

namespace coolbench::measure {

/// One sentinel check: its median, and the CUDA context it ran in (the device layer's
/// generation, which a release changes). A latency-bound sentinel's figure is drawn per
/// context, so a check is judged only against a calibration of the same context.
struct sentinel_reading {
  double median_ms = 0;
  std::uint64_t context = 0;
};

/// The sensors around a sentinel check (the telemetry's newest sample).
struct sensor_reading {
  std::optional<int> temp_c;
  std::optional<unsigned> sm_clock_mhz;
  std::optional<std::uint64_t> clock_reasons;  ///< clock_reason bits
};

/// The sensors a telemetry sample read (none where there is no sample).
[[nodiscard]] sensor_reading sensors_of(const std::optional<telemetry::gpu_sample>& sample);

/// The sentinel in a clean state: each check's median, their median (the reference) and
/// their spread relative to it (the noise a later check is judged against).
struct sentinel_calibration {
  double median_ms = 0;
  /// |check / median - 1| over the calibration's checks: the second largest from 4 checks on
  /// (one stray check does not raise the threshold), else the largest.
  double noise = 0;
  int checks = 0;
  std::vector<double> check_ms;  ///< each check's median, in order
  sensor_reading sensors;
  std::uint64_t context = 0;  ///< the context it was made in (sentinel_reading::context)
};

/// When a sentinel check counts as moved, and when the sensors count as unchanged.
struct sentinel_policy {
  // On H100s (docs/perf/hidden-state.md §14) a fresh process's first check sat +0.9 % (SD
  // 0.5 %, at most +1.8 %) off its calibration and the state at +3.9 % or more, while 5 checks'
  // largest deviation reached 1.6-2.0 %: 4 x that missed every state. The floor sits between.
  double min_shift = 0.025;       ///< never flag a change below this fraction
  double noise_factor = 2;        ///< nor below this many times the calibration's noise
  double temp_tolerance_c = 10;   ///< a larger change in temperature is a sensor change
  double clock_tolerance = 0.02;  ///< a larger relative change in SM clock is one too
};

/// One check against the calibration.
struct sentinel_check {
  std::string where;  ///< "start", "before burst 3", "after the run"
  double median_ms = 0;
  double reference_ms = 0;  ///< the calibration's median it was judged against
  double shift = 0;         ///< median / calibration - 1
  double threshold = 0;     ///< the |shift| beyond which it moved
  bool moved = false;
  bool judged = true;  ///< false: no calibration of its context to judge it against
  bool sensors_unchanged = true;
  std::string sensor_change;  ///< what changed, when something did
  std::string action;         ///< "cleared by touch (sentinel +0.1 %)", or empty

  /// Moved with every sensor unchanged: state no sensor shows.
  [[nodiscard]] bool hidden_state() const { return judged && moved && sensors_unchanged; }
  /// "hidden state: sentinel +9.3 %, sensors unchanged", "sentinel +0.2 %, within its noise
  /// (1.0 %)", "sentinel +12 %, sensors changed (SM clock 1980 -> 1755 MHz)".
  [[nodiscard]] std::string summary() const;
};

/// The calibration from the medians of several checks in a clean state (at least one).
/// Throws invalid_argument when `check_medians` is empty or holds a non-positive value.
[[nodiscard]] sentinel_calibration calibrate_sentinel(const std::vector<double>& check_medians,
                                                      const sensor_reading& sensors);

/// The median of one check's timings; throws invalid_argument when empty.
[[nodiscard]] double sentinel_median(std::vector<double> timings_ms);

/// Judges one check (its median) against the calibration.
[[nodiscard]] sentinel_check judge_sentinel(const sentinel_calibration& calibration,
                                            double median_ms, const sensor_reading& now,
                                            std::string where, const sentinel_policy& policy = {});

/// What a run's sentinel saw: the calibration and every check, in order.
struct hidden_state_record {
  sentinel_calibration calibration;  ///< the latest: one per CUDA context the checks ran in
  int calibrations = 0;
  std::vector<sentinel_check> checks;
  sentinel_kind sentinel = sentinel_kind::gemm_chain;  ///< what watched
  isolation applied = isolation::none;                 ///< what clears the state in this run
  int clearings = 0;                                   ///< isolations done because a check moved

  /// The line for a run's summary: "hidden state: sentinel +9.3 %, sensors unchanged (after
  /// the run)" for the first check that saw it, else "hidden state: none seen, …".
  [[nodiscard]] std::string summary() const;
};

}  // namespace coolbench::measure
