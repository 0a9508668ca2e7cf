// Fusion passes: rewrite a specialized graph (every shape known, folded
// values as initializers) so that a device backend runs fewer, larger
// kernels. A pass replaces a pattern of ONNX nodes by one node of the
// k_fused_domain whose outputs keep the pattern's output names, so shapes,
// consumers and graph outputs stay as they were. A pass only makes a node
// the target backend supports (backend::refuses), so the CPU reference never
// sees fused ops and every fusion can be checked against it.
#pragma once

#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "coolbench/engine/graph.hpp"
#include "coolbench/engine/passes.hpp"

namespace coolbench::engine {

class backend;

/// The domain of the nodes fusion passes make.
inline constexpr std::string_view k_fused_domain = "coolbench";

/// What a pass may read: the shapes of the graph's values before any pass
/// ran (a pass keeps its outputs' names, so they stay right) and the backend
/// whose nodes it makes.
struct fusion_context {
  const std::map<std::string, shape_info>& shapes;
  const backend& target;
};

/// One rewrite over the whole graph; returns how many patterns it replaced.
using fusion_pass = std::size_t (*)(graph& g, const fusion_context& context);

struct fusion_entry {
  std::string_view name;  ///< for reports: "attention", "gemm_epilogue"
  fusion_pass apply;
};

/// The passes in the order they run: larger patterns first, so a smaller
/// one does not take a node a larger one needs.
[[nodiscard]] std::span<const fusion_entry> fusion_passes();

/// Runs every pass once, in order; returns the number of rewrites per pass
/// (passes that replaced nothing are left out).
std::map<std::string, std::size_t> fuse_for_backend(graph& g, const fusion_context& context);

}  // namespace coolbench::engine
