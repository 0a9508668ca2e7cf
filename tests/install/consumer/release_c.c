/* A C program against the installed C ABI (libcoolbench.so): checks the
 * library's version against argv[1] and asks it what it holds on GPU 0.
 * Built once through find_package and once through pkg-config. */
#include <coolbench/c_api.h>

#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s EXPECTED_VERSION\n", argv[0]);
    return 2;
  }
  const char* version = coolbench_version();
  if (strcmp(version, argv[1]) != 0) {
    fprintf(stderr, "coolbench_version() is \"%s\", expected \"%s\"\n", version, argv[1]);
    return 1;
  }
  if (coolbench_find_function("coolbench.version") == NULL) {
    fprintf(stderr, "coolbench_find_function(\"coolbench.version\") is NULL\n");
    return 1;
  }
  /* Without a GPU or driver: COOLBENCH_NO_DEVICE, with a message saying so. */
  char state[4096];
  int rc = coolbench_device_state(0, state, sizeof state);
  if (rc == COOLBENCH_OK) {
    printf("libcoolbench %s; device 0: %s\n", version, state);
  } else if (rc == COOLBENCH_NO_DEVICE && coolbench_last_error()[0] != '\0') {
    printf("libcoolbench %s; device 0: none (%s)\n", version, coolbench_last_error());
  } else {
    fprintf(stderr, "coolbench_device_state: %d: \"%s\"\n", rc, coolbench_last_error());
    return 1;
  }
  return 0;
}
