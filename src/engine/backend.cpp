// What a host backend answers to the device-only parts of the interface.
#include "engine/backend.hpp"

namespace coolbench::engine {

std::shared_ptr<device_storage> backend::allocate_block(std::size_t bytes) {
  throw not_available("the " + std::string(name()) + " backend has no device memory (asked for " +
                      std::to_string(bytes) + " bytes)");
}

void backend::copy_into(const tensor& host, const tensor& target) {
  static_cast<void>(host);
  static_cast<void>(target);
  throw not_available("the " + std::string(name()) + " backend has no device memory to copy into");
}

void backend::begin_recording() {
  throw not_available("the " + std::string(name()) + " backend cannot record its work");
}

std::unique_ptr<recorded_work> backend::end_recording() {
  throw not_available("the " + std::string(name()) + " backend cannot record its work");
}

// A host backend's nodes are done when run() returns: its clock marks them.
void backend::begin_marks() {
  m_host_marks.clear();
  m_host_marks.push_back(std::chrono::steady_clock::now());
}

void backend::mark() { m_host_marks.push_back(std::chrono::steady_clock::now()); }

std::vector<double> backend::mark_intervals_ms() {
  std::vector<double> intervals;
  for (std::size_t i = 1; i < m_host_marks.size(); ++i) {
    intervals.push_back(
        std::chrono::duration<double, std::milli>(m_host_marks[i] - m_host_marks[i - 1]).count());
  }
  return intervals;
}

}  // namespace coolbench::engine
