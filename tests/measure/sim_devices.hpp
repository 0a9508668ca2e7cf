// A run on a host of several simulated GPUs (sim_gpu.hpp) through measure_devices, for the
// report's tests and sample documents: one model per GPU, one GPU whose workload fails.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "coolbench/measure/multi.hpp"
#include "measure/sim_gpu.hpp"

namespace coolbench::measure::sim {

/// GPU i runs models[i]; the GPU `failing` (if any) throws after 5 runs (it fell off the bus).
inline multi_result simulated_devices(const std::vector<gpu_model>& models, int failing,
                                      const protocol_options& options) {
  std::mutex mutex;
  std::map<int, std::unique_ptr<gpu>> gpus;
  std::vector<int> ordinals;
  for (int i = 0; i < static_cast<int>(models.size()); ++i) ordinals.push_back(i);
  const device_job_factory make = [&](int ordinal) {
    gpu* g = nullptr;
    {
      std::lock_guard lock(mutex);
      g = (gpus[ordinal] = std::make_unique<gpu>(models.at(ordinal))).get();
    }
    auto w = std::make_unique<workload>(*g);
    if (ordinal == failing) w->fail_run_after = 5;
    return device_job{std::move(w), std::make_unique<environment>(*g)};
  };
  return measure_devices(ordinals, make, options);
}

}  // namespace coolbench::measure::sim
