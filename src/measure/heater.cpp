// The GEMM heater's thread: prepare, run until told to stop, release.
#include "coolbench/measure/heater.hpp"

#include <utility>

namespace coolbench::measure {

heater::heater(int device, gemm_chain_spec chain) : m_device(device), m_chain(chain) {
  validate(m_chain);
}

heater::~heater() {
  try {
    stop();
  } catch (...) {  // NOLINT(bugprone-empty-catch): an error of the thread has no one to go to
  }
}

double heater::flops_per_gemm() const noexcept {
  return gemm_flops(m_chain) / static_cast<double>(gemm_count(m_chain));
}

void heater::start() {
  if (m_thread.joinable()) throw invalid_argument("the heater was started and not stopped");
  m_stop = false;
  m_finished = false;
  m_gemms = 0;
  {
    std::lock_guard lock(m_mutex);
    m_ready = false;
    m_failure = nullptr;
  }
  m_thread = std::thread([this] { loop(); });
  std::unique_lock lock(m_mutex);
  m_ready_cv.wait(lock, [this] { return m_ready; });
  if (m_failure) {
    lock.unlock();
    m_thread.join();
    std::exception_ptr failure;
    {
      std::lock_guard again(m_mutex);
      failure = std::exchange(m_failure, nullptr);
    }
    std::rethrow_exception(failure);
  }
}

std::uint64_t heater::stop() {
  if (!m_thread.joinable()) return m_gemms.load();
  m_stop = true;
  m_thread.join();
  std::exception_ptr failure;
  {
    std::lock_guard lock(m_mutex);
    failure = std::exchange(m_failure, nullptr);
  }
  if (failure) std::rethrow_exception(failure);
  return m_gemms.load();
}

void heater::loop() {
  // The chain, its lease included, lives and dies in this thread (a lease is
  // used from the thread that took it).
  const auto signal_ready = [this](std::exception_ptr failure) {
    std::lock_guard lock(m_mutex);
    if (!m_ready) {
      m_ready = true;
      m_failure = std::move(failure);
      m_ready_cv.notify_all();
    } else if (failure) {
      m_failure = std::move(failure);
    }
  };
  try {
    auto chain = make_gemm_chain(m_chain, m_device);
    chain->prepare();
    bool first = true;
    while (!m_stop.load()) {
      (void)chain->run();
      m_gemms += static_cast<std::uint64_t>(gemm_count(m_chain));
      if (first) {
        signal_ready(nullptr);
        first = false;
      }
    }
    chain->release();
    if (first) signal_ready(nullptr);  // stopped before the first run ended
  } catch (...) {
    m_stop = true;  // ends a run_for() early
    signal_ready(std::current_exception());
  }
  m_finished = true;
}

}  // namespace coolbench::measure
