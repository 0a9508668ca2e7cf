// What clears hidden state, as one call (docs/measure.md, "Hidden state").
#include "coolbench/measure/isolation.hpp"

#include <cmath>

#include "coolbench/core/error.hpp"
#include "coolbench/device/device.hpp"

namespace coolbench::measure {

std::string isolate(isolation how, int ordinal) {
  switch (how) {
    case isolation::none: return {};
    case isolation::release: {
      const auto r = device::device::get(ordinal).release();
      return "isolation release: " +
             (r.released ? "context " + std::string(r.context_reset ? "reset" : "kept") + ", " +
                               std::to_string(std::lround(r.seconds * 1000)) + " ms"
                         : (r.note.empty() ? std::string("nothing to release") : r.note));
    }
    case isolation::touch: {
      const double seconds = device::touch_from_another_process(ordinal);
      return "isolation touch: another process made a context and exited, " +
             std::to_string(std::lround(seconds * 1000)) + " ms";
    }
    case isolation::process:
      throw invalid_argument(
          "isolation process needs each workload in a process of its own (one `coolbench run` "
          "per workload); inside a process use touch or release");
  }
  return {};
}

}  // namespace coolbench::measure
