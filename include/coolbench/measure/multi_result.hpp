/// @file
/// The records of a run on several GPUs at once (`coolbench run --device all`, docs/measure.md
/// "Many GPUs"): each GPU's run as one GPU's run would be, and the spread of the figure across
/// GPUs of the same model. Data and arithmetic only, so the report renders them without the
/// protocol.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "coolbench/measure/result.hpp"

namespace coolbench::measure {

/// One GPU's part of a run on several GPUs.
struct device_run {
  int ordinal = -1;  ///< the CUDA ordinal
  /// The run's records; empty when its workload or environment could not be made (then
  /// `error` says why).
  std::optional<run_result> result;
  /// Why this GPU failed where the run's records do not say it: its workload could not be made
  /// or a worker error escaped the protocol; empty otherwise.
  std::string error;

  /// This GPU failed: nothing measured, a run cut short (not interrupted), or a release the
  /// device layer refused or that failed.
  [[nodiscard]] bool failed() const;
  /// What went wrong, in one line; empty when nothing did.
  [[nodiscard]] std::string failure() const;
};

/// One GPU's figure against the others of its model.
struct gpu_deviation {
  int ordinal = -1;
  double figure_ms = 0;
  double vs_mean = 0;  ///< figure / the model's mean − 1
};

/// The spread of the figure over the GPUs of one model that measured it.
struct model_spread {
  std::string model;                ///< the GPU's name, "NVIDIA H200"
  std::vector<gpu_deviation> gpus;  ///< in ordinal order
  double min_ms = 0;
  double max_ms = 0;
  double mean_ms = 0;
  double max_over_min = 0;  ///< max / min − 1
  int fastest = -1;         ///< ordinal of min_ms
  int slowest = -1;         ///< ordinal of max_ms
};

struct multi_result {
  std::vector<device_run> runs;      ///< one per GPU asked for, in the order given
  std::vector<model_spread> spread;  ///< per GPU model with two or more figures

  /// How many GPUs failed (device_run::failed).
  [[nodiscard]] int failures() const;
};

/// A run's figure: the mean of its contexts' medians when spread over contexts, else the
/// median of its kept samples; empty without a kept sample.
[[nodiscard]] std::optional<double> figure_of(const run_result& r);

/// The spread per GPU model over the runs that did not fail and have a figure; a model with
/// one such GPU has none. Models in the order their first GPU appears.
[[nodiscard]] std::vector<model_spread> spread_of(const std::vector<device_run>& runs);

}  // namespace coolbench::measure
