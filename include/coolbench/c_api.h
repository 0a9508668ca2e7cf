/**
 * @file
 * The C ABI of libcoolbench: hand a GPU back from inside any process.
 *
 * Plain C, usable from C, C++ and any foreign-function interface (Python's
 * ctypes, TVM's or ONNX Runtime's host programs). Every function catches every
 * error inside the library: nothing throws across this boundary. Failing calls
 * return a negative code and leave a message for coolbench_last_error().
 *
 * @code
 *   char report[4096];
 *   int rc = coolbench_release_device(0, 0, report, sizeof report);
 *   if (rc < 0) fprintf(stderr, "release: %s\n", coolbench_last_error());
 * @endcode
 *
 * See docs/c_api.md for ctypes examples, the report's JSON and what force costs.
 */
#ifndef COOLBENCH_C_API_H
#define COOLBENCH_C_API_H

#include <stddef.h>

/** Marks a function exported from libcoolbench.so (everything else is hidden). */
#ifndef COOLBENCH_C_API
#if defined(__GNUC__) || defined(__clang__)
#define COOLBENCH_C_API __attribute__((visibility("default")))
#else
#define COOLBENCH_C_API
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @name Release flags
 * Bits of the `flags` argument of coolbench_release_device(). Any other bit
 * makes the call fail with #COOLBENCH_INVALID_ARGUMENT.
 * @{
 */
/**
 * Release even when device memory that coolbench did not allocate is live in
 * this process (another library's tensors), or when NVML cannot tell. That
 * memory is freed by the context reset: its owners are left holding dangling
 * pointers. Use it only when they are known to be done with the GPU.
 */
#define COOLBENCH_RELEASE_FORCE 0x1u
/**
 * Wait up to 10 s for leases held in other threads to end before refusing
 * (without it, a lease in another thread refuses at once).
 */
#define COOLBENCH_RELEASE_WAIT 0x2u
/** @} */

/** Return codes. Non-negative: success; negative: failure, see coolbench_last_error(). */
enum coolbench_result {
  /** The GPU was released: resources destroyed, memory freed, context reset. */
  COOLBENCH_OK = 0,
  /** Nothing to release: no context in this process on that GPU (a no-op). */
  COOLBENCH_NOTHING_TO_RELEASE = 1,
  /** The release was refused; nothing was changed. The message says why and what to do. */
  COOLBENCH_REFUSED = -1,
  /** No GPU with that ordinal, or no NVIDIA driver / no CUDA support in this build. */
  COOLBENCH_NO_DEVICE = -2,
  /** Any other failure (a CUDA error, out of memory). */
  COOLBENCH_ERROR = -3,
  /** Unknown flag bits, or a non-zero length with a NULL buffer. */
  COOLBENCH_INVALID_ARGUMENT = -4
};

/**
 * Hands GPU `device` (a CUDA ordinal) back: waits for in-flight work, destroys
 * every resource coolbench owns, frees its memory and resets the primary
 * context, so the GPU can drop to its idle power state while the process goes
 * on. The next user (coolbench or another runtime) gets a fresh context.
 *
 * Refused (#COOLBENCH_REFUSED, nothing changed) while a coolbench lease is held
 * in another thread, or while another runtime's device memory (its allocations,
 * or the code of kernels it loaded) is live in this process, unless the flags
 * allow it: NVML's figure for the process, less the bare context (measured by
 * coolbench-context-probe, cached per GPU, driver and CUDA version) and
 * coolbench's own share, must stay under half of NVML's 2 MiB step. The report
 * says what was seen ("foreign_state", "process_bytes", "baseline_bytes",
 * "baseline_source", "dangling"; docs/c_api.md).
 *
 * @param device      CUDA ordinal of the GPU.
 * @param flags       0, or #COOLBENCH_RELEASE_FORCE and/or #COOLBENCH_RELEASE_WAIT.
 * @param report      Receives the release report as a JSON object (see
 *                    docs/c_api.md), or on failure a JSON object with
 *                    "released": false and "error". May be NULL when
 *                    `report_len` is 0.
 * @param report_len  Size of `report` in bytes, including the terminating NUL.
 *                    A report that does not fit is truncated, and a truncated
 *                    report is still NUL-terminated (and no longer valid JSON);
 *                    truncation does not change the return value. 4096 bytes
 *                    hold any ordinary report.
 * @return #COOLBENCH_OK, #COOLBENCH_NOTHING_TO_RELEASE, or a negative code.
 */
COOLBENCH_C_API int coolbench_release_device(int device, unsigned flags, char* report,
                                             size_t report_len);

/**
 * Writes what coolbench holds on GPU `device` as a JSON object: ordinal,
 * context_active (coolbench holds a context), generation, leases, live_bytes,
 * cached_bytes, peak_bytes, resources {kind: count}, releases. Touches no GPU
 * state and creates no context.
 *
 * @param json      Receives the JSON, NUL-terminated, truncated to fit (a
 *                  truncated text is still NUL-terminated). May be NULL when
 *                  `json_len` is 0.
 * @param json_len  Size of `json` in bytes, including the terminating NUL.
 * @return #COOLBENCH_OK, #COOLBENCH_NO_DEVICE, #COOLBENCH_INVALID_ARGUMENT or
 *         #COOLBENCH_ERROR.
 */
COOLBENCH_C_API int coolbench_device_state(int device, char* json, size_t json_len);

/**
 * The message of the last failing call made in this thread ("" if none).
 * Successful calls leave it unchanged, so read it only after a negative
 * return. The text stays valid until the next failing call in this thread.
 */
COOLBENCH_C_API const char* coolbench_last_error(void);

/** "MAJOR.MINOR.PATCH" of this libcoolbench. Never NULL. */
COOLBENCH_C_API const char* coolbench_version(void);

/**
 * The C function registered under `name`, or NULL if none is. Registered:
 *  - "device_api.cuda_reset" and "coolbench.release_device": coolbench_release_device
 *  - "coolbench.device_state": coolbench_device_state
 *  - "coolbench.last_error": coolbench_last_error
 *  - "coolbench.version": coolbench_version
 *  - "coolbench.find_function": coolbench_find_function
 *
 * Cast the result to the type coolbench_function_signature() names, e.g.
 * `(int (*)(int, unsigned, char*, size_t))`. NULL `name` gives NULL.
 */
COOLBENCH_C_API void* coolbench_find_function(const char* name);

/**
 * The C signature of the function registered under `name`, e.g.
 * "int(int,unsigned,char*,size_t)"; NULL if `name` is unknown or NULL. The
 * text is static.
 */
COOLBENCH_C_API const char* coolbench_function_signature(const char* name);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* COOLBENCH_C_API_H */
