#include "coolbench/telemetry/energy_probe.hpp"

#include <cstdio>
#include <string>

#include "coolbench/core/error.hpp"

namespace coolbench::telemetry {
namespace {

std::string reads_line(const energy_probe_result& r) {
  char text[96];
  std::snprintf(text, sizeof text, "%d read%s over %.2f s", r.reads, r.reads == 1 ? "" : "s",
                r.seconds);
  std::string line = text;
  if (r.failed_reads > 0) line += ", " + std::to_string(r.failed_reads) + " failed";
  return line;
}

}  // namespace

energy_period_probe::energy_period_probe(energy_probe_options options) : m_options(options) {
  if (options.steps < 1 || options.steps > 100) {
    throw invalid_argument("energy probe steps must be 1 to 100, got " +
                           std::to_string(options.steps));
  }
  if (options.max_time < std::chrono::milliseconds(1) ||
      options.max_time > std::chrono::milliseconds(60000)) {
    throw invalid_argument("energy probe time must be 1 to 60000 ms, got " +
                           std::to_string(options.max_time.count()) + " ms");
  }
  if (options.max_reads < 2 || options.max_reads > 10000) {
    throw invalid_argument("energy probe reads must be 2 to 10000, got " +
                           std::to_string(options.max_reads));
  }
}

void energy_period_probe::restart_timing() {
  m_last_value.reset();
  m_change_ns.clear();
  m_saw_repeat = false;
}

bool energy_period_probe::add(std::int64_t time_ns, const reading<std::uint64_t>& energy_mj) {
  if (m_done) return true;
  if (m_result.reads == 0) m_first_read_ns = time_ns;
  ++m_result.reads;
  m_result.seconds = static_cast<double>(time_ns - m_first_read_ns) / 1e9;
  if (energy_mj.status == reading_status::unsupported) {
    m_done = true;  // nothing to wait for
    m_result.note = "this GPU or driver does not report the energy counter";
    return true;
  }
  if (!energy_mj.ok()) {
    ++m_result.failed_reads;
  } else if (!m_last_value || energy_mj.value < *m_last_value) {
    restart_timing();  // the first read, or the counter was reset (the driver reloaded)
    m_last_value = energy_mj.value;
  } else if (energy_mj.value == *m_last_value) {
    if (!m_change_ns.empty()) m_saw_repeat = true;
  } else {
    m_last_value = energy_mj.value;
    ++m_changes_seen;
    // A first change right after a failed read is only the new baseline.
    if (!m_change_ns.empty() || !m_previous_failed) m_change_ns.push_back(time_ns);
    if (static_cast<int>(m_change_ns.size()) > m_options.steps) {
      finish_learned();
      return true;
    }
  }
  m_previous_failed = !energy_mj.ok();
  const bool out_of_time =
      time_ns - m_first_read_ns >=
      std::chrono::duration_cast<std::chrono::nanoseconds>(m_options.max_time).count();
  if (out_of_time || m_result.reads >= m_options.max_reads) finish_unlearned();
  return m_done;
}

void energy_period_probe::finish_learned() {
  m_done = true;
  m_result.steps = m_options.steps;
  m_result.resolved = m_saw_repeat;
  m_result.period_ms =
      static_cast<double>(m_change_ns.back() - m_change_ns.front()) / 1e6 / m_options.steps;
  char text[160];
  if (m_result.resolved) {
    std::snprintf(text, sizeof text, "the energy counter moved every %.1f ms (%d steps timed",
                  *m_result.period_ms, m_result.steps);
  } else {
    std::snprintf(text, sizeof text,
                  "the energy counter moved at every read, so every <= %.1f ms (%d steps timed",
                  *m_result.period_ms, m_result.steps);
  }
  m_result.note = std::string(text) + ", " + reads_line(m_result) + ")";
}

void energy_period_probe::finish_unlearned() {
  m_done = true;
  m_result.steps = 0;
  m_result.period_ms.reset();
  std::string why;
  if (m_result.failed_reads == m_result.reads) {
    why = "every read of the energy counter failed";
  } else if (m_changes_seen == 0) {
    why = "the energy counter did not move";
  } else {
    why = "the energy counter moved " + std::to_string(m_changes_seen) + " time" +
          (m_changes_seen == 1 ? "" : "s") + ", " + std::to_string(m_options.steps + 1) +
          " changes timed were needed";
  }
  m_result.note = why + " (" + reads_line(m_result) + "): its period was not learned";
}

}  // namespace coolbench::telemetry
