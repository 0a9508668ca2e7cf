// summarize_kernel_runs: plain host code over kernel records, tested on the CPU.
#include <algorithm>
#include <map>

#include "coolbench/device/kernel_trace.hpp"

namespace coolbench::device {
namespace {

// Time some record of `run` covers (they may overlap on several streams).
std::uint64_t busy_ns(std::vector<const kernel_record*> run) {
  std::sort(run.begin(), run.end(),
            [](const auto* a, const auto* b) { return a->start_ns < b->start_ns; });
  std::uint64_t busy = 0, covered_to = 0;
  for (const auto* r : run) {
    const std::uint64_t from = std::max(r->start_ns, covered_to);
    if (r->end_ns > from) busy += r->end_ns - from;
    covered_to = std::max(covered_to, r->end_ns);
  }
  return busy;
}

}  // namespace

std::string short_kernel_name(std::string_view name) {
  // The parameter list: the first '(' outside template brackets that is no
  // "(anonymous namespace)".
  int depth = 0;
  std::size_t end = name.size();
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '<') ++depth;
    if (c == '>' && depth > 0) --depth;
    if (c == '(' && depth == 0 && name.substr(i, 21) != "(anonymous namespace)") {
      end = i;
      break;
    }
  }
  std::string_view head = name.substr(0, end);
  // The last "::" or space outside template brackets ends the qualifiers and
  // the return type.
  depth = 0;
  std::size_t begin = 0;
  for (std::size_t i = 0; i < head.size(); ++i) {
    const char c = head[i];
    if (c == '<') ++depth;
    if (c == '>' && depth > 0) --depth;
    if (depth > 0) continue;
    if (c == ' ' && head.substr(i + 1, 9) != "namespace") begin = i + 1;
    if (c == ':' && i + 1 < head.size() && head[i + 1] == ':') begin = i + 2;
  }
  const std::string_view shown = head.substr(begin);
  return shown.empty() ? std::string(name) : std::string(shown);
}

kernel_runs summarize_kernel_runs(std::span<const kernel_record> records, std::string_view marker) {
  std::vector<const kernel_record*> sorted;
  for (const auto& r : records) sorted.push_back(&r);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto* a, const auto* b) { return a->start_ns < b->start_ns; });
  const auto is_marker = [&](const kernel_record* r) {
    return !marker.empty() && short_kernel_name(r->name) == marker;
  };
  const bool marked = std::any_of(sorted.begin(), sorted.end(), is_marker);
  std::vector<std::vector<const kernel_record*>> runs;
  if (!marked) runs.emplace_back();
  for (const auto* r : sorted) {
    if (marked && is_marker(r)) {
      runs.emplace_back();
    } else if (!runs.empty()) {
      runs.back().push_back(r);
    }
  }
  std::erase_if(runs, [](const auto& run) { return run.empty(); });

  kernel_runs out;
  out.marked = marked;
  out.runs = runs.size();
  if (runs.empty()) return out;
  out.kernels_per_run = runs.front().size();
  std::map<std::string, kernel_total> by_name;
  double span = 0, busy = 0;
  for (const auto& run : runs) {
    std::uint64_t last_end = 0;
    for (const auto* r : run) {
      last_end = std::max(last_end, r->end_ns);
      const double us = static_cast<double>(r->end_ns - std::min(r->start_ns, r->end_ns)) / 1e3;
      auto& t = by_name[r->name];
      t.name = r->name;
      t.least_us = t.calls == 0 ? us : std::min(t.least_us, us);
      ++t.calls;
      t.total_us += us;
      t.static_shared = r->static_shared;
      t.dynamic_shared = r->dynamic_shared;
      t.shared_executed = r->shared_executed;
    }
    span += static_cast<double>(last_end - std::min(run.front()->start_ns, last_end)) / 1e3;
    busy += static_cast<double>(busy_ns(run)) / 1e3;
  }
  out.span_us = span / static_cast<double>(runs.size());
  out.busy_us = busy / static_cast<double>(runs.size());
  for (auto& [name, t] : by_name) out.kernels.push_back(std::move(t));
  std::stable_sort(out.kernels.begin(), out.kernels.end(),
                   [](const auto& a, const auto& b) { return a.total_us > b.total_us; });
  return out;
}

}  // namespace coolbench::device
