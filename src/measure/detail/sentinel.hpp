// The hidden-state sentinel on a real GPU (docs/measure.md, "Hidden state"): one check is the
// median of 30 timed passes of the L1-sensitive walk (sentinel_kernel.hpp), after warming the
// GPU until the passes settle (an idle H200 runs its first passes at a low clock).
#pragma once

#include <cstdint>
#include <memory>

namespace coolbench::measure::detail {

class sentinel {
 public:
  explicit sentinel(int ordinal);
  ~sentinel();
  sentinel(const sentinel&) = delete;
  sentinel& operator=(const sentinel&) = delete;

  /// One check's median pass time in ms, through a lease of its own (taken and dropped here,
  /// so a release is never refused on its account). Its memory and events are made once per
  /// context generation. Throws cuda_error when the GPU refuses.
  [[nodiscard]] double check_ms();

 private:
  struct resources;
  int m_ordinal;
  std::unique_ptr<resources> m_resources;
};

}  // namespace coolbench::measure::detail
