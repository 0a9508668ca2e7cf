#include "cli/live_line.hpp"

#include <fmt/format.h>
#include <unistd.h>

namespace coolbench::cli {

live_line::live_line(bool quiet, int fd) : m_fd(fd), m_enabled(!quiet && ::isatty(fd) == 1) {}

live_line::~live_line() { clear(); }

std::string live_line::text(const measure::run_status& s) {
  std::string out = s.label.empty() ? std::string() : s.label + " ";
  if (s.phase == "gating") {
    out += fmt::format("gating to {:g} C", s.target_temp_c);
    if (s.temp_c) out += fmt::format(" (now {} C)", *s.temp_c);
  } else if (s.phase == "measuring") {
    out += s.burst > 0 ? fmt::format("burst {}", s.burst) : std::string("measuring");
  } else {
    out += s.phase;
    if (s.temp_c) out += fmt::format(" at {} C", *s.temp_c);
  }
  out += fmt::format(" | {} samples kept", s.kept);
  if (s.rel_ci_now) out += fmt::format(" | CI now ±{:.2f}%", 100 * *s.rel_ci_now);
  out += fmt::format(" | {:.0f} s", s.elapsed_s);
  return out;
}

void live_line::update(const measure::run_status& s) {
  if (!m_enabled || s.elapsed_s < k_after_s) return;
  // \r to the line's start, the text, then erase what a longer line left (ECMA-48 EL).
  write("\r" + text(s) + "\x1b[K");
  m_shown = true;
}

void live_line::clear() {
  if (!m_shown) return;
  write("\r\x1b[K");
  m_shown = false;
}

void live_line::write(const std::string& bytes) const {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(m_fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) return;  // a terminal gone away: the line is a courtesy, not output
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace coolbench::cli
