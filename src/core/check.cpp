#include "core/check.hpp"

#include <cstdio>
#include <string>

#include "coolbench/core/error.hpp"

namespace coolbench::core {
namespace {

std::string message(int code, const char* name, const char* text, const char* call,
                    const char* file, int line) {
  return std::string(call) + " failed: " + (name != nullptr ? name : "error") + " (" +
         std::to_string(code) + "): " + (text != nullptr ? text : "") + " [" + file + ":" +
         std::to_string(line) + "]";
}

}  // namespace

void throw_cuda_error(int code, const char* name, const char* text, const char* call,
                      const char* file, int line) {
  throw cuda_error(message(code, name, text, call, file, line), code);
}

void log_cuda_error(int code, const char* name, const char* text, const char* call,
                    const char* file, int line) noexcept {
  try {
    std::fprintf(stderr, "coolbench: %s\n", message(code, name, text, call, file, line).c_str());
  } catch (...) {  // NOLINT(bugprone-empty-catch): nothing left to report with
  }
}

}  // namespace coolbench::core
