#include "device/detail/foreign_check.hpp"

#include <cmath>
#include <cstdio>

namespace coolbench::device::detail {
namespace {

constexpr double mib = 1 << 20U;

std::string in_mib(double bytes) {
  char text[32];
  const double m = bytes / mib;
  std::snprintf(text, sizeof text, m == std::floor(m) ? "%.0f MiB" : "%.2f MiB", m);
  return text;
}

std::string made_by(const foreign_inputs& in) {
  if (in.context_by_coolbench) return "coolbench";
  std::string text = "another runtime";
  if (in.cuda_libraries.empty())
    return text + " (no CUDA framework seen among the loaded libraries)";
  text += " (loaded in this process: ";
  for (std::size_t i = 0; i < in.cuda_libraries.size(); ++i)
    text += (i > 0 ? ", " : "") + in.cuda_libraries[i];
  return text + ")";
}

std::string gpu(const foreign_inputs& in) { return "GPU " + std::to_string(in.ordinal); }

const char* force_hint =
    " Nothing was changed. Release with force (COOLBENCH_RELEASE_FORCE, release_options::force) "
    "only if nothing else in the process uses the GPU.";

/// Fills the baseline: coolbench's own figure for a context it made, else the
/// bare context's. False when there is none.
bool choose_baseline(const foreign_inputs& in, foreign_verdict& v) {
  if (in.context_by_coolbench && in.own_context_bytes) {
    v.baseline_bytes = in.own_context_bytes;
    v.baseline_source = "measured by coolbench right after it created this context";
    return true;
  }
  if (in.bare.figures) {
    v.baseline_bytes = in.bare.figures->for_loading(in.module_loading);
    v.baseline_source = "bare context, " + in.module_loading + " module loading, " + in.bare.source;
    return true;
  }
  v.baseline_source = in.bare.source;
  return false;
}

void refuse_unknown(const foreign_inputs& in, foreign_verdict& v, const std::string& why) {
  v.state = foreign_state::unknown;
  v.refuse = !in.force;
  v.message = "cannot release " + gpu(in) + ": " + why +
              ", so live memory of another runtime cannot be ruled out." + force_hint;
  v.dangling = "unknown: " + why + "; whatever another runtime held on the GPU is gone";
}

}  // namespace

const char* to_string(foreign_state state) noexcept {
  switch (state) {
    case foreign_state::none: return "none";
    case foreign_state::memory_live: return "foreign memory live";
    case foreign_state::context_state: return "foreign context state without memory";
    case foreign_state::unknown: return "unknown";
  }
  return "unknown";
}

foreign_verdict check_foreign(const foreign_inputs& in) {
  foreign_verdict v;
  v.context_made_by = made_by(in);
  const bool measured_step = in.granularity.has_value() && *in.granularity > 0;
  v.granularity = measured_step ? *in.granularity : default_granularity;
  v.threshold = v.granularity / 2;
  v.process_bytes = in.process_bytes;
  v.coolbench_bytes = in.coolbench_bytes;
  if (!in.process_bytes) {
    v.check = "not checked: " + in.nvml_unavailable;
    refuse_unknown(
        in, v,
        "NVML gives no figure for this process's device memory (" + in.nvml_unavailable + ")");
    return v;
  }
  const std::string step =
      measured_step ? "NVML's step " + in_mib(static_cast<double>(v.granularity)) + ", measured"
                    : "NVML's step taken as " + in_mib(static_cast<double>(v.granularity)) +
                          " (not measured here)";
  if (!choose_baseline(in, v)) {
    v.check = "NVML: process " + in_mib(static_cast<double>(*in.process_bytes)) +
              "; bare context unknown: " + v.baseline_source + "; context made by " +
              v.context_made_by;
    refuse_unknown(in, v,
                   "the context was made by " + v.context_made_by +
                       " and the bare context's figure is unknown (" + v.baseline_source +
                       "), so NVML's " + in_mib(static_cast<double>(*in.process_bytes)) +
                       " cannot be split into the context and memory");
    return v;
  }
  const auto foreign = static_cast<std::int64_t>(*in.process_bytes) -
                       static_cast<std::int64_t>(*v.baseline_bytes + in.coolbench_bytes);
  v.foreign_bytes = foreign;
  v.check = "NVML: process " + in_mib(static_cast<double>(*in.process_bytes)) + "; baseline " +
            in_mib(static_cast<double>(*v.baseline_bytes)) + " (" + v.baseline_source +
            "); coolbench " + in_mib(static_cast<double>(in.coolbench_bytes)) + "; foreign " +
            in_mib(static_cast<double>(foreign)) + "; refused from " +
            in_mib(static_cast<double>(v.threshold)) + " (half of " + step + "); context made by " +
            v.context_made_by;
  if (foreign >= static_cast<std::int64_t>(v.threshold)) {
    v.state = foreign_state::memory_live;
    v.refuse = !in.force;
    v.message =
        "cannot release " + gpu(in) + ": " + in_mib(static_cast<double>(foreign)) +
        " of this process's device memory is not coolbench's (foreign memory live). " + v.check +
        ". Allocations and the code of loaded modules both count here (NVML cannot tell them "
        "apart); a reset would leave their pointers and handles dangling. Free that runtime's "
        "memory and drop its kernels first (docs/c_api.md shows how for CuPy and PyTorch), or "
        "release with force (COOLBENCH_RELEASE_FORCE, release_options::force). Nothing was "
        "changed.";
    v.dangling = in_mib(static_cast<double>(foreign)) +
                 " of another runtime's device memory (its pointers, modules and handles now "
                 "dangle); the context was made by " +
                 v.context_made_by;
    return v;
  }
  if (foreign <= -static_cast<std::int64_t>(v.threshold)) {
    v.check += "; below the baseline: the baseline may be off";
  }
  if (!in.context_by_coolbench) {
    v.state = foreign_state::context_state;
    v.dangling = "no memory of another runtime; the context was made by " + v.context_made_by +
                 ": its streams, events, library handles and module handles are gone and must be "
                 "created again";
    return v;
  }
  v.state = foreign_state::none;
  return v;
}

}  // namespace coolbench::device::detail
