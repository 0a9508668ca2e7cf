#include "cli/release_check_idle.hpp"

#include <algorithm>
#include <cmath>

#include "cli/interrupt.hpp"
#include "coolbench/core/clock.hpp"
#include "coolbench/telemetry/clock_reasons.hpp"

namespace coolbench::cli {

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

namespace {

double seconds_between(std::int64_t from_ns, std::int64_t to_ns) {
  return static_cast<double>(to_ns - from_ns) / 1e9;
}

}  // namespace

idle_watch::idle_watch(int device, std::chrono::milliseconds period)
    : m_device(device), m_period(period), m_gpu(device) {}

void idle_watch::note_clock(const telemetry::gpu_sample& s) {
  if (s.clock_sm_mhz.ok()) {
    m_lowest_sm_clock =
        std::min(m_lowest_sm_clock.value_or(s.clock_sm_mhz.value), s.clock_sm_mhz.value);
  }
}

void idle_watch::take_baseline(std::chrono::steady_clock::duration window) {
  const std::int64_t start_ns = steady_now_ns();
  m_pre_processes = m_gpu.processes();
  for (const auto& p : m_pre_processes) m_pre_pids.insert(p.pid);
  m_sampler.emplace(telemetry::make_gpu_source(m_device),
                    telemetry::sampler_options{.period = m_period});
  m_sampler->start();
  sleep_unless_interrupted(window);
  m_pre_run = m_sampler->since(start_ns - 1);
  if (m_pre_run.empty()) m_pre_run.push_back(m_gpu.read(telemetry::read_scope::fast));
  m_pre_idle = pre_run_idle(m_pre_run);
  for (const auto& s : m_pre_run) note_clock(s);
}

idle_criteria idle_watch::current_criteria() const {
  const auto& supported = m_gpu.identity().supported_clock_reasons;
  const bool offers_idle_bit =
      !supported.ok() ||
      (supported.value & static_cast<std::uint64_t>(telemetry::clock_reason::gpu_idle)) != 0;
  return make_idle_criteria(m_pre_run, m_lowest_sm_clock, offers_idle_bit);
}

std::optional<bool> idle_watch::listed(const std::vector<telemetry::gpu_process>& processes,
                                       listing_rule rule, std::uint32_t pid) const {
  switch (rule) {
    case listing_rule::by_pid:
      return std::any_of(processes.begin(), processes.end(),
                         [pid](const auto& p) { return p.pid == pid; });
    case listing_rule::by_new_pid:
      return std::any_of(processes.begin(), processes.end(),
                         [this](const auto& p) { return !m_pre_pids.contains(p.pid); });
    case listing_rule::unknown: return std::nullopt;
  }
  return std::nullopt;
}

hold_view idle_watch::take_view(std::uint32_t pid) const {
  hold_view view;
  view.processes = m_gpu.processes();
  if (auto latest = m_sampler->latest()) view.sample = *latest;
  std::vector<const telemetry::gpu_process*> new_ones;
  for (const auto& p : view.processes) {
    if (p.pid == pid) {
      view.rule = listing_rule::by_pid;
      if (p.used_memory_bytes.ok()) view.holder_memory_bytes = p.used_memory_bytes.value;
    }
    if (!m_pre_pids.contains(p.pid)) new_ones.push_back(&p);
  }
  if (view.rule != listing_rule::by_pid && !new_ones.empty()) {
    view.rule = listing_rule::by_new_pid;
    if (new_ones.size() == 1 && new_ones.front()->used_memory_bytes.ok()) {
      view.holder_memory_bytes = new_ones.front()->used_memory_bytes.value;
    }
  }
  return view;
}

watch_result idle_watch::watch(std::int64_t from_ns, std::int64_t event_ns, listing_rule rule,
                               std::uint32_t pid, std::vector<poll> polls, double min_s,
                               double timeout_s) {
  watch_result result;
  // Each sample takes the process listing of the last poll at or before it; `polls` holds what
  // is known from before the watch (the hold's view, the release report).
  std::int64_t last_ns = from_ns - 1;
  while (true) {
    const std::int64_t poll_ns = steady_now_ns();
    polls.emplace_back(poll_ns, listed(m_gpu.processes(), rule, pid));
    for (const auto& s : m_sampler->since(last_ns)) {
      last_ns = s.time_ns;
      note_clock(s);
      std::optional<bool> at;
      for (auto it = polls.rbegin(); it != polls.rend(); ++it) {
        if (it->first <= s.time_ns) {
          at = it->second;
          break;
        }
      }
      result.trace.push_back({seconds_between(event_ns, s.time_ns), s, at});
    }
    result.criteria = current_criteria();
    result.criteria.judge_process = rule != listing_rule::unknown;
    result.times = find_milestones(result.criteria, result.trace);
    const double elapsed_s = seconds_between(event_ns, steady_now_ns());
    if (result.times.at(milestone::idle) && elapsed_s >= min_s) break;
    if (elapsed_s >= timeout_s) break;
    if (!sleep_unless_interrupted(m_period)) {
      result.interrupted = true;
      break;
    }
  }
  return result;
}

}  // namespace coolbench::cli
