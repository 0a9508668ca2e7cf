// The samples of a run and which of them count: the one place a sample is kept or discarded.
#include "measure/protocol/run.hpp"

namespace coolbench::measure::detail {

std::size_t sample_log::add(sample_record s) {
  if (s.kept) count(s, +1);
  m_samples.push_back(std::move(s));
  return m_samples.size() - 1;
}

void sample_log::label(std::size_t i, const std::string& reason) {
  sample_record& s = m_samples[i];
  if (s.throttled) return;
  s.throttled = true;
  s.throttle_reason = reason;
}

void sample_log::discard(std::size_t i, const std::string& reason) {
  label(i, reason);
  sample_record& s = m_samples[i];
  if (!s.kept) return;
  s.kept = false;
  count(s, -1);
}

void sample_log::count(const sample_record& s, int delta) {
  m_kept += delta;
  m_kept_by_context[s.context] += delta;
}

int sample_log::kept_in(int context) const {
  const auto it = m_kept_by_context.find(context);
  return it == m_kept_by_context.end() ? 0 : it->second;
}

std::vector<double> sample_log::kept_latencies() const {
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(m_kept));
  for (const auto& s : m_samples) {
    if (s.kept) out.push_back(s.time.latency_ms);
  }
  return out;
}

std::vector<double> sample_log::kept_latencies_in(int context) const {
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(kept_in(context)));
  for (const auto& s : m_samples) {
    if (s.kept && s.context == context) out.push_back(s.time.latency_ms);
  }
  return out;
}

}  // namespace coolbench::measure::detail
