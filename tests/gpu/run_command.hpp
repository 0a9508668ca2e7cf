// What the GPU tests that run the coolbench command share: skipping where there is no GPU, and
// a command's exit status and output (stdout and stderr together).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include "coolbench/core/error.hpp"
#include "coolbench/telemetry.hpp"

namespace coolbench::testing {

/// Skips the calling test, saying why, where CUDA sees no GPU.
#define COOLBENCH_SKIP_WITHOUT_A_GPU()                                \
  do {                                                                \
    try {                                                             \
      if (coolbench::telemetry::gpu_telemetry::device_count() == 0) { \
        GTEST_SKIP() << "no GPU visible to CUDA";                     \
      }                                                               \
    } catch (const coolbench::error& e) {                             \
      GTEST_SKIP() << "no GPU here: " << e.what();                    \
    }                                                                 \
  } while (false)

struct command_result {
  bool exited = false;  ///< ended by exit(), not by a signal
  int code = -1;        ///< its exit status, when it exited
  std::string output;   ///< stdout and stderr, interleaved
};

/// Runs `command` through the shell with stderr joined to stdout.
inline command_result run_command(const std::string& command) {
  command_result r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) r.output += buffer.data();
  const int status = pclose(pipe);
  r.exited = WIFEXITED(status);
  if (r.exited) r.code = WEXITSTATUS(status);
  return r;
}

}  // namespace coolbench::testing
