#include "cli/interrupt.hpp"

#include <csignal>
#include <thread>

namespace coolbench::cli {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;

extern "C" void on_interrupt(int /*signal*/) { g_interrupted = 1; }

}  // namespace

void catch_interrupts() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool interrupted() noexcept { return g_interrupted != 0; }

bool sleep_unless_interrupted(std::chrono::steady_clock::duration duration) {
  // Short naps keep Ctrl-C responsive without a second thread.
  constexpr auto nap = std::chrono::milliseconds(20);
  const auto until = std::chrono::steady_clock::now() + duration;
  while (!interrupted()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) return true;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(nap, until - now));
  }
  return false;
}

}  // namespace coolbench::cli
