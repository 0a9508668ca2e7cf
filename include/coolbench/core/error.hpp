/// @file
/// The exception types coolbench throws. Each carries a message that says what
/// was wrong and what to do; cli/ maps each type to a documented exit code.
#pragma once

#include <stdexcept>
#include <string>

namespace coolbench {

/// Base of every coolbench exception.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A caller passed something invalid (a bad option value, a device ordinal
/// that does not exist).
class invalid_argument : public error {
 public:
  using error::error;
};

/// A sensor, library or device is not present on this machine (no NVIDIA
/// driver, NVML missing, no GPU with that ordinal). The message says how to fix
/// it or what works without it.
class not_available : public error {
 public:
  using error::error;
};

/// A call into a C API that returns status codes failed; carries the code.
class api_error : public error {
 public:
  api_error(const std::string& message, int code) : error(message), m_code(code) {}
  [[nodiscard]] int code() const noexcept { return m_code; }

 private:
  int m_code;
};

/// A call into NVML failed. Carries the call, the NVML error name and code.
class nvml_error : public api_error {
 public:
  using api_error::api_error;
};

/// A call into the CUDA driver or runtime failed.
class cuda_error : public api_error {
 public:
  using api_error::api_error;
};

/// A wait ran out of time (wait-cool, gating).
class timeout_error : public error {
 public:
  using error::error;
};

}  // namespace coolbench
