/// @file
/// What coolbench reads from one NVIDIA GPU through NVML: its identity and
/// limits (read once), a sample of its changing state, and its processes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "coolbench/telemetry/reading.hpp"

namespace coolbench::telemetry {

/// Cumulative time the GPU has spent in each clock-event reason since the
/// driver loaded, in nanoseconds. Two samples that differ show a throttle
/// between them, however short it was.
struct clock_reason_counters {
  reading<std::uint64_t> sw_power_cap_ns;
  reading<std::uint64_t> sync_boost_ns;
  reading<std::uint64_t> sw_thermal_ns;
  reading<std::uint64_t> hw_thermal_ns;
  reading<std::uint64_t> hw_power_brake_ns;

  friend bool operator==(const clock_reason_counters&, const clock_reason_counters&) = default;
};

/// Identity and fixed limits of a GPU, read once.
struct gpu_identity {
  int cuda_ordinal = -1;    ///< index as CUDA numbers it (after CUDA_VISIBLE_DEVICES)
  unsigned nvml_index = 0;  ///< index as NVML numbers it (all GPUs of the machine)
  std::string name;         ///< "NVIDIA H200"
  std::string uuid;         ///< "GPU-…"
  std::string pci_bus_id;   ///< "00000000:00:06.0"
  std::string driver_version;
  std::string nvml_version;
  reading<int> cuda_driver_version;  ///< e.g. 13000 for CUDA 13.0
  reading<int> compute_capability;   ///< major*10 + minor, e.g. 90

  reading<int> temp_shutdown_c;  ///< the GPU shuts down here
  reading<int> temp_slowdown_c;  ///< hardware slowdown starts here
  reading<int> temp_mem_max_c;   ///< memory's maximum operating temperature
  reading<int> temp_gpu_max_c;   ///< GPU's maximum operating temperature

  reading<unsigned> clock_sm_max_mhz;
  reading<unsigned> clock_mem_max_mhz;
  reading<unsigned> clock_graphics_max_mhz;
  reading<unsigned> clock_sm_boost_mhz;      ///< max customer boost (SM)
  reading<unsigned> clock_graphics_app_mhz;  ///< applications clock now set
  reading<unsigned> clock_graphics_default_app_mhz;

  reading<double> power_limit_w;  ///< enforced power limit
  reading<double> power_default_limit_w;
  reading<double> power_min_limit_w;
  reading<double> power_max_limit_w;

  reading<std::uint64_t> memory_total_bytes;
  reading<bool> persistence_mode;
  reading<std::uint64_t> supported_clock_reasons;  ///< mask of clock_reason bits
};

/// One reading of a GPU's changing state. Trivially copyable.
struct gpu_sample {
  std::int64_t time_ns = 0;  ///< coolbench::steady_now_ns() when the read began

  reading<int> temp_gpu_c;
  reading<int> temp_mem_c;
  reading<unsigned> clock_sm_mhz;
  reading<unsigned> clock_mem_mhz;
  reading<unsigned> clock_graphics_mhz;
  reading<double> power_w;           ///< instantaneous where supported, else NVML's usual reading
  reading<double> power_avg_w;       ///< averaged over about a second
  reading<std::uint64_t> energy_mj;  ///< since the driver loaded
  reading<int> pstate;               ///< 0 = P0 … 15; NVML reads P0 even idle on the H200
  reading<std::uint64_t> clock_reasons;  ///< clock_reason bits
  clock_reason_counters reason_counters;
  reading<unsigned> util_gpu_pct;
  reading<unsigned> util_mem_pct;
  reading<std::uint64_t> memory_used_bytes;

  friend bool operator==(const gpu_sample&, const gpu_sample&) = default;
};

/// A process that holds a context on a GPU.
struct gpu_process {
  std::uint32_t pid = 0;
  reading<std::uint64_t> used_memory_bytes;  ///< unsupported under some containers
  std::string name;       ///< command name; empty when the process is not visible here
  bool graphics = false;  ///< listed as a graphics (not compute) process
};

/// How two GPUs are connected, as NVML reports it (`nvidia-smi topo -m`'s
/// matrix, one cell). Empty/nullopt parts were not reported by the driver.
struct gpu_link {
  /// The PCIe path between them: "PIX" (one PCIe switch), "PXB" (several
  /// switches), "PHB" (a host bridge), "NODE" (host bridges of one NUMA node),
  /// "SYS" (across NUMA nodes), "BOARD" (the same board); empty when unknown.
  std::string pcie_path;
  /// Active NVLinks of the first GPU whose far end is the second GPU.
  reading<unsigned> direct_nvlinks;
  /// Active NVLinks of the first GPU in all (through an NVSwitch, they reach
  /// every GPU that NVLink P2P reaches).
  reading<unsigned> active_nvlinks;
  /// Whether the driver reports NVLink peer-to-peer between the two.
  reading<bool> nvlink_p2p;

  /// The matrix cell: "NV<links>" over NVLink (direct links, else all active
  /// links when they go through a switch), else the PCIe path, "?" if neither is known.
  [[nodiscard]] std::string label() const;
};

/// Which readings a read takes. Measured on an H200 (driver 580.159.04,
/// docs/perf/ci.md), the energy counter costs about 2.4 ms of CPU per read and
/// the HW thermal and HW power-brake time counters about 0.4 ms together,
/// against a few microseconds for everything else together. Readings a scope
/// leaves out read as `skipped`. All three are cumulative, so reading them less
/// often loses nothing but time resolution.
enum class read_scope : std::uint8_t {
  all,       ///< every reading
  fast,      ///< all but the energy counter and the HW thermal / power-brake counters
  counters,  ///< `fast` plus the HW thermal / power-brake counters: all but the energy counter
};

/// One GPU seen through NVML, addressed by its CUDA ordinal. Loads NVML (and,
/// to map ordinals, the CUDA driver) at run time: constructing one on a machine
/// without the NVIDIA driver throws not_available. Never creates a CUDA context.
class gpu_telemetry {
 public:
  /// GPUs visible to CUDA (honours CUDA_VISIBLE_DEVICES). Throws not_available
  /// when there is no driver.
  [[nodiscard]] static int device_count();

  /// Throws invalid_argument when no GPU has this ordinal.
  explicit gpu_telemetry(int cuda_ordinal);
  ~gpu_telemetry();
  gpu_telemetry(const gpu_telemetry&) = delete;
  gpu_telemetry& operator=(const gpu_telemetry&) = delete;
  gpu_telemetry(gpu_telemetry&&) noexcept;
  gpu_telemetry& operator=(gpu_telemetry&&) noexcept;

  [[nodiscard]] const gpu_identity& identity() const noexcept;

  /// Reads the changing state. A reading that fails is marked failed; read()
  /// itself throws only when the GPU is gone.
  [[nodiscard]] gpu_sample read(read_scope scope = read_scope::all) const;

  /// Compute and graphics processes on this GPU, with their memory and names.
  [[nodiscard]] std::vector<gpu_process> processes() const;

  /// How this GPU reaches `other` (NVLink and the PCIe path); never throws
  /// for what the driver does not report: those parts read as unknown.
  [[nodiscard]] gpu_link link_to(const gpu_telemetry& other) const;

  struct impl;

 private:
  std::unique_ptr<impl> m_impl;
};

}  // namespace coolbench::telemetry
