// coolbench-context-probe: what a context with nothing in it costs in NVML's
// per-process accounting, measured in a process of its own (the device layer
// runs it as a short-lived child; docs/device.md, "The bare context").
//
//   coolbench-context-probe --ordinal 0 --api runtime|driver [--allocate 1,2097152,...]
//
// It makes the primary context the way another runtime would (the CUDA
// runtime's cudaFree(0), or the driver's cuDevicePrimaryCtxRetain; the module
// loading mode is the CUDA_MODULE_LOADING it was started with), reads its own
// NVML entry, then optionally allocates the given sizes one after another
// (kept live) and reads NVML after each: the allocation granularity. It
// prints one JSON object on stdout; on failure it prints {"error": ...} and
// exits 1.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "coolbench/core/error.hpp"
#include "coolbench/telemetry/gpu.hpp"
#include "core/dynamic_library.hpp"

namespace {

using coolbench::telemetry::gpu_telemetry;
using nlohmann::json;

struct options {
  int ordinal = 0;
  std::string api = "runtime";
  std::vector<std::uint64_t> allocations;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw coolbench::invalid_argument(std::string(arg) + " needs a value");
      return argv[++i];
    };
    if (arg == "--ordinal") {
      o.ordinal = std::stoi(value());
    } else if (arg == "--api") {
      o.api = value();
      if (o.api != "runtime" && o.api != "driver")
        throw coolbench::invalid_argument("--api is runtime or driver, not " + o.api);
    } else if (arg == "--allocate") {
      const std::string list = value();
      std::size_t start = 0;
      while (start < list.size()) {
        const std::size_t comma = list.find(',', start);
        o.allocations.push_back(std::stoull(list.substr(start, comma - start)));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else {
      throw coolbench::invalid_argument("unknown argument " + std::string(arg) +
                                        "; usage: coolbench-context-probe --ordinal N --api "
                                        "runtime|driver [--allocate BYTES,...]");
    }
  }
  return o;
}

/// This process's entry in NVML's list, read twice 20 ms apart: the second
/// read shows whether the figure was still settling.
std::optional<std::uint64_t> own_memory(const gpu_telemetry& gpu) {
  std::optional<std::uint64_t> found;
  for (int read = 0; read < 2; ++read) {
    if (read > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    found.reset();
    for (const auto& p : gpu.processes()) {
      if (p.pid == static_cast<std::uint32_t>(getpid()) && p.used_memory_bytes.ok())
        found = p.used_memory_bytes.value;
    }
  }
  return found;
}

/// The driver calls the probe needs, from the driver library itself.
struct driver_api {
  coolbench::core::dynamic_library library{{"libcuda.so.1", "libcuda.so"},
                                           "The CUDA driver is missing."};
  template <class F>
  F get(const char* name) const {
    void* f = library.find(name);
    if (f == nullptr) throw coolbench::not_available(std::string("libcuda lacks ") + name);
    return reinterpret_cast<F>(f);  // NOLINT: how dlsym is used
  }
  void check(int result, const char* call) const {
    if (result != 0)
      throw coolbench::error(std::string(call) + " returned CUresult " + std::to_string(result));
  }
};

void make_context(const options& o, const driver_api& driver) {
  if (o.api == "runtime") {
    if (cudaSetDevice(o.ordinal) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) {
      throw coolbench::error(std::string("cudaFree(0): ") + cudaGetErrorString(cudaGetLastError()));
    }
    return;
  }
  driver.check(driver.get<int (*)(unsigned)>("cuInit")(0), "cuInit");
  int device = 0;
  driver.check(driver.get<int (*)(int*, int)>("cuDeviceGet")(&device, o.ordinal), "cuDeviceGet");
  void* context = nullptr;
  driver.check(driver.get<int (*)(void**, int)>("cuDevicePrimaryCtxRetain")(&context, device),
               "cuDevicePrimaryCtxRetain");
  driver.check(driver.get<int (*)(void*)>("cuCtxSetCurrent")(context), "cuCtxSetCurrent");
}

void allocate(const options& o, const driver_api& driver, std::uint64_t bytes) {
  if (o.api == "runtime") {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess)
      throw coolbench::error(std::string("cudaMalloc: ") + cudaGetErrorString(cudaGetLastError()));
    return;
  }
  std::uint64_t p = 0;
  driver.check(driver.get<int (*)(std::uint64_t*, std::size_t)>("cuMemAlloc_v2")(&p, bytes),
               "cuMemAlloc");
}

json probe(const options& o) {
  const gpu_telemetry gpu(o.ordinal);
  const driver_api driver;
  json out = {{"pid", getpid()},
              {"uuid", gpu.identity().uuid},
              {"driver_version", gpu.identity().driver_version},
              {"api", o.api}};
  const char* loading = std::getenv("CUDA_MODULE_LOADING");
  out["module_loading"] = loading != nullptr ? loading : "";
  int version = 0;
  driver.check(driver.get<int (*)(int*)>("cuDriverGetVersion")(&version), "cuDriverGetVersion");
  out["cuda_driver_version"] = version;
  cudaRuntimeGetVersion(&version);
  out["cuda_runtime_version"] = version;

  const auto started = std::chrono::steady_clock::now();
  make_context(o, driver);
  out["context_seconds"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const auto context = own_memory(gpu);
  if (!context) {
    throw coolbench::not_available(
        "NVML does not list this process (pid " + std::to_string(getpid()) +
        ") on the GPU: no per-process accounting here, or another PID namespace");
  }
  out["context_bytes"] = *context;
  json steps = json::array();
  std::uint64_t before = *context;
  for (const std::uint64_t bytes : o.allocations) {
    allocate(o, driver, bytes);
    const std::uint64_t now = own_memory(gpu).value_or(0);
    steps.push_back({{"bytes", bytes}, {"process_bytes", now}, {"delta_bytes", now - before}});
    before = now;
  }
  out["allocations"] = steps;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::printf("%s\n", probe(parse(argc, argv)).dump().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::printf("%s\n", json({{"error", e.what()}}).dump().c_str());
    return 1;
  }
}
