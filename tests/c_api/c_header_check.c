/* Compiled as C (C99, pedantic): c_api.h must be plain C, and its declarations must have the
 * types the registry's signatures name. */
#include "coolbench/c_api.h"

#include <string.h>

int coolbench_c_header_check(void);

int coolbench_c_header_check(void) {
  int (*release)(int, unsigned, char*, size_t) = coolbench_release_device;
  int (*state)(int, char*, size_t) = coolbench_device_state;
  const char* (*last_error)(void) = coolbench_last_error;
  const char* (*version)(void) = coolbench_version;
  void* (*find)(const char*) = coolbench_find_function;
  const char* (*signature)(const char*) = coolbench_function_signature;
  enum coolbench_result ok = COOLBENCH_OK;
  unsigned flags = COOLBENCH_RELEASE_FORCE | COOLBENCH_RELEASE_WAIT;
  char report[64];

  if (flags != 3u || ok != 0 || COOLBENCH_NOTHING_TO_RELEASE != 1 || COOLBENCH_REFUSED != -1 ||
      COOLBENCH_NO_DEVICE != -2 || COOLBENCH_ERROR != -3 || COOLBENCH_INVALID_ARGUMENT != -4) {
    return 1;
  }
  if (strcmp(signature("device_api.cuda_reset"), "int(int,unsigned,char*,size_t)") != 0) return 2;
  if (find("coolbench.device_state") == NULL || state(99999, NULL, 0) != COOLBENCH_NO_DEVICE) {
    return 3;
  }
  if (release(99999, 0, report, sizeof report) != COOLBENCH_NO_DEVICE) return 4;
  if (last_error()[0] == '\0' || version()[0] == '\0') return 5;
  return 0;
}
