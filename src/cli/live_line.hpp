// The live progress line of a long run on a terminal (docs/cli/run.md, "Progress"): where the
// run is (gating to N C, burst k, samples kept, the CI now), rewritten in place on stderr.
// Nothing is written when stderr is not a terminal or the run is quiet, so piped and logged
// output stays exactly the summary and the progress lines.
#pragma once

#include <string>

#include "coolbench/measure/protocol.hpp"

namespace coolbench::cli {

class live_line {
 public:
  /// Shown after this much of the run: a short run gets no line.
  static constexpr double k_after_s = 2.0;

  /// Writes to `fd` when it is a terminal and not `quiet`.
  explicit live_line(bool quiet, int fd = 2);
  ~live_line();
  live_line(const live_line&) = delete;
  live_line& operator=(const live_line&) = delete;

  /// Redraws the line with `s` (once the run is k_after_s old).
  void update(const measure::run_status& s);
  /// Takes the line off the screen (before other output is printed, and at the end).
  void clear();
  [[nodiscard]] bool enabled() const { return m_enabled; }

  /// The line's text: "gating: 52 C -> 45 C", "burst 3: 1234 kept, CI now ±0.42%", with the
  /// time so far.
  [[nodiscard]] static std::string text(const measure::run_status& s);

 private:
  void write(const std::string& bytes) const;

  int m_fd;
  bool m_enabled;
  bool m_shown = false;
};

}  // namespace coolbench::cli
