// Ctrl-C for long-running commands: the first SIGINT or SIGTERM asks the
// command to finish what it is writing and stop; it does not kill it.
#pragma once

#include <chrono>

namespace coolbench::cli {

/// Installs the handlers (idempotent).
void catch_interrupts();

/// True once SIGINT or SIGTERM arrived.
[[nodiscard]] bool interrupted() noexcept;

/// Sleeps up to `duration`, returning early (false) when interrupted.
bool sleep_unless_interrupted(std::chrono::steady_clock::duration duration);

}  // namespace coolbench::cli
