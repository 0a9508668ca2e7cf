// A session's plan: the model specialized for one binding of its symbolic
// dimensions, and on a device backend what its runs keep between them (the
// constants' device copies, the memory plan and arena, the CUDA graph).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coolbench/engine/session.hpp"
#include "engine/backend.hpp"
#include "engine/memory_plan.hpp"

namespace coolbench::engine {

struct session::plan {
  symbol_bindings bound;
  /// The nodes to run (folded and dead ones gone, fused on a device
  /// backend), with the folded values and the model's initializers they read.
  graph g;
  /// Model initializers moved here from the session's graph (given back when
  /// the plan goes: session::return_borrowed).
  std::vector<std::string> borrowed;
  std::map<std::string, shape_info> shapes;  ///< before fusion
  /// The first value whose shape is not static; empty when all are.
  std::string dynamic_value;
  std::map<std::string, std::size_t> fusion_counts;
  /// Per node: the values it reads last (dropped after it), outputs excepted.
  std::vector<std::vector<std::string>> drops;

  // Device backends.
  std::map<std::string, tensor> resident;  ///< device copies of the constants
  std::map<std::string, tensor> staged;    ///< device copies of the inputs
  std::unique_ptr<run_memory> memory;      ///< static plans with memory_plan on
  std::unique_ptr<recorded_work> work;     ///< the CUDA graph
  /// Why this plan does not run as a graph (beyond the options); empty while it may.
  std::string not_recordable;
  bool launch_waits = false;  ///< a node waits for the device (not recordable)
  /// The context generation an eager run of this plan last completed in:
  /// recording needs the kernels loaded and the handles made in it.
  std::optional<std::uint64_t> warm_generation;
};

}  // namespace coolbench::engine
