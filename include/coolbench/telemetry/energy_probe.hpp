/// @file
/// Learns how often NVML's energy counter moves, from a short burst of reads.
///
/// The counter covers the time up to its own last update, so an energy figure
/// needs its update period (docs/measure.md, "Energy"). Reads at a slow period
/// (the protocol reads energy once a second: each read costs milliseconds of
/// CPU) see a new value every time and only bound the period by their interval.
/// A burst of reads a few periods long at the start times the counter's steps
/// instead; the sampler feeds it (sampler_options::energy_probe).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "coolbench/telemetry/reading.hpp"

namespace coolbench::telemetry {

struct energy_probe_options {
  /// Steps of the counter to time after its first change seen; the period is
  /// their mean. 1 to 100.
  int steps = 4;
  /// Gives up this long after its first read without the steps. 1 to 60000 ms.
  std::chrono::milliseconds max_time{1000};
  /// Or after this many reads (each costs about 3 ms of CPU on an H200). 2 to 10000.
  int max_reads = 100;
};

/// What a probe learned, or why it learned nothing.
struct energy_probe_result {
  /// The counter's update period: the time from the first change seen to the
  /// last over the steps between. Empty when the probe could not learn it.
  std::optional<double> period_ms;
  /// True when some read between two changes saw the old value again, so the
  /// reads resolved the steps; false when every read saw a new value and the
  /// period is only known to be at most the reads' interval (period_ms then
  /// holds that bound).
  bool resolved = false;
  int steps = 0;  ///< steps timed
  int reads = 0;
  int failed_reads = 0;
  double seconds = 0;  ///< from the first read to the last
  std::string note;    ///< one line: what it learned, or why it learned nothing
};

/// A state machine fed one read at a time, so that the sampler drives it on
/// its own thread and tests drive it on a scripted clock. Each change is
/// placed at the read that saw it, up to one read interval late. The first
/// change timed must follow a read that worked (else it could be two
/// intervals late and the period would come out short); a change seen late
/// after a failed read later on only lengthens the period, the safe side for
/// sizing energy windows. A counter that went backwards restarts the timing.
class energy_period_probe {
 public:
  /// Throws invalid_argument for options outside their ranges.
  explicit energy_period_probe(energy_probe_options options = {});

  /// One read of the counter, stamped `time_ns` (steady clock). Returns true
  /// once the probe is done (it learned the period or ran out of time or
  /// reads); reads after that are ignored.
  bool add(std::int64_t time_ns, const reading<std::uint64_t>& energy_mj);

  [[nodiscard]] bool done() const noexcept { return m_done; }
  /// Final once done(); before that, what it has so far (no period).
  [[nodiscard]] const energy_probe_result& result() const noexcept { return m_result; }
  [[nodiscard]] const energy_probe_options& options() const noexcept { return m_options; }

 private:
  void restart_timing();
  void finish_learned();
  void finish_unlearned();

  energy_probe_options m_options;
  energy_probe_result m_result;
  bool m_done = false;
  std::int64_t m_first_read_ns = 0;
  std::optional<std::uint64_t> m_last_value;  ///< of the last read, while timing is unbroken
  std::vector<std::int64_t> m_change_ns;      ///< reads that saw a new value, in order
  bool m_saw_repeat = false;                  ///< a read after the first change saw no change
  bool m_previous_failed = false;
  int m_changes_seen = 0;  ///< all changes seen, timing restarts included
};

}  // namespace coolbench::telemetry
