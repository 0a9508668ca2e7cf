/* device_api.cuda_reset in TVM's global registry from C++ (TVM-FFI's C ABI), without Python
 * (docs/c_api.md, "TVM without Python"): the registration a C or C++ host of TVM
 * writes, then the lookup by name through TVM-FFI and the call. Without a GPU
 * the answer must be coolbench's no-driver error (COOLBENCH_NO_DEVICE) raised
 * through the FFI; with one, the call must release (exit code 0 either way). */
#include <stdio.h>
#include <string.h>

#include <coolbench/c_api.h>
#include <tvm/ffi/c_api.h>

/* --- the lines a host writes (docs/c_api.md) -------------------------------- */

/* device_api.cuda_reset(device_id, force=0) -> the release report as JSON text;
 * a refusal or failure raises a TVM-FFI error whose message is coolbench's. */
static int cuda_reset_safe_call(void* self, const TVMFFIAny* args, int32_t num_args,
                                TVMFFIAny* result) {
  (void)self;
  if (num_args < 1 || num_args > 2 || args[0].type_index != kTVMFFIInt ||
      (num_args == 2 && args[1].type_index != kTVMFFIInt && args[1].type_index != kTVMFFIBool)) {
    TVMFFIErrorSetRaisedFromCStr("TypeError",
                                 "device_api.cuda_reset(device_id: int, force: bool = False)");
    return -1;
  }
  unsigned flags = (num_args == 2 && args[1].v_int64) ? COOLBENCH_RELEASE_FORCE : 0u;
  char report[4096];
  int rc = coolbench_release_device((int)args[0].v_int64, flags, report, sizeof report);
  if (rc < 0) {
    char message[1024];
    snprintf(message, sizeof message, "coolbench_release_device returned %d: %s", rc,
             coolbench_last_error());
    TVMFFIErrorSetRaisedFromCStr(rc == COOLBENCH_INVALID_ARGUMENT ? "ValueError" : "RuntimeError",
                                 message);
    return -1;
  }
  TVMFFIByteArray text = {report, strlen(report)};
  return TVMFFIStringFromByteArray(&text, result);
}

static int register_cuda_reset(void) {
  TVMFFIObjectHandle function = NULL;
  if (TVMFFIFunctionCreate(NULL, cuda_reset_safe_call, NULL, &function) != 0) return -1;
  TVMFFIByteArray name = {"device_api.cuda_reset", strlen("device_api.cuda_reset")};
  int rc = TVMFFIFunctionSetGlobal(&name, function, /*allow_override=*/1);
  TVMFFIObjectDecRef(function); /* the registry holds its own reference */
  return rc;
}

/* --- the test ---------------------------------------------------------------- */

static int fail(const char* what) {
  fprintf(stderr, "FAIL: %s\n", what);
  return 1;
}

/* The raised error's message, moved out of TVM-FFI's thread-local slot. */
static void raised_message(char* out, size_t len, char* kind, size_t kind_len) {
  TVMFFIObjectHandle error = NULL;
  TVMFFIErrorMoveFromRaised(&error);
  out[0] = kind[0] = '\0';
  if (error == NULL) return;
  TVMFFIErrorCell* cell = TVMFFIErrorGetCellPtr(error);
  snprintf(out, len, "%.*s", (int)cell->message.size, cell->message.data);
  snprintf(kind, kind_len, "%.*s", (int)cell->kind.size, cell->kind.data);
  TVMFFIObjectDecRef(error);
}

int main(void) {
  if (register_cuda_reset() != 0 || register_cuda_reset() != 0)
    return fail("registering device_api.cuda_reset (twice)");

  TVMFFIObjectHandle cuda_reset = NULL;
  TVMFFIByteArray name = {"device_api.cuda_reset", strlen("device_api.cuda_reset")};
  if (TVMFFIFunctionGetGlobal(&name, &cuda_reset) != 0 || cuda_reset == NULL)
    return fail("device_api.cuda_reset is not found by name");

  TVMFFIAny args[1];
  memset(args, 0, sizeof args);
  args[0].type_index = kTVMFFIInt;
  args[0].v_int64 = 0;
  TVMFFIAny result;
  memset(&result, 0, sizeof result);
  result.type_index = kTVMFFINone;
  int rc = TVMFFIFunctionCall(cuda_reset, args, 1, &result);
  TVMFFIObjectDecRef(cuda_reset);

  if (rc == 0) {
    /* A GPU: the release ran (released, or nothing to release in a fresh process). */
    int is_string = result.type_index == kTVMFFISmallStr || result.type_index == kTVMFFIStr;
    printf("released through TVM-FFI (result type %d)\n", (int)result.type_index);
    if (result.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(result.v_obj);
    return is_string ? 0 : fail("the report is not a string");
  }
  char message[1024], kind[64];
  raised_message(message, sizeof message, kind, sizeof kind);
  printf("raised through TVM-FFI: %s: %s\n", kind, message);
  char expected[32];
  snprintf(expected, sizeof expected, "returned %d:", COOLBENCH_NO_DEVICE);
  if (strstr(message, expected) == NULL) return fail("not coolbench's no-device error");
  if (strstr(message, coolbench_last_error()) == NULL || coolbench_last_error()[0] == '\0')
    return fail("the message does not carry coolbench_last_error()");
  return 0;
}
