// The C ABI over the device layer. No exception crosses it: each entry point
// catches everything, maps it to a return code and keeps the message for
// coolbench_last_error() in a thread-local string.
#include "coolbench/c_api.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "coolbench/core/error.hpp"
#include "coolbench/core/version.hpp"
#include "coolbench/device/device.hpp"
#include "coolbench/device/json.hpp"
#include "coolbench/registry.hpp"

namespace {

namespace device = coolbench::device;
using nlohmann::json;

constexpr unsigned known_flags = COOLBENCH_RELEASE_FORCE | COOLBENCH_RELEASE_WAIT;
constexpr std::chrono::milliseconds lease_wait{10'000};

thread_local std::string t_last_error;

// A bad argument of a C call (as opposed to an unknown device, which the device
// layer reports as coolbench::invalid_argument).
class bad_c_argument : public coolbench::error {
 public:
  using coolbench::error::error;
};

int fail(int code, std::string message) noexcept {
  try {
    t_last_error = std::move(message);
  } catch (...) {
    t_last_error.clear();  // out of memory for the message itself
  }
  return code;
}

// Copies `text` into `out` (when there is room for anything), truncated to fit,
// always NUL-terminated.
void write_text(std::string_view text, char* out, std::size_t out_len) noexcept {
  if (out == nullptr || out_len == 0) return;
  const std::size_t n = std::min(text.size(), out_len - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// Maps the exception being handled to a return code and records its message.
int fail_current_exception() noexcept {
  try {
    throw;
  } catch (const bad_c_argument& e) {
    return fail(COOLBENCH_INVALID_ARGUMENT, e.what());
  } catch (const device::release_refused& e) {
    return fail(COOLBENCH_REFUSED, e.what());
  } catch (const coolbench::not_available& e) {
    return fail(COOLBENCH_NO_DEVICE, e.what());
  } catch (const coolbench::invalid_argument& e) {
    return fail(COOLBENCH_NO_DEVICE, e.what());
  } catch (const std::bad_alloc&) {
    return fail(COOLBENCH_ERROR, "out of host memory");
  } catch (const std::exception& e) {
    return fail(COOLBENCH_ERROR, e.what());
  } catch (...) {
    return fail(COOLBENCH_ERROR, "unknown error (not a std::exception)");
  }
}

// On failure the caller's buffer says so too, as JSON, when it has room.
void write_failure(int ordinal, char* out, std::size_t out_len) noexcept {
  try {
    write_text(dump({{"ordinal", ordinal}, {"released", false}, {"error", t_last_error}}), out,
               out_len);
  } catch (...) {
    write_text("", out, out_len);
  }
}

device::device& get_device(int ordinal) {
  if (ordinal < 0) {
    throw coolbench::invalid_argument("no GPU with CUDA ordinal " + std::to_string(ordinal) +
                                      ": ordinals start at 0");
  }
  return device::device::get(ordinal);
}

}  // namespace

extern "C" {

int coolbench_release_device(int device, unsigned flags, char* report, size_t report_len) {
  try {
    if (report == nullptr && report_len > 0) {
      throw bad_c_argument("coolbench_release_device: report is NULL but report_len is " +
                           std::to_string(report_len) + "; pass a buffer, or NULL with 0");
    }
    if ((flags & ~known_flags) != 0) {
      throw bad_c_argument("coolbench_release_device: unknown flag bits " +
                           std::to_string(flags & ~known_flags) +
                           "; the flags are COOLBENCH_RELEASE_FORCE (1) and COOLBENCH_RELEASE_WAIT "
                           "(2). Nothing was changed.");
    }
    device::release_options options;
    options.force = (flags & COOLBENCH_RELEASE_FORCE) != 0;
    options.wait_for_leases =
        (flags & COOLBENCH_RELEASE_WAIT) != 0 ? lease_wait : std::chrono::milliseconds{0};
    const device::release_report result = get_device(device).release(options);
    // The release is done whatever happens to the report: its result stands.
    try {
      write_text(device::to_json(result), report, report_len);
    } catch (...) {
      write_text("", report, report_len);
    }
    return result.released ? COOLBENCH_OK : COOLBENCH_NOTHING_TO_RELEASE;
  } catch (...) {
    const int code = fail_current_exception();
    write_failure(device, report, report_len);
    return code;
  }
}

int coolbench_device_state(int device, char* json_out, size_t json_len) {
  try {
    if (json_out == nullptr && json_len > 0) {
      throw bad_c_argument("coolbench_device_state: json is NULL but json_len is " +
                           std::to_string(json_len) + "; pass a buffer, or NULL with 0");
    }
    write_text(device::to_json(get_device(device).status()), json_out, json_len);
    return COOLBENCH_OK;
  } catch (...) {
    const int code = fail_current_exception();
    write_text("", json_out, json_len);
    return code;
  }
}

const char* coolbench_last_error(void) { return t_last_error.c_str(); }

const char* coolbench_version(void) {
  try {
    static const std::string version(coolbench::version());
    return version.c_str();
  } catch (...) {
    return "";
  }
}

void* coolbench_find_function(const char* name) {
  if (name == nullptr) return nullptr;
  const coolbench::registered_function* f = coolbench::find_function(name);
  return f == nullptr ? nullptr : reinterpret_cast<void*>(f->function);  // NOLINT
}

const char* coolbench_function_signature(const char* name) {
  if (name == nullptr) return nullptr;
  const coolbench::registered_function* f = coolbench::find_function(name);
  // Signatures view string literals (registry.cpp), which are NUL-terminated.
  return f == nullptr ? nullptr : f->signature.data();
}

}  // extern "C"
