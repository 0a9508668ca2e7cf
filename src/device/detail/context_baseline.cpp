#include "device/detail/context_baseline.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "coolbench/core/error.hpp"

namespace coolbench::device::detail {
namespace {

using nlohmann::json;

constexpr const char* schema = "coolbench.context-baseline/1";

json to_json(const baseline_key& k, const bare_context_figures& f) {
  return {{"uuid", k.uuid},
          {"driver_version", k.driver_version},
          {"cuda_driver_version", k.cuda_driver_version},
          {"cuda_runtime_version", k.cuda_runtime_version},
          {"runtime_lazy_bytes", f.runtime_lazy},
          {"runtime_eager_bytes", f.runtime_eager},
          {"driver_lazy_bytes", f.driver_lazy},
          {"driver_eager_bytes", f.driver_eager},
          {"granularity_bytes", f.granularity},
          {"measured_at", f.measured_at},
          {"probe", f.probe}};
}

baseline_key key_of(const json& e) {
  return {e.at("uuid").get<std::string>(), e.at("driver_version").get<std::string>(),
          e.at("cuda_driver_version").get<int>(), e.at("cuda_runtime_version").get<int>()};
}

bare_context_figures figures_of(const json& e) {
  bare_context_figures f;
  f.runtime_lazy = e.at("runtime_lazy_bytes").get<std::uint64_t>();
  f.runtime_eager = e.at("runtime_eager_bytes").get<std::uint64_t>();
  f.driver_lazy = e.at("driver_lazy_bytes").get<std::uint64_t>();
  f.driver_eager = e.at("driver_eager_bytes").get<std::uint64_t>();
  f.granularity = e.at("granularity_bytes").get<std::uint64_t>();
  f.measured_at = e.value("measured_at", "");
  f.probe = e.value("probe", "");
  return f;
}

/// The file's entries; an unreadable or foreign file reads as none.
json read_entries(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return json::array();
  try {
    json doc = json::parse(in);
    if (doc.value("schema", "") == schema && doc.contains("entries") && doc["entries"].is_array())
      return doc["entries"];
  } catch (const json::exception&) {
  }
  return json::array();
}

/// Writes through a temporary file (named by process and thread) and a rename,
/// so that two processes or two GPUs' threads that measure at once leave one
/// whole file. A cache that cannot be written only costs a measurement next time.
void write_entries(const std::filesystem::path& file, const json& entries) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  const auto temporary = file.string() + ".tmp" + std::to_string(::getpid()) + "." +
                         std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(temporary, std::ios::trunc);
    if (!out) return;
    out << json({{"schema", schema}, {"entries", entries}}).dump(2) << '\n';
    if (!out) return;
  }
  std::filesystem::rename(temporary, file, ec);
  if (ec) std::filesystem::remove(temporary, ec);
}

}  // namespace

std::uint64_t bare_context_figures::for_loading(const std::string& module_loading) const {
  return module_loading == "EAGER" ? std::min(runtime_eager, driver_eager)
                                   : std::min(runtime_lazy, driver_lazy);
}

std::filesystem::path default_baseline_file() {
  const char* cache = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::filesystem::path base =
      cache != nullptr && *cache != '\0'
          ? std::filesystem::path(cache)
          : std::filesystem::path(home != nullptr ? home : ".") / ".cache";
  return base / "coolbench" / "context-baseline.json";
}

baseline_cache::baseline_cache(std::filesystem::path file, measure_fn measure)
    : m_file(std::move(file)), m_measure(std::move(measure)) {}

std::optional<bare_context_figures> baseline_cache::cached(const baseline_key& key) const {
  for (const auto& e : read_entries(m_file)) {
    try {
      if (key_of(e) == key) return figures_of(e);
    } catch (const json::exception&) {
    }
  }
  return std::nullopt;
}

baseline_lookup baseline_cache::get(const baseline_key& key) {
  baseline_lookup result;
  if (auto figures = cached(key)) {
    result.source = "measured by " + figures->probe + " at " + figures->measured_at +
                    ", cached in " + m_file.string();
    result.figures = std::move(figures);
    return result;
  }
  if (m_failed && m_failed->first == key) {
    result.source = m_failed->second + " (not tried again in this process)";
    return result;
  }
  // Missing, or measured for another driver or CUDA version: measure again.
  try {
    bare_context_figures figures = m_measure(key);
    // Read, merge and write under one lock: the threads of a run on several GPUs measure
    // their GPUs at once, and each keeps the others' entries.
    static std::mutex file_mutex;
    bool stale = false;
    {
      const std::lock_guard lock(file_mutex);
      json entries = json::array();
      for (auto& e : read_entries(m_file)) {
        try {
          if (key_of(e).uuid == key.uuid) {
            stale = true;
            continue;
          }
        } catch (const json::exception&) {
          continue;
        }
        entries.push_back(std::move(e));
      }
      entries.push_back(to_json(key, figures));
      write_entries(m_file, entries);
    }
    result.source = "measured now by " + figures.probe +
                    (stale ? " (the cached figure was for another driver or CUDA version)" : "") +
                    ", cached in " + m_file.string();
    result.figures = std::move(figures);
    result.measured_now = true;
  } catch (const std::exception& e) {
    result.source = std::string("the bare context could not be measured: ") + e.what();
    m_failed.emplace(key, result.source);
  }
  return result;
}

}  // namespace coolbench::device::detail
