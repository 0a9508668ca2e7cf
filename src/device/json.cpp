#include "coolbench/device/json.hpp"

#include <nlohmann/json.hpp>

namespace coolbench::device {
namespace {

using nlohmann::json;

json counts_json(const resource_counts& counts) {
  json out = json::object();
  for (std::size_t i = 0; i < counts.size(); ++i) {
    out[std::string(to_string(static_cast<resource_kind>(i)))] = counts[i];
  }
  return out;
}

// Invalid UTF-8 in a note (an error text from a driver) is replaced, not thrown.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

std::string to_json(const release_report& r) {
  return dump({{"ordinal", r.ordinal},
               {"released", r.released},
               {"context_reset", r.context_reset},
               {"forced", r.forced},
               {"note", r.note},
               {"bytes_freed", r.bytes_freed},
               {"live_bytes_freed", r.live_bytes_freed},
               {"destroyed", counts_json(r.destroyed)},
               {"seconds", r.seconds},
               {"generation_after", r.generation_after},
               {"foreign_bytes", r.foreign_bytes ? json(*r.foreign_bytes) : json(nullptr)},
               {"foreign_check", r.foreign_check},
               {"foreign_state", r.foreign_state},
               {"context_made_by", r.context_made_by},
               {"process_bytes", r.process_bytes ? json(*r.process_bytes) : json(nullptr)},
               {"baseline_bytes", r.baseline_bytes ? json(*r.baseline_bytes) : json(nullptr)},
               {"baseline_source", r.baseline_source},
               {"coolbench_bytes", r.coolbench_bytes},
               {"granularity_bytes", r.granularity_bytes},
               {"threshold_bytes", r.threshold_bytes},
               {"dangling", r.dangling},
               {"process_listed_after",
                r.process_listed_after ? json(*r.process_listed_after) : json(nullptr)}});
}

std::string to_json(const device_status& s) {
  return dump({{"ordinal", s.ordinal},
               {"context_active", s.context_active},
               {"generation", s.generation},
               {"leases", s.leases},
               {"live_bytes", s.live_bytes},
               {"cached_bytes", s.cached_bytes},
               {"peak_bytes", s.peak_bytes},
               {"resources", counts_json(s.resources)},
               {"releases", s.releases}});
}

}  // namespace coolbench::device
