// The elementwise pass: a maximal tree of elementwise nodes over one output
// (broadcast inputs allowed), whose intermediates nothing else reads,
// becomes one FusedElementwise node running a compiled per-element program.
#include "engine/fusion/passes.hpp"

#include "engine/fusion/fusion_graph.hpp"

namespace coolbench::engine::fusion_detail {
namespace {

constexpr std::size_t k_max_members = 40;

// The members of the tree ending at `root`: producers of the members'
// inputs join while every reader of what they make is a member already.
std::set<std::size_t> grow(const graph& g, const graph_index& index, const fusion_context& context,
                           std::size_t root) {
  std::set<std::size_t> members{root};
  for (bool grew = true; grew && members.size() < k_max_members;) {
    grew = false;
    for (const std::size_t m : std::set<std::size_t>(members)) {
      for (const auto& name : g.nodes[m].inputs) {
        const auto p = index.producer(name);
        if (!p || members.contains(*p) || !ew_member_ok(g, context, g.nodes[*p])) continue;
        if (!index.only_read_by(name, members)) continue;
        members.insert(*p);
        grew = true;
        if (members.size() >= k_max_members) break;
      }
      if (grew) break;  // the set changed under the loop
    }
  }
  return members;
}

bool fuse_one(graph& g, const fusion_context& context) {
  const graph_index index(g);
  for (std::size_t root = g.nodes.size(); root-- > 0;) {
    if (!ew_member_ok(g, context, g.nodes[root])) continue;
    const std::set<std::size_t> members = grow(g, index, context, root);
    if (members.size() < 2) continue;
    const auto compiled =
        ew_compile(g, context, std::vector<std::size_t>(members.begin(), members.end()));
    if (!compiled) continue;
    node fused = fused_node("FusedElementwise", g.nodes[root]);
    fused.inputs = compiled->inputs;
    fused.outputs = {g.nodes[root].outputs[0]};
    ew_to_attributes(compiled->program, fused);
    fused.attributes["output_type"] =
        static_cast<std::int64_t>(*type_of(context, g.nodes[root].outputs[0]));
    // The shape, since one-element constants (of any rank) became immediates.
    fused.attributes["shape"] = *static_shape(context, g.nodes[root].outputs[0]);
    if (!target_runs(context, fused)) continue;
    replace_nodes(g, members, std::move(fused));
    return true;
  }
  return false;
}

}  // namespace

std::size_t fuse_elementwise_chains(graph& g, const fusion_context& context) {
  std::size_t count = 0;
  while (fuse_one(g, context)) ++count;
  return count;
}

}  // namespace coolbench::engine::fusion_detail
