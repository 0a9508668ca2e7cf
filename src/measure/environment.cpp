// The protocol's real environments: a GPU seen through the telemetry sampler
// and released through the device layer, and the host alone for CPU work.
#include <unistd.h>

#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "coolbench/core/clock.hpp"
#include "coolbench/core/error.hpp"
#include "coolbench/device/device.hpp"
#include "coolbench/measure/isolation.hpp"
#include "coolbench/measure/protocol.hpp"
#include "coolbench/telemetry/sampler.hpp"
#ifdef COOLBENCH_MEASURE_HAVE_CUDA
#include "measure/detail/sentinel.hpp"
#endif

namespace coolbench::measure {
namespace {

// The energy counter's update period, learned once per GPU (by CUDA ordinal) for the process:
// a later environment on the same GPU reads energy at its slow period from the start. A probe
// whose reads failed is not kept, so the next environment tries again.
std::mutex g_learned_mutex;                               // NOLINT: process-wide by design
std::map<int, telemetry::energy_probe_result> g_learned;  // NOLINT: guarded by the mutex

std::optional<telemetry::energy_probe_result> learned_energy_period(int ordinal) {
  std::lock_guard lock(g_learned_mutex);
  const auto it = g_learned.find(ordinal);
  if (it == g_learned.end()) return std::nullopt;
  return it->second;
}

void keep_energy_period(int ordinal, const telemetry::energy_probe_result& probe) {
  if (probe.failed_reads > 0) return;
  std::lock_guard lock(g_learned_mutex);
  g_learned.emplace(ordinal, probe);
}

// The sampler at the protocol's settings. The HW thermal and power-brake time counters (about
// 0.5 ms of CPU a read on an H200) and the energy counter (2.4-4 ms) once a second, together;
// the reason bits and the software counters, which end most cold-mode bursts, every tick. Read
// every 200 ms, the HW counters put the sampler over 1 % of a core (docs/perf/ci.md, "The
// protocol's own cost"); a move they report is searched for over the second since their last
// reading (state_change.cpp). The energy counter is read after a start-up probe has learned how
// often it moves (about 100 ms on an H200), so energy windows stay about a second long
// (docs/measure.md, "Energy"); every 200 ms it alone would cost 1.2 % of a core.
telemetry::sampler_options protocol_sampler_options(std::chrono::milliseconds period, bool probe) {
  telemetry::sampler_options o;
  o.period = period;
  o.slow_period = std::chrono::milliseconds(1000);
  o.energy_period = std::chrono::milliseconds(1000);
  if (probe) o.energy_probe = telemetry::energy_probe_options{};
  return o;
}

class host_environment : public environment {
 public:
  explicit host_environment(std::function<bool()> interrupted)
      : m_interrupted(std::move(interrupted)) {}
  std::int64_t now_ns() override { return steady_now_ns(); }
  void sleep_for(std::chrono::nanoseconds duration) override {
    std::this_thread::sleep_for(duration);
  }
  run_conditions conditions() override { return {}; }
  std::optional<telemetry::gpu_sample> latest() override { return std::nullopt; }
  std::vector<telemetry::gpu_sample> between(std::int64_t, std::int64_t) override { return {}; }
  std::chrono::nanoseconds telemetry_period() const override { return {}; }
  std::string release_device() override { return {}; }
  bool interrupted() override { return m_interrupted && m_interrupted(); }

 private:
  std::function<bool()> m_interrupted;
};

class gpu_environment final : public host_environment {
 public:
  gpu_environment(int ordinal, std::chrono::milliseconds period, std::function<bool()> interrupted,
                  context_release release)
      : host_environment(std::move(interrupted)),
        m_ordinal(ordinal),
        m_release(release),
        m_telemetry(ordinal),
        m_learned(learned_energy_period(ordinal)),
        m_sampler(telemetry::make_gpu_source(ordinal),
                  protocol_sampler_options(period, !m_learned.has_value())) {
    m_sampler.start();
    // The protocol's first gate needs a temperature: wait for the first read.
    for (int i = 0; i < 200 && !m_sampler.latest(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  run_conditions conditions() override {
    run_conditions c;
    c.gpu = m_telemetry.identity();
    const auto self = static_cast<std::uint32_t>(getpid());
    for (auto& p : m_telemetry.processes()) {
      if (p.pid == self) continue;
      std::ostringstream w;
      w << "GPU " << m_ordinal << " is shared: pid " << p.pid
        << (p.name.empty() ? "" : " (" + p.name + ")");
      if (p.used_memory_bytes.ok()) w << " holds " << (p.used_memory_bytes.value >> 20) << " MiB";
      w << "; its work changes the figures";
      c.warnings.push_back(w.str());
      c.other_processes.push_back(std::move(p));
    }
    return c;
  }

  std::optional<telemetry::gpu_sample> latest() override {
    const auto s = m_sampler.latest();
    if (!s) return std::nullopt;
    return *s;
  }

  std::vector<telemetry::gpu_sample> between(std::int64_t from_ns, std::int64_t to_ns) override {
    return m_sampler.between(from_ns, to_ns);
  }

  std::chrono::nanoseconds telemetry_period() const override { return m_sampler.options().period; }

  std::optional<telemetry::energy_probe_result> energy_counter_probe() override {
    if (m_learned) {
      telemetry::energy_probe_result kept = *m_learned;
      kept.note += "; probed by an earlier run on this GPU in this process";
      return kept;
    }
    // The probe ends within its max_time of its first read; a read that hangs is the limit.
    const auto wait = m_sampler.options().energy_probe->max_time + std::chrono::seconds(2);
    if (const auto probe = m_sampler.energy_probe(wait)) {
      keep_energy_period(m_ordinal, *probe);
      return probe;
    }
    telemetry::energy_probe_result unfinished;
    unfinished.note = "the start-up probe of the energy counter had not finished";
    return unfinished;
  }

  bool resets_context() const override { return m_release != context_release::keep; }

  std::optional<sentinel_reading> check_sentinel(sentinel_kind kind) override {
#ifdef COOLBENCH_MEASURE_HAVE_CUDA
    if (kind == sentinel_kind::none) return std::nullopt;
    auto& s = kind == sentinel_kind::gemm_chain ? m_gemm_sentinel : m_walk_sentinel;
    if (!s) s = std::make_unique<detail::sentinel>(m_ordinal, kind);
    return s->check();
#else
    (void)kind;
    return std::nullopt;
#endif
  }

  std::string isolate(isolation how) override {
    // A kept context is never reset: the framework that holds it would not survive.
    if (how == isolation::release && m_release == context_release::keep) return {};
    if (how == isolation::process) return {};  // the caller's: a process per workload
    return measure::isolate(how, m_ordinal);
  }

  std::string release_device() override {
    if (m_release == context_release::keep) {
      return "release: none, the context is kept (release keep: the measured code's framework "
             "holds it)";
    }
    if (m_release == context_release::process) {
      return "release: the command's process ended, and its context with it";
    }
    const device::release_report r = device::device::get(m_ordinal).release();
    std::ostringstream line;
    if (!r.released) {
      line << "release: " << (r.note.empty() ? "nothing to release" : r.note);
    } else {
      line << "release: freed " << (r.bytes_freed >> 20) << " MiB, context "
           << (r.context_reset ? "reset" : "kept") << ", " << static_cast<int>(r.seconds * 1000)
           << " ms";
      if (r.process_listed_after) {
        line << (*r.process_listed_after ? ", process still listed on the GPU"
                                         : ", process no longer listed on the GPU");
      }
    }
    return line.str();
  }

 private:
  int m_ordinal;
  context_release m_release;
  telemetry::gpu_telemetry m_telemetry;
#ifdef COOLBENCH_MEASURE_HAVE_CUDA
  std::unique_ptr<detail::sentinel> m_gemm_sentinel;  // made at their first check
  std::unique_ptr<detail::sentinel> m_walk_sentinel;
#endif
  std::optional<telemetry::energy_probe_result> m_learned;  ///< by an earlier environment
  telemetry::sampler m_sampler;
};

}  // namespace

std::unique_ptr<environment> make_gpu_environment(int ordinal,
                                                  std::chrono::milliseconds telemetry_period,
                                                  std::function<bool()> interrupted,
                                                  context_release release) {
  return std::make_unique<gpu_environment>(ordinal, telemetry_period, std::move(interrupted),
                                           release);
}

std::unique_ptr<environment> make_cpu_environment(std::function<bool()> interrupted) {
  return std::make_unique<host_environment>(std::move(interrupted));
}

std::string to_string(context_release release) {
  switch (release) {
    case context_release::reset: return "reset";
    case context_release::keep: return "keep";
    case context_release::process: return "process";
  }
  return "reset";
}

context_release parse_context_release(const std::string& text) {
  if (text == "reset") return context_release::reset;
  if (text == "keep") return context_release::keep;
  throw invalid_argument("unknown release '" + text + "'; use one of: reset, keep");
}

}  // namespace coolbench::measure
