// Loaded into another program with LD_PRELOAD, this opens NVML and reads the
// GPU before that program's main(), as coolbench's process does before its
// first CUDA context; with NVML_FIRST_POLL_MS set it also keeps reading the
// power, temperature and SM clock at that period on a thread of its own, as
// the sampler does. It tells whether NVML in the process is what keeps the
// order effect out of coolbench's own victim (docs/perf/hidden-state.md, §12):
//   LD_PRELOAD=build/bench/liborder_effect_nvml_first.so ./order_effect_reference
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace {

using init_fn = int (*)();
using handle_fn = int (*)(unsigned, void**);
using uint_fn = int (*)(void*, unsigned*);
using sensor_fn = int (*)(void*, int, unsigned*);

struct nvml_calls {
  void* device = nullptr;
  uint_fn power = nullptr;
  sensor_fn temperature = nullptr;
  sensor_fn clock = nullptr;

  void read(unsigned& mw, unsigned& c, unsigned& mhz) const {
    power(device, &mw);
    temperature(device, 0, &c);  // NVML_TEMPERATURE_GPU
    clock(device, 1, &mhz);      // NVML_CLOCK_SM
  }
};

template <class F>
F symbol(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}

__attribute__((constructor)) void open_nvml_first() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (lib == nullptr) {
    std::fprintf(stderr, "nvml_first: no libnvidia-ml.so.1 (%s)\n", dlerror());
    return;
  }
  const auto init = symbol<init_fn>(lib, "nvmlInit_v2");
  const auto handle = symbol<handle_fn>(lib, "nvmlDeviceGetHandleByIndex_v2");
  nvml_calls calls;
  calls.power = symbol<uint_fn>(lib, "nvmlDeviceGetPowerUsage");
  calls.temperature = symbol<sensor_fn>(lib, "nvmlDeviceGetTemperature");
  calls.clock = symbol<sensor_fn>(lib, "nvmlDeviceGetClockInfo");
  if (init == nullptr || handle == nullptr || calls.power == nullptr ||
      calls.temperature == nullptr || calls.clock == nullptr) {
    std::fprintf(stderr, "nvml_first: this libnvidia-ml lacks a call it needs\n");
    return;
  }
  int rc = init();
  if (rc == 0) rc = handle(0, &calls.device);
  unsigned mw = 0, c = 0, mhz = 0;
  if (rc == 0) calls.read(mw, c, mhz);
  std::fprintf(stderr, "nvml_first: rc %d, %u mW, %u C, SM %u MHz\n", rc, mw, c, mhz);
  const char* poll = std::getenv("NVML_FIRST_POLL_MS");
  if (rc != 0 || poll == nullptr) return;
  const auto period = std::chrono::milliseconds(std::atol(poll));
  std::thread([calls, period] {
    unsigned w = 0, t = 0, f = 0;
    for (;;) {
      calls.read(w, t, f);
      std::this_thread::sleep_for(period);
    }
  }).detach();
}

}  // namespace
