// The bare context: what NVML's per-process figure shows for a context with
// nothing in it, on one GPU, driver and CUDA version. Measured by
// coolbench-context-probe in a short-lived child process (one per way of
// making the context) and cached as JSON, re-measured when the key changes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>

namespace coolbench::device::detail {

/// What a bare-context figure depends on; a change in any field re-measures it.
struct baseline_key {
  std::string uuid;              ///< "GPU-…"
  std::string driver_version;    ///< NVML's, e.g. "580.159.04"
  int cuda_driver_version = 0;   ///< cuDriverGetVersion, e.g. 13000
  int cuda_runtime_version = 0;  ///< coolbench's CUDA runtime, e.g. 13000
  friend bool operator==(const baseline_key&, const baseline_key&) = default;
};

/// NVML's figure for a context with nothing in it, by the way it was made.
struct bare_context_figures {
  std::uint64_t runtime_lazy = 0;  ///< cudaFree(0), CUDA_MODULE_LOADING=LAZY
  std::uint64_t runtime_eager = 0;
  std::uint64_t driver_lazy = 0;  ///< cuDevicePrimaryCtxRetain, LAZY
  std::uint64_t driver_eager = 0;
  /// What NVML's figure grows by for a 1-byte allocation in that context:
  /// the step in which the figure moves.
  std::uint64_t granularity = 0;
  std::string measured_at;  ///< UTC, ISO 8601
  std::string probe;        ///< the probe that measured them

  /// The baseline for a context made under `module_loading` ("LAZY" or
  /// "EAGER"), whoever made it: the smaller of the runtime's and the
  /// driver's figure, so that a foreign byte is never taken for the context.
  [[nodiscard]] std::uint64_t for_loading(const std::string& module_loading) const;
};

/// The result of a lookup: the figures (absent when neither the cache nor the
/// probe could give them) and where they came from, in words.
struct baseline_lookup {
  std::optional<bare_context_figures> figures;
  std::string source;  ///< "cached in …", "measured now by …, cached in …", or why missing
  bool measured_now = false;
};

/// $XDG_CACHE_HOME/coolbench/context-baseline.json, or
/// ~/.cache/coolbench/context-baseline.json.
[[nodiscard]] std::filesystem::path default_baseline_file();

/// The cache file holds one entry per GPU UUID. A lookup returns the cached
/// entry when its key matches; otherwise (missing, stale, unreadable) it calls
/// `measure`, stores the result and returns it. `measure` throws an error
/// whose message says why it could not measure; that makes the lookup's
/// figures empty. Not thread-safe: the device's mutex guards it.
class baseline_cache {
 public:
  using measure_fn = std::function<bare_context_figures(const baseline_key&)>;
  baseline_cache(std::filesystem::path file, measure_fn measure);

  [[nodiscard]] baseline_lookup get(const baseline_key& key);
  /// The cached figures for `key`, without measuring.
  [[nodiscard]] std::optional<bare_context_figures> cached(const baseline_key& key) const;
  [[nodiscard]] const std::filesystem::path& file() const noexcept { return m_file; }

 private:
  std::filesystem::path m_file;
  measure_fn m_measure;
  // Why measuring failed for a key in this process: not retried (a probe
  // that cannot run costs its time-out at every release otherwise).
  std::optional<std::pair<baseline_key, std::string>> m_failed;
};

}  // namespace coolbench::device::detail
