// A C++ program against the installed headers and coolbench::coolbench: every
// layer's umbrella header compiles from the install prefix alone, and the
// archives link (core's version, the stats layer's median, the CPU sensors).
#include <coolbench/core.hpp>
#include <coolbench/device.hpp>
#include <coolbench/measure.hpp>
#include <coolbench/stats.hpp>
#include <coolbench/telemetry.hpp>

#include <array>
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s EXPECTED_VERSION\n", argv[0]);
    return 2;
  }
  const std::string version(coolbench::version());
  if (version != argv[1]) {
    std::fprintf(stderr, "coolbench::version() is %s, expected %s\n", version.c_str(), argv[1]);
    return 1;
  }
  const std::array<double, 5> samples{3.0, 1.0, 4.0, 1.5, 9.0};
  const double median = coolbench::stats::median(samples);
  if (median != 3.0) {
    std::fprintf(stderr, "coolbench::stats::median is %g, expected 3\n", median);
    return 1;
  }
  const auto sensors = coolbench::telemetry::read_cpu_sensors();
  std::printf("coolbench %s: median %g; CPU sensors read\n", version.c_str(), median);
  static_cast<void>(sensors);
  return 0;
}
