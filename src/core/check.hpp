// Error checking for C APIs that return status codes. The macros that wrap a
// call only capture its text, file and line; these functions build the
// message and throw, or log when throwing is not allowed (destructors).
#pragma once

namespace coolbench::core {

/// Throws cuda_error: "<call> failed: <name> (<code>): <text> [file:line]".
[[noreturn]] void throw_cuda_error(int code, const char* name, const char* text, const char* call,
                                   const char* file, int line);

/// The same message on stderr, for cleanup paths that must not throw.
void log_cuda_error(int code, const char* name, const char* text, const char* call,
                    const char* file, int line) noexcept;

}  // namespace coolbench::core
