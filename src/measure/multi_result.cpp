// The spread of a figure across GPUs of one model (docs/measure.md, "Many GPUs").
#include "coolbench/measure/multi_result.hpp"

#include <algorithm>

namespace coolbench::measure {

bool device_run::failed() const { return !failure().empty(); }

std::string device_run::failure() const {
  if (!error.empty()) return error;
  if (!result) return "nothing was measured";
  const run_result& r = *result;
  if (r.final_release.starts_with("release failed")) return r.final_release;
  if (!r.complete && r.stop_reason != stop_reason::interrupted) {
    return to_string(r.stop_reason) + (r.error.empty() ? "" : ": " + r.error);
  }
  return {};
}

int multi_result::failures() const {
  return static_cast<int>(
      std::count_if(runs.begin(), runs.end(), [](const device_run& d) { return d.failed(); }));
}

std::optional<double> figure_of(const run_result& r) {
  if (r.contexts) return r.contexts->mean_ms;
  if (r.summary.count == 0) return std::nullopt;
  return r.summary.median_ms;
}

namespace {

model_spread spread_over(std::string model, std::vector<gpu_deviation> gpus) {
  model_spread s;
  s.model = std::move(model);
  std::sort(gpus.begin(), gpus.end(),
            [](const auto& a, const auto& b) { return a.ordinal < b.ordinal; });
  double sum = 0;
  s.min_ms = gpus.front().figure_ms;
  s.max_ms = gpus.front().figure_ms;
  s.fastest = s.slowest = gpus.front().ordinal;
  for (const auto& g : gpus) {
    sum += g.figure_ms;
    if (g.figure_ms < s.min_ms) {
      s.min_ms = g.figure_ms;
      s.fastest = g.ordinal;
    }
    if (g.figure_ms > s.max_ms) {
      s.max_ms = g.figure_ms;
      s.slowest = g.ordinal;
    }
  }
  s.mean_ms = sum / static_cast<double>(gpus.size());
  s.max_over_min = s.min_ms > 0 ? s.max_ms / s.min_ms - 1 : 0;
  for (auto& g : gpus) g.vs_mean = s.mean_ms > 0 ? g.figure_ms / s.mean_ms - 1 : 0;
  s.gpus = std::move(gpus);
  return s;
}

}  // namespace

std::vector<model_spread> spread_of(const std::vector<device_run>& runs) {
  std::vector<std::pair<std::string, std::vector<gpu_deviation>>> by_model;
  for (const auto& d : runs) {
    if (d.failed() || !d.result->complete) continue;
    const auto figure = figure_of(*d.result);
    if (!figure) continue;
    const auto& gpu = d.result->conditions.gpu;
    const std::string model = gpu && !gpu->name.empty() ? gpu->name : "unknown GPU";
    auto it = std::find_if(by_model.begin(), by_model.end(),
                           [&](const auto& m) { return m.first == model; });
    if (it == by_model.end()) it = by_model.insert(by_model.end(), {model, {}});
    it->second.push_back({d.ordinal, *figure, 0});
  }
  std::vector<model_spread> out;
  for (auto& [model, gpus] : by_model) {
    if (gpus.size() >= 2) out.push_back(spread_over(model, std::move(gpus)));
  }
  return out;
}

}  // namespace coolbench::measure
