// coolbench nodes: where a model's time goes, node by node (docs/cli/nodes.md).
// Not a measurement under the protocol: one context, no gating; the shares
// say which nodes to look at, `coolbench run` says what the model costs.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help.hpp"
#include "cli/model_choice.hpp"
#include "coolbench/core/error.hpp"
#include "coolbench/device/kernel_trace.hpp"
#include "coolbench/engine/model.hpp"
#include "coolbench/engine/session.hpp"
#include "coolbench/measure/workload.hpp"
#include "coolbench/report.hpp"

namespace coolbench::cli {
namespace {

struct nodes_options {
  std::string model;
  std::string device;
  std::vector<std::string> dims;
  bool no_cuda_graph = false;
  std::size_t runs = 20;
  std::size_t top = 15;
  std::string json_path;
  bool kernels = false;
};

struct op_total {
  std::size_t count = 0;
  double ms = 0.0;
};

// "Gemm", or "coolbench.FusedAttention" for a node of another domain.
std::string op_name(const engine::node_time& t) {
  return t.domain.empty() || t.domain == "ai.onnx" ? t.op_type : t.domain + "." + t.op_type;
}

void print_profile(const measure::model_node_profile& p, std::size_t top) {
  double total = 0.0;
  std::map<std::string, op_total> by_op;
  for (const auto& t : p.nodes) {
    total += t.mean_ms;
    auto& entry = by_op[op_name(t)];
    ++entry.count;
    entry.ms += t.mean_ms;
  }
  const auto share = [&](double ms) { return total > 0.0 ? 100.0 * ms / total : 0.0; };
  fmt::print("{}\n", p.description);
  fmt::print("a run as launched ({}): least {:.4f} ms, median {:.4f} ms of {} runs\n", p.execution,
             p.least_run_ms, p.median_run_ms, p.runs);
  fmt::print("node by node (a mark between nodes, mean of {} runs): {} nodes, {:.4f} ms in all\n\n",
             p.runs, p.nodes.size(), total);

  std::vector<std::pair<std::string, op_total>> ops(by_op.begin(), by_op.end());
  std::sort(ops.begin(), ops.end(),
            [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
  fmt::print("{:<36} {:>6} {:>10} {:>7} {:>10}\n", "operator", "nodes", "total ms", "share",
             "mean us");
  for (const auto& [name, t] : ops) {
    fmt::print("{:<36} {:>6} {:>10.4f} {:>6.1f}% {:>10.2f}\n", name, t.count, t.ms, share(t.ms),
               1000.0 * t.ms / static_cast<double>(t.count));
  }

  std::vector<const engine::node_time*> slowest;
  for (const auto& t : p.nodes) slowest.push_back(&t);
  std::sort(slowest.begin(), slowest.end(),
            [](const auto* a, const auto* b) { return a->mean_ms > b->mean_ms; });
  if (slowest.size() > top) slowest.resize(top);
  if (slowest.empty()) return;
  fmt::print("\n{:<44} {:<28} {:>9} {:>9} {:>7}\n", "slowest nodes", "operator", "mean ms",
             "min ms", "share");
  for (const auto* t : slowest) {
    fmt::print("{:<44} {:<28} {:>9.4f} {:>9.4f} {:>6.1f}%\n", t->name.substr(0, 44),
               op_name(*t).substr(0, 28), t->mean_ms, t->min_ms, share(t->mean_ms));
    if (!t->detail.empty()) fmt::print("    {}\n", t->detail);  // what the backend chose
  }
}

// The traced runs: where the GPU was busy, which kernels took the time, and
// the shared memory each asked for and ran with.
void print_kernels(const device::kernel_runs& k, std::size_t dropped, std::size_t top) {
  const double idle = k.span_us - k.busy_us;
  const std::size_t gaps = k.kernels_per_run > 0 ? k.kernels_per_run - 1 : 0;
  fmt::print(
      "\nkernels of a run as launched (CUPTI, {} runs): {} kernels a run; the GPU ran kernels "
      "{:.4f} ms of a {:.4f} ms span ({:.1f}%), idle between them {:.4f} ms ({:.2f} us a gap)\n",
      k.runs, k.kernels_per_run, k.busy_us / 1e3, k.span_us / 1e3,
      k.span_us > 0 ? 100.0 * k.busy_us / k.span_us : 0.0, idle / 1e3,
      gaps > 0 ? idle / static_cast<double>(gaps) : 0.0);
  if (dropped > 0)
    fmt::print("({} kernel records dropped by CUPTI: the figures miss them)\n", dropped);
  if (k.runs == 0) return;
  fmt::print("{:<48} {:>6} {:>9} {:>7} {:>9} {:>9} {:>8}\n", "kernel", "a run", "us a run", "share",
             "mean us", "least us", "smem KB");
  const auto runs = static_cast<double>(k.runs);
  for (std::size_t i = 0; i < k.kernels.size() && i < top; ++i) {
    const auto& t = k.kernels[i];
    const std::string name = device::short_kernel_name(t.name);
    // The configuration the driver chose, where CUPTI reports one.
    const std::string config =
        t.shared_executed > 0 ? fmt::format(" of {:.0f}", t.shared_executed / 1024.0) : "";
    fmt::print("{:<48} {:>6.1f} {:>9.2f} {:>6.1f}% {:>9.2f} {:>9.2f} {:>8.0f}{}\n",
               name.substr(0, 48), static_cast<double>(t.calls) / runs, t.total_us / runs,
               k.busy_us > 0 ? 100.0 * t.total_us / runs / k.busy_us : 0.0,
               t.total_us / static_cast<double>(t.calls), t.least_us,
               (t.dynamic_shared + t.static_shared) / 1024.0, config);
  }
  if (k.kernels.size() > top)
    fmt::print("({} more kernels; --json has them all)\n", k.kernels.size() - top);
}

nlohmann::json kernels_json(const device::kernel_runs& k, std::size_t dropped) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& t : k.kernels) {
    list.push_back({{"name", t.name},
                    {"short_name", device::short_kernel_name(t.name)},
                    {"calls", t.calls},
                    {"total_us", t.total_us},
                    {"least_us", t.least_us},
                    {"static_shared_bytes", t.static_shared},
                    {"dynamic_shared_bytes", t.dynamic_shared},
                    {"shared_executed_bytes", t.shared_executed}});
  }
  return {{"runs", k.runs},
          {"split_at_the_hold", k.marked},
          {"kernels_per_run", k.kernels_per_run},
          {"span_us", k.span_us},
          {"busy_us", k.busy_us},
          {"dropped", dropped},
          {"kernels", std::move(list)}};
}

nlohmann::json profile_json(const measure::model_node_profile& p) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& t : p.nodes) {
    nodes.push_back({{"name", t.name},
                     {"op_type", t.op_type},
                     {"domain", t.domain},
                     {"mean_ms", t.mean_ms},
                     {"min_ms", t.min_ms},
                     {"detail", t.detail}});
  }
  nlohmann::json doc = {{"schema", "coolbench.nodes/1"},  {"model", p.description},
                        {"execution", p.execution},       {"runs", p.runs},
                        {"least_run_ms", p.least_run_ms}, {"median_run_ms", p.median_run_ms},
                        {"nodes", std::move(nodes)}};
  if (p.kernels) doc["kernel_trace"] = kernels_json(*p.kernels, p.kernels_dropped);
  return doc;
}

int run_nodes(const nodes_options& o) {
  auto dims = parse_dims(o.dims);
  const std::string backend = model_backend(o.device, false);
  if (o.kernels && backend == "cpu") {
    fmt::print(stderr,
               "coolbench nodes: --kernels traces GPU kernels; the CPU backend runs none\n");
    return exit_usage;
  }
  std::filesystem::path model = o.model;
  if (model.empty()) {
    const bool half = backend != "cpu";
    model = default_model(half, false);
    dims.try_emplace("batch", 1);
    dims.try_emplace("sequence", 128);
    fmt::print("no model given: GPT-2 small {} at batch 1, sequence 128 on {}\n",
               half ? "fp16" : "fp32", backend);
  }
  measure::model_node_profile profile;
  try {
    profile =
        measure::profile_model_nodes(model, backend, dims, !o.no_cuda_graph, o.runs, o.kernels);
  } catch (const engine::model_error& e) {
    std::fflush(stdout);
    fmt::print(stderr, "coolbench nodes: {}\n", e.what());
    return exit_bad_device;  // documented: a file that is no model, or one the backend cannot run
  } catch (const device::kernel_trace_unavailable& e) {  // --kernels where CUPTI cannot trace
    std::fflush(stdout);
    fmt::print(stderr, "coolbench nodes: --kernels: {}\n", e.what());
    return exit_error;
  }
  print_profile(profile, o.top);
  if (profile.kernels) print_kernels(*profile.kernels, profile.kernels_dropped, o.top);
  if (!o.json_path.empty()) {
    report::write_text_atomically(o.json_path, profile_json(profile).dump(1) + "\n");
  }
  return exit_ok;
}

}  // namespace

command add_nodes_command(CLI::App& parent) {
  auto o = std::make_shared<nodes_options>();
  auto* app = parent.add_subcommand("nodes", "Where a model's time goes, node by node");
  app->add_option("model", o->model, "An .onnx file (default: the built-in GPT-2 small)");
  app->add_option("--device", o->device,
                  "cpu, or the GPU by CUDA ordinal (default: GPU 0 when there is one, else cpu)")
      ->check(check_model_device);
  app->add_option("--dim", o->dims, "Bind a symbolic input dimension: NAME=VALUE (repeatable)");
  app->add_flag("--no-cuda-graph", o->no_cuda_graph,
                "Time the ordinary runs kernel by kernel, not as one CUDA graph");
  app->add_option("--runs", o->runs, "Runs timed, each way (default 20)")
      ->check(CLI::Range(1, 100000));
  app->add_option("--top", o->top, "Slowest nodes listed (default 15)")
      ->check(CLI::Range(0, 100000));
  app->add_option("--json", o->json_path, "Write every node's time as JSON (coolbench.nodes/1)");
  app->add_flag("--kernels", o->kernels,
                "Also trace the runs' kernels with CUPTI: GPU time per kernel and the idle "
                "time between kernels (a GPU only)");
  return {app, [o] { return run_nodes(*o); }, help::nodes()};
}

}  // namespace coolbench::cli
