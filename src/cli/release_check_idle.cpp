#include "cli/release_check_idle.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "coolbench/telemetry/clock_reasons.hpp"

namespace coolbench::cli {

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

bool has_idle_bit(const telemetry::gpu_sample& s) noexcept {
  return s.clock_reasons.ok() &&
         (s.clock_reasons.value & static_cast<std::uint64_t>(telemetry::clock_reason::gpu_idle)) !=
             0;
}

bool pre_run_idle(std::span<const telemetry::gpu_sample> pre_run) noexcept {
  return !pre_run.empty() && std::all_of(pre_run.begin(), pre_run.end(), has_idle_bit);
}

namespace {

unsigned with_clock_margin(unsigned mhz) {
  return static_cast<unsigned>(std::lround(static_cast<double>(mhz) * (1.0 + sm_clock_margin)));
}

}  // namespace

idle_criteria make_idle_criteria(std::span<const telemetry::gpu_sample> pre_run,
                                 std::optional<unsigned> lowest_sm_clock_seen_mhz,
                                 bool gpu_offers_idle_bit) {
  idle_criteria c;
  c.judge_idle_bit = gpu_offers_idle_bit;
  std::optional<std::uint64_t> memory;
  std::optional<unsigned> clock;
  std::optional<double> power;
  for (const auto& s : pre_run) {
    if (s.memory_used_bytes.ok()) {
      memory = std::max(memory.value_or(0), s.memory_used_bytes.value);
    }
    if (s.clock_sm_mhz.ok()) clock = std::max(clock.value_or(0), s.clock_sm_mhz.value);
    if (s.power_w.ok()) power = std::max(power.value_or(0.0), s.power_w.value);
  }
  c.memory_baseline_bytes = memory;
  if (memory) {
    c.memory_tolerance_bytes = std::max(
        memory_tolerance_min_bytes,
        static_cast<std::uint64_t>(static_cast<double>(*memory) * memory_tolerance_fraction));
  }
  const bool idle = pre_run_idle(pre_run);
  c.sm_floor_from_baseline = idle && clock.has_value();
  if (c.sm_floor_from_baseline) {
    c.sm_clock_floor_mhz = with_clock_margin(*clock);
  } else if (lowest_sm_clock_seen_mhz) {
    c.sm_clock_floor_mhz = with_clock_margin(*lowest_sm_clock_seen_mhz);
  }
  if (idle && power) c.power_floor_w = *power + power_margin_w;
  return c;
}

std::array<bool, milestone_count> conditions_met(const idle_criteria& c, const trace_point& p) {
  const auto& s = p.sample;
  std::array<bool, milestone_count> met{};
  const auto set = [&met](milestone m, bool value) { met[static_cast<std::size_t>(m)] = value; };
  set(milestone::process_gone,
      !c.judge_process || (p.process_listed.has_value() && !*p.process_listed));
  set(milestone::memory_back,
      !c.memory_baseline_bytes ||
          (s.memory_used_bytes.ok() &&
           s.memory_used_bytes.value <= *c.memory_baseline_bytes + c.memory_tolerance_bytes));
  set(milestone::sm_clock_floor,
      c.sm_clock_floor_mhz && s.clock_sm_mhz.ok() && s.clock_sm_mhz.value <= *c.sm_clock_floor_mhz);
  set(milestone::power_floor,
      !c.power_floor_w || (s.power_w.ok() && s.power_w.value <= *c.power_floor_w));
  set(milestone::idle_bit, !c.judge_idle_bit || has_idle_bit(s));
  bool all = true;
  for (std::size_t i = 0; i + 1 < milestone_count; ++i) all = all && met[i];
  set(milestone::idle, all);
  return met;
}

milestone_times find_milestones(const idle_criteria& criteria, std::span<const trace_point> trace) {
  milestone_times times;
  const auto judged = [&criteria](milestone m) {
    switch (m) {
      case milestone::process_gone: return criteria.judge_process;
      case milestone::memory_back: return criteria.memory_baseline_bytes.has_value();
      case milestone::power_floor: return criteria.power_floor_w.has_value();
      case milestone::idle_bit: return criteria.judge_idle_bit;
      case milestone::sm_clock_floor:
      case milestone::idle: return true;
    }
    return true;
  };
  for (const milestone m : all_milestones) times.judged[static_cast<std::size_t>(m)] = judged(m);

  const std::size_t needed = std::max<std::size_t>(criteria.consecutive, 1);
  std::array<std::size_t, milestone_count> run{};  // samples in a row meeting each condition
  std::array<double, milestone_count> run_start{};
  for (const auto& point : trace) {
    if (point.time_s < 0) continue;  // before the event: the release was still running
    const auto met = conditions_met(criteria, point);
    for (std::size_t i = 0; i < milestone_count; ++i) {
      if (times.time_s[i] || !times.judged[i]) continue;
      if (!met[i]) {
        run[i] = 0;
        continue;
      }
      if (run[i]++ == 0) run_start[i] = point.time_s;
      if (run[i] >= needed) times.time_s[i] = run_start[i];
    }
  }
  return times;
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

}  // namespace coolbench::cli
