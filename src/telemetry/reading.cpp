#include "coolbench/telemetry/reading.hpp"

namespace coolbench::telemetry {

std::string_view to_string(reading_status status) noexcept {
  switch (status) {
    case reading_status::ok: return "ok";
    case reading_status::unsupported: return "unsupported";
    case reading_status::failed: return "failed";
    case reading_status::skipped: return "skipped";
  }
  return "unknown";
}

}  // namespace coolbench::telemetry
