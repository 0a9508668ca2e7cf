// Another process's context on the GPU, made and dropped: see device.hpp.
#include <chrono>

#include "coolbench/device/device.hpp"
#include "device/detail/context_probe_runner.hpp"

namespace coolbench::device {

double touch_from_another_process(int ordinal) {
  const auto start = std::chrono::steady_clock::now();
  detail::touch_with_context_probe(ordinal);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace coolbench::device
