#include "report/release_check_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "coolbench/device/json.hpp"
#include "coolbench/telemetry/clock_reasons.hpp"
#include "report/format.hpp"

namespace coolbench::report {
namespace {

constexpr double mib = 1024.0 * 1024.0;

template <class T>
nlohmann::json reading_json(const telemetry::reading<T>& r) {
  return r.ok() ? nlohmann::json(r.value) : nlohmann::json(nullptr);
}

nlohmann::json criteria_json(const idle_criteria& c) {
  const auto opt = [](const auto& o) { return o ? nlohmann::json(*o) : nlohmann::json(nullptr); };
  return {{"judge_process", c.judge_process},
          {"judge_idle_bit", c.judge_idle_bit},
          {"memory_baseline_bytes", opt(c.memory_baseline_bytes)},
          {"memory_tolerance_bytes", c.memory_tolerance_bytes},
          {"sm_clock_floor_mhz", opt(c.sm_clock_floor_mhz)},
          {"sm_floor_from_baseline", c.sm_floor_from_baseline},
          {"power_floor_w", opt(c.power_floor_w)},
          {"consecutive", c.consecutive}};
}

nlohmann::json mode_json(const mode_record& m) {
  nlohmann::json j = {{"ran", m.ran},
                      {"pid", m.pid},
                      {"probe_error", m.probe_error},
                      {"hold_end_to_event_s", m.summary.hold_end_to_event_s},
                      {"reached_idle", m.reached_idle()},
                      {"criteria", criteria_json(m.criteria)}};
  nlohmann::json milestones = nlohmann::json::object();
  nlohmann::json judged = nlohmann::json::object();
  for (const milestone ms : all_milestones) {
    const auto& t = m.summary.times.at(ms);
    milestones[std::string(key_of(ms))] = t ? nlohmann::json(*t) : nullptr;
    judged[std::string(key_of(ms))] = m.summary.times.is_judged(ms);
  }
  j["milestones_s"] = milestones;
  j["judged"] = judged;
  const auto& idle = m.summary.times.at(milestone::idle);
  j["idle_from_hold_end_s"] =
      idle ? nlohmann::json(*idle + m.summary.hold_end_to_event_s) : nlohmann::json(nullptr);
  j["hold_view"] = {
      {"listing_rule", to_string(m.view.rule)},
      {"holder_memory_bytes",
       m.view.holder_memory_bytes ? nlohmann::json(*m.view.holder_memory_bytes) : nullptr},
      {"processes", to_json(m.view.processes)},
      {"sample", m.view.sample ? to_json(*m.view.sample) : nlohmann::json(nullptr)}};
  if (m.report) j["release_report"] = nlohmann::json::parse(device::to_json(*m.report));
  if (m.release_forced_because) j["release_forced_because"] = *m.release_forced_because;
  if (m.child_exit_status) j["child_exit_status"] = *m.child_exit_status;
  nlohmann::json samples = nlohmann::json::array();
  for (const auto& p : m.summary.trace) {
    const auto& s = p.sample;
    samples.push_back({{"t_s", p.time_s},
                       {"power_w", reading_json(s.power_w)},
                       {"clock_sm_mhz", reading_json(s.clock_sm_mhz)},
                       {"memory_used_bytes", reading_json(s.memory_used_bytes)},
                       {"clock_reasons", reading_json(s.clock_reasons)},
                       {"temp_gpu_c", reading_json(s.temp_gpu_c)},
                       {"process_listed", p.process_listed ? nlohmann::json(*p.process_listed)
                                                           : nlohmann::json(nullptr)}});
  }
  j["samples"] = std::move(samples);
  return j;
}

}  // namespace

std::string_view key_of(milestone m) noexcept {
  switch (m) {
    case milestone::process_gone: return "process_gone";
    case milestone::memory_back: return "memory_back";
    case milestone::sm_clock_floor: return "sm_clock_floor";
    case milestone::power_floor: return "power_floor";
    case milestone::idle_bit: return "idle_bit";
    case milestone::idle: return "idle";
  }
  return "unknown";
}

std::string_view label_of(milestone m) noexcept {
  switch (m) {
    case milestone::process_gone: return "process gone";
    case milestone::memory_back: return "memory back";
    case milestone::sm_clock_floor: return "SM clock at floor";
    case milestone::power_floor: return "power at floor";
    case milestone::idle_bit: return "gpu_idle bit";
    case milestone::idle: return "idle (all)";
  }
  return "unknown";
}

std::string_view to_string(listing_rule rule) noexcept {
  switch (rule) {
    case listing_rule::by_pid: return "by_pid";
    case listing_rule::by_new_pid: return "by_new_pid";
    case listing_rule::unknown: return "unknown";
  }
  return "unknown";
}

std::string show_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < 1024 * 1024) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024.0);
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / mib);
}

std::vector<std::optional<telemetry::gpu_sample>> resample(std::span<const trace_point> trace,
                                                           double step_s, double until_s) {
  std::vector<std::optional<telemetry::gpu_sample>> out;
  if (step_s <= 0) return out;
  const auto steps = static_cast<std::size_t>(std::floor(until_s / step_s + 1e-9)) + 1;
  for (std::size_t i = 0; i < steps; ++i) {
    const double t = static_cast<double>(i) * step_s;
    const trace_point* best = nullptr;
    for (const auto& p : trace) {
      if (std::abs(p.time_s - t) > step_s / 2) continue;
      if (best == nullptr || std::abs(p.time_s - t) < std::abs(best->time_s - t)) best = &p;
    }
    out.push_back(best != nullptr ? std::optional(best->sample) : std::nullopt);
  }
  return out;
}

namespace {

std::string show_time(const milestone_times& times, milestone m) {
  if (!times.is_judged(m)) return "n/a";
  const auto& t = times.at(m);
  return t ? fmt::format("{:.2f}", *t) : std::string("not reached");
}

}  // namespace

std::string format_milestone_table(const mode_summary& a, const mode_summary& b) {
  constexpr int label_width = 26;
  constexpr int column_width = 18;
  std::string out = fmt::format("{:<{}}{:>{}}{:>{}}\n", "time to [s]", label_width, a.name + " [s]",
                                column_width, b.name + " [s]", column_width);
  for (const milestone m : all_milestones) {
    out += fmt::format("  {:<{}}{:>{}}{:>{}}\n", label_of(m), label_width - 2,
                       show_time(a.times, m), column_width, show_time(b.times, m), column_width);
  }
  const auto from_hold = [](const mode_summary& s) {
    const auto& t = s.times.at(milestone::idle);
    return t ? fmt::format("{:.2f}", *t + s.hold_end_to_event_s) : std::string("not reached");
  };
  out += fmt::format("  {:<{}}{:>{}}{:>{}}\n", "idle from end of hold", label_width - 2,
                     from_hold(a), column_width, from_hold(b), column_width);
  return out;
}

std::string format_power_traces(const mode_summary& a, const mode_summary& b, double step_s,
                                double until_s) {
  // Wide enough for "<name> MHz" and a space.
  const int label_width = static_cast<int>(std::max(a.name.size(), b.name.size())) + 5;
  constexpr int cell = 6;
  std::string out = fmt::format("{:<{}}", "t[s]", label_width);
  const auto steps = static_cast<std::size_t>(std::floor(until_s / step_s + 1e-9)) + 1;
  for (std::size_t i = 0; i < steps; ++i) {
    out += fmt::format("{:>{}.2f}", static_cast<double>(i) * step_s, cell);
  }
  out += "\n";
  for (const mode_summary* mode : {&a, &b}) {
    const auto samples = resample(mode->trace, step_s, until_s);
    std::string power = fmt::format("{:<{}}", mode->name + " W", label_width);
    std::string clock = fmt::format("{:<{}}", mode->name + " MHz", label_width);
    for (const auto& s : samples) {
      power += fmt::format(
          "{:>{}}",
          s && s->power_w.ok() ? fmt::format("{:.0f}", s->power_w.value) : std::string("-"), cell);
      clock += fmt::format(
          "{:>{}}", s && s->clock_sm_mhz.ok() ? fmt::format("{}", s->clock_sm_mhz.value) : "-",
          cell);
    }
    out += power + "\n" + clock + "\n";
  }
  return out;
}

std::string format_verdict(const mode_summary& a, const mode_summary& b) {
  const auto& ta = a.times.at(milestone::idle);
  const auto& tb = b.times.at(milestone::idle);
  if (ta && tb) {
    return fmt::format("{} reached idle in {:.2f} s, {} in {:.2f} s ({})\n", a.name, *ta, b.name,
                       *tb, *tb > 0 ? fmt::format("ratio {:.2f}", *ta / *tb) : "ratio n/a");
  }
  const auto part = [](const mode_summary& s, const std::optional<double>& t) {
    return t ? fmt::format("{} reached idle in {:.2f} s", s.name, *t)
             : fmt::format("{} did not reach idle within {:.0f} s", s.name, s.timeout_s);
  };
  return part(a, ta) + ", " + part(b, tb) + "\n";
}

std::string format_baseline(const telemetry::gpu_identity& id, const telemetry::gpu_sample& s,
                            const std::vector<telemetry::gpu_process>& processes, bool idle,
                            const idle_criteria& c, std::chrono::milliseconds period) {
  std::string out;
  out += fmt::format("coolbench release-check: GPU {}, {} ({})\n", id.cuda_ordinal, id.name,
                     id.pci_bus_id);
  out += fmt::format(
      "Before the run: SM {} MHz, {} W, {} C, memory used {} MiB, reasons {}\n",
      show(s.clock_sm_mhz), show(s.power_w, 1), show(s.temp_gpu_c),
      show(telemetry::reading<double>{static_cast<double>(s.memory_used_bytes.value) / mib,
                                      s.memory_used_bytes.status},
           0),
      s.clock_reasons.ok() ? telemetry::clock_reasons_short(s.clock_reasons.value) : "n/a");
  if (!processes.empty()) {
    out +=
        fmt::format("warning: the baseline is not idle: other processes hold a context already\n{}",
                    format_gpu_processes(id, processes));
  }
  if (!idle) {
    out += fmt::format(
        "warning: the GPU was not idle before the run (gpu_idle bit not set in every sample): "
        "power is not judged, and the SM clock floor is the lowest clock seen + 10%\n");
  }
  std::vector<std::string> parts;
  parts.emplace_back("the process not listed");
  if (c.memory_baseline_bytes) {
    parts.push_back(
        fmt::format("memory used <= {:.0f} MiB (baseline + {:.0f} MiB)",
                    static_cast<double>(*c.memory_baseline_bytes + c.memory_tolerance_bytes) / mib,
                    static_cast<double>(c.memory_tolerance_bytes) / mib));
  }
  if (c.sm_clock_floor_mhz) {
    parts.push_back(fmt::format("SM clock <= {} MHz{}", *c.sm_clock_floor_mhz,
                                c.sm_floor_from_baseline ? "" : " (so far)"));
  }
  if (c.power_floor_w) parts.push_back(fmt::format("power <= {:.1f} W", *c.power_floor_w));
  if (c.judge_idle_bit) parts.emplace_back("gpu_idle bit set");
  out += fmt::format("Idle means: {}; {} samples in a row, {} ms apart\n", fmt::join(parts, ", "),
                     c.consecutive, period.count());
  return out;
}

std::string format_hold_view(const mode_record& mode, double hold_s) {
  const auto& v = mode.view;
  std::string who;
  switch (v.rule) {
    case listing_rule::by_pid: who = fmt::format("NVML lists pid {}", mode.pid); break;
    case listing_rule::by_new_pid:
      who = fmt::format("NVML lists a new process (not pid {}: another PID namespace)", mode.pid);
      break;
    case listing_rule::unknown:
      who = fmt::format(
          "NVML does not list pid {} (another PID namespace?): 'process gone' is "
          "not judged",
          mode.pid);
      break;
  }
  if (v.holder_memory_bytes) who += " with " + show_bytes(*v.holder_memory_bytes);
  std::string state = "no sample";
  if (v.sample) {
    const auto& s = *v.sample;
    state = fmt::format(
        "SM {} MHz, {} W, {} C, reasons {}", show(s.clock_sm_mhz), show(s.power_w, 1),
        show(s.temp_gpu_c),
        s.clock_reasons.ok() ? telemetry::clock_reasons_short(s.clock_reasons.value) : "n/a");
  }
  return fmt::format("  end of the {:.1f} s hold: {}; {}\n", hold_s, who, state);
}

std::string format_release(const device::release_report& r) {
  std::vector<std::string> resources;
  for (std::size_t i = 0; i < device::resource_kind_count; ++i) {
    if (r.destroyed[i] == 0) continue;
    resources.push_back(fmt::format(
        "{} {}", device::to_string(static_cast<device::resource_kind>(i)), r.destroyed[i]));
  }
  return fmt::format(
      "  release: {}, freed {} ({} live), destroyed {}, took {:.0f} ms; NVML lists this "
      "process afterwards: {}\n",
      r.note, show_bytes(r.bytes_freed), show_bytes(r.live_bytes_freed),
      resources.empty() ? std::string("no resources")
                        : fmt::format("{}", fmt::join(resources, ", ")),
      r.seconds * 1e3, r.process_listed_after ? (*r.process_listed_after ? "yes" : "no") : "n/a");
}

std::string format_mode_result(const mode_record& mode, std::string_view event, double timeout_s) {
  const auto& idle = mode.summary.times.at(milestone::idle);
  if (idle) {
    return fmt::format("  idle {:.2f} s after {} ({:.2f} s after the end of the hold)\n", *idle,
                       event, *idle + mode.summary.hold_end_to_event_s);
  }
  return fmt::format("  not idle {:.0f} s after {}\n", timeout_s, event);
}

std::string format_release_check_summary(const release_check_record& check, double step_s,
                                         double until_s) {
  return fmt::format(
      "\n{}\nPower [W] and SM clock [MHz] after the event\n{}\n{}",
      format_milestone_table(check.release.summary, check.exit.summary),
      format_power_traces(check.release.summary, check.exit.summary, step_s, until_s),
      format_verdict(check.release.summary, check.exit.summary));
}

nlohmann::json to_json(const release_check_record& check) {
  nlohmann::json baseline_samples = nlohmann::json::array();
  for (const auto& s : check.baseline_samples) baseline_samples.push_back(to_json(s));
  return {{"command", "release-check"},
          {"version", 1},
          {"gpu", to_json(check.gpu)},
          {"options",
           {{"hold_s", check.hold_s},
            {"timeout_s", check.timeout_s},
            {"period_ms", check.period.count()}}},
          {"baseline",
           {{"idle", check.baseline_idle},
            {"processes", to_json(check.baseline_processes)},
            {"samples", baseline_samples}}},
          {"release", mode_json(check.release)},
          {"process_exit", mode_json(check.exit)},
          {"idle_again_before_process_exit",
           {{"reached", check.idle_again_reached},
            {"waited_s", check.idle_again_s ? nlohmann::json(*check.idle_again_s) : nullptr}}},
          {"interrupted", check.interrupted}};
}

}  // namespace coolbench::report
