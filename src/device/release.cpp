// device::release: the checks (leases in other threads, another runtime's
// memory or context), then everything of coolbench's destroyed and the primary
// context reset (docs/device.md).
#include <chrono>
#include <string>

#include "coolbench/device/device.hpp"
#include "device/detail/foreign_check.hpp"
#include "device/device_state.hpp"

namespace coolbench::device {
namespace {

/// Gathers what the foreign-state check needs. Call with the mutex held.
detail::foreign_verdict check_foreign_state(device_state& s, bool force) {
  detail::foreign_inputs in;
  in.ordinal = s.ordinal;
  in.force = force;
  auto reading = s.api->process_memory(s.ordinal);
  if (reading.bytes) {
    reading.bytes = s.settled_process_bytes();
    if (!reading.bytes) reading.why_not = "NVML stopped listing this process's memory";
  }
  in.process_bytes = reading.bytes;
  in.nvml_unavailable = reading.why_not;
  in.context_by_coolbench = s.context_active && s.context_by_coolbench;
  in.own_context_bytes = s.own_context_bytes;
  in.module_loading = s.api->module_loading();
  std::int64_t own = s.own_bytes;
  // This thread's own leases may still be held: their work so far is coolbench's too.
  if (s.leases > 0 && s.lease_start_bytes && reading.bytes) {
    own +=
        static_cast<std::int64_t>(*reading.bytes) - static_cast<std::int64_t>(*s.lease_start_bytes);
  }
  in.coolbench_bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(0, own));
  in.cuda_libraries = s.api->cuda_libraries();
  if (reading.bytes) {
    // The bare context and NVML's step: measured once per GPU, driver and
    // CUDA version by child processes, then read from the cache.
    try {
      const auto key = s.api->baseline_key_of(s.ordinal);
      if (in.context_by_coolbench && in.own_context_bytes) {
        if (auto cached = s.baselines.cached(key)) in.granularity = cached->granularity;
      } else {
        in.bare = s.baselines.get(key);
        if (in.bare.figures) in.granularity = in.bare.figures->granularity;
      }
    } catch (const std::exception& e) {
      in.bare.source = std::string("the GPU's identity could not be read: ") + e.what();
    }
  }
  return detail::check_foreign(in);
}

/// Destroys every registered resource, users before memory, and counts them
/// in the report. Call with the mutex held.
void destroy_registered(device_state& s, release_report& report) {
  for (auto& [id, resource] : s.adopted) {
    try {
      resource.destroy();
    } catch (const std::exception& e) {
      log_error("destroying an adopted resource during release", e);
    }
    ++report.destroyed[index(resource.kind)];
  }
  s.adopted.clear();
  for (CUevent_st* event : s.events) s.api->destroy_event(s.ordinal, event);
  report.destroyed[index(resource_kind::event)] = s.events.size();
  s.events.clear();
  if (s.stream != nullptr) {
    s.api->destroy_stream(s.ordinal, s.stream);
    report.destroyed[index(resource_kind::stream)] = 1;
    s.stream = nullptr;
  }
  report.destroyed[index(resource_kind::kernel_attribute)] =
      s.attributes.size();  // re-applied later
  const auto freed = s.allocator.free_all();
  report.bytes_freed = freed.bytes;
  report.live_bytes_freed = freed.live_bytes;
  report.destroyed[index(resource_kind::allocation)] = freed.blocks;
}

}  // namespace

release_report device::release(const release_options& options) {
  const auto started = std::chrono::steady_clock::now();
  auto& s = *m_state;
  std::unique_lock lock(s.mutex);
  release_report report;
  report.ordinal = s.ordinal;
  report.forced = options.force;

  // 1. Leases in other threads: wait for them to end, or refuse.
  if (s.other_threads_leases() > 0 && options.wait_for_leases.count() > 0) {
    s.leases_changed.wait_for(lock, options.wait_for_leases,
                              [&] { return s.other_threads_leases() == 0; });
  }
  if (const std::uint64_t others = s.other_threads_leases(); others > 0) {
    throw release_refused("cannot release GPU " + std::to_string(s.ordinal) + ": " +
                          std::to_string(others) +
                          " lease(s) are held in other threads. End them first, or pass a wait "
                          "(release_options::wait_for_leases) long enough for them to end.");
  }

  // 2. Nothing of ours and no context from anyone: a no-op.
  const bool context_exists = s.context_active || s.api->context_active(s.ordinal);
  if (!s.holds_anything() && !context_exists) {
    report.note =
        "nothing to release: GPU " + std::to_string(s.ordinal) + " has no context in this process";
    report.generation_after = s.generation.load();
    report.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return report;
  }

  // 3. Another runtime's memory or context: refuse unless forced, saying what was seen.
  const detail::foreign_verdict verdict = check_foreign_state(s, options.force);
  report.foreign_bytes = verdict.foreign_bytes;
  report.foreign_check = verdict.check;
  report.foreign_state = detail::to_string(verdict.state);
  report.context_made_by = verdict.context_made_by;
  report.process_bytes = verdict.process_bytes;
  report.baseline_bytes = verdict.baseline_bytes;
  report.baseline_source = verdict.baseline_source;
  report.coolbench_bytes = verdict.coolbench_bytes;
  report.granularity_bytes = verdict.granularity;
  report.threshold_bytes = verdict.threshold;
  if (device_trace_on()) {
    std::fprintf(
        stderr,
        "coolbench trace: GPU %d release check: %s (own %.2f MiB, leases %llu, "
        "allocator %.2f MiB)\n",
        s.ordinal, verdict.check.c_str(), static_cast<double>(s.own_bytes) / 1048576.0,
        static_cast<unsigned long long>(s.leases),
        static_cast<double>(s.allocator.live_bytes() + s.allocator.cached_bytes()) / 1048576.0);
  }
  if (verdict.refuse) throw release_refused(verdict.message);
  if (options.force) report.dangling = verdict.dangling;
  if (!options.force && verdict.state == detail::foreign_state::context_state) {
    report.dangling = verdict.dangling;  // nothing of its memory; its handles all the same
  }

  // 4. Wait for in-flight work. A failed kernel leaves a sticky error: note
  // it and go on, the reset clears it.
  if (s.context_active) {
    try {
      s.api->synchronize(s.ordinal);
    } catch (const std::exception& e) {
      report.note = std::string("in-flight work had failed: ") + e.what() + "; ";
    }
  }

  // 5. Destroy what is registered, users before memory.
  destroy_registered(s, report);

  // 6. Reset the primary context; every handle of this generation is stale.
  s.api->reset(s.ordinal);
  report.context_reset = true;
  report.released = true;
  s.context_active = false;
  s.context_by_coolbench = false;
  s.own_context_bytes.reset();
  s.own_bytes = 0;
  s.lease_start_bytes.reset();
  s.generation.fetch_add(1);
  ++s.releases;
  report.generation_after = s.generation.load();
  report.process_listed_after = s.api->process_listed(s.ordinal);
  if (report.note.empty()) report.note = "released";
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

}  // namespace coolbench::device
