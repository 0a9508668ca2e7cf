// kernel_trace over CUPTI's activity API, loaded at run time: CUPTI hands
// filled buffers to a process-wide callback, so the records of the one
// trace allowed at a time gather in this file's collector.
#include "coolbench/device/kernel_trace.hpp"

#include "coolbench/core/error.hpp"

#if COOLBENCH_HAVE_CUPTI
#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>

#include "core/dynamic_library.hpp"
#endif

namespace coolbench::device {

#if COOLBENCH_HAVE_CUPTI
namespace {

std::atomic<bool> g_tracing{false};  // one trace at a time

// The kernel record of the CUPTI this was built with. An older libcupti
// found at run time writes an older version (Kernel5 to Kernel9); every
// field read here sits at the same offset in all of them.
using kernel_activity = CUpti_ActivityKernel10;

constexpr std::size_t k_buffer_bytes = std::size_t{8} << 20U;  // about 40k kernels a buffer

struct cupti_api {
  core::dynamic_library library;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
};

std::vector<std::string> library_names() {
  std::vector<std::string> names = {"libcupti.so", "libcupti.so.13", "libcupti.so.12"};
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* root = std::getenv(variable)) {
      names.push_back(std::string(root) + "/extras/CUPTI/lib64/libcupti.so");
      names.push_back(std::string(root) + "/lib64/libcupti.so");
    }
  }
#ifdef COOLBENCH_CUPTI_BUILT
  names.emplace_back(COOLBENCH_CUPTI_BUILT);  // the one this build found
#endif
  names.emplace_back("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so");
  return names;
}

template <class F>
void bind(const core::dynamic_library& library, F& function, const char* name) {
  function = reinterpret_cast<F>(library.find(name));
  if (function == nullptr) {
    throw kernel_trace_unavailable(library.name() + " has no " + name +
                                   ": a CUPTI of CUDA 12 or later is needed");
  }
}

core::dynamic_library load_cupti() {
  try {
    return core::dynamic_library(
        library_names(),
        "The kernel trace needs CUPTI from the CUDA toolkit: put the directory of libcupti.so "
        "(extras/CUPTI/lib64 of the toolkit) on LD_LIBRARY_PATH, or set CUDA_HOME.");
  } catch (const not_available& e) {
    throw kernel_trace_unavailable(e.what());
  }
}

// Never destroyed: CUPTI may hand back a buffer while the process exits,
// and libcupti must not be closed while it is attached to the driver.
cupti_api& api() {
  static cupti_api& loaded = *[] {
    auto a = std::make_unique<cupti_api>(cupti_api{load_cupti()});
    bind(a->library, a->register_callbacks, "cuptiActivityRegisterCallbacks");
    bind(a->library, a->enable, "cuptiActivityEnable");
    bind(a->library, a->disable, "cuptiActivityDisable");
    bind(a->library, a->flush_all, "cuptiActivityFlushAll");
    bind(a->library, a->next_record, "cuptiActivityGetNextRecord");
    bind(a->library, a->dropped, "cuptiActivityGetNumDroppedRecords");
    bind(a->library, a->result_string, "cuptiGetResultString");
    return a.release();
  }();
  return loaded;
}

std::string message(CUptiResult result) {
  const char* text = nullptr;
  if (api().result_string(result, &text) != CUPTI_SUCCESS || text == nullptr) {
    return "CUPTI error " + std::to_string(static_cast<int>(result));
  }
  return text;
}

std::string demangled(const char* name) {
  if (name == nullptr) return "(unnamed kernel)";
  int status = 0;
  const std::unique_ptr<char, decltype(&std::free)> plain(
      abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
  return status == 0 && plain ? std::string(plain.get()) : std::string(name);
}

// The current trace's records, and those CUPTI gave without timestamps
// (out of memory for them); never destroyed, as api().
std::mutex& g_records_mutex = *new std::mutex;
std::vector<kernel_record>& g_records = *new std::vector<kernel_record>;
std::size_t g_untimed = 0;

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* most) {
  // CUPTI wants 8-byte aligned buffers; a failed allocation gives it none,
  // and it counts the records it then drops.
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, k_buffer_bytes));
  *size = *buffer != nullptr ? k_buffer_bytes : 0;
  *most = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext /*context*/, std::uint32_t /*stream*/,
                               std::uint8_t* buffer, std::size_t /*size*/, std::size_t valid) {
  std::vector<kernel_record> found;
  CUpti_Activity* record = nullptr;
  while (api().next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
        record->kind != CUPTI_ACTIVITY_KIND_KERNEL) {
      continue;
    }
    const auto* k = reinterpret_cast<const kernel_activity*>(record);
    if (k->start == 0 || k->end < k->start) {
      const std::lock_guard lock(g_records_mutex);
      ++g_untimed;
      continue;
    }
    kernel_record r;
    r.name = demangled(k->name);
    r.start_ns = k->start;
    r.end_ns = k->end;
    r.device = k->deviceId;
    r.stream = k->streamId;
    r.grid[0] = k->gridX, r.grid[1] = k->gridY, r.grid[2] = k->gridZ;
    r.block[0] = k->blockX, r.block[1] = k->blockY, r.block[2] = k->blockZ;
    r.static_shared = k->staticSharedMemory;
    r.dynamic_shared = k->dynamicSharedMemory;
    r.shared_executed = k->sharedMemoryExecuted;
    r.registers = k->registersPerThread;
    r.graph_node = k->graphNodeId;
    found.push_back(std::move(r));
  }
  std::free(buffer);
  const std::lock_guard lock(g_records_mutex);
  for (auto& r : found) g_records.push_back(std::move(r));
}

void check(CUptiResult result, const char* what) {
  if (result == CUPTI_SUCCESS) return;
  throw kernel_trace_unavailable(
      std::string("CUPTI refused to ") + what + ": " + message(result) +
      (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ||
               result == CUPTI_ERROR_NOT_INITIALIZED
           ? " (is the process already traced by ncu or nsys? run without them)"
           : ""));
}

}  // namespace

kernel_trace::kernel_trace() {
  if (g_tracing.exchange(true)) {
    throw invalid_argument("a kernel trace is already recording in this process; stop it first");
  }
  try {
    static const bool registered = [] {
      check(api().register_callbacks(buffer_requested, buffer_completed), "take activity buffers");
      return true;
    }();
    (void)registered;
    {
      const std::lock_guard lock(g_records_mutex);
      g_records.clear();
      g_untimed = 0;
    }
    check(api().enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "record kernels");
  } catch (...) {
    g_tracing = false;
    throw;
  }
  m_recording = true;
}

kernel_trace::~kernel_trace() {
  if (!m_recording) return;
  try {
    (void)stop();
  } catch (const std::exception&) {  // a destructor drops the records either way
  }
}

std::vector<kernel_record> kernel_trace::stop() {
  if (!m_recording) return {};
  m_recording = false;
  // Disabled first, so nothing launched from here on lands in a later trace.
  const CUptiResult disabled = api().disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  const CUptiResult flushed = api().flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::size_t dropped = 0;
  if (api().dropped(nullptr, 0, &dropped) != CUPTI_SUCCESS) dropped = 0;
  std::vector<kernel_record> records;
  {
    const std::lock_guard lock(g_records_mutex);
    records.swap(g_records);
    m_dropped = dropped + g_untimed;
  }
  g_tracing = false;
  check(flushed, "hand over its records");
  check(disabled, "stop recording kernels");
  std::stable_sort(records.begin(), records.end(),
                   [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  return records;
}

#else  // built without CUPTI's headers

kernel_trace::kernel_trace() {
  throw kernel_trace_unavailable(
      "this coolbench was built without CUPTI's headers (cupti.h of the CUDA toolkit), so it "
      "cannot trace kernels; rebuild with the CUDA toolkit's CUPTI installed");
}

kernel_trace::~kernel_trace() = default;

std::vector<kernel_record> kernel_trace::stop() { return {}; }

#endif

}  // namespace coolbench::device
