// gpu_api for builds without the CUDA toolkit: no GPU, said plainly.
#include "coolbench/core/error.hpp"
#include "device/detail/gpu_api.hpp"

namespace coolbench::device::detail {
namespace {

class no_cuda_api final : public gpu_api {
 public:
  int device_count() override { return 0; }
  void check_device(int /*ordinal*/) override { fail(); }
  bool context_active(int /*ordinal*/) override { return false; }
  void create_context(int /*ordinal*/) override { fail(); }
  void* allocate(int /*ordinal*/, std::size_t /*bytes*/) override { fail(); }
  void free(int /*ordinal*/, void* /*pointer*/) noexcept override {}
  CUstream_st* create_stream(int /*ordinal*/) override { fail(); }
  void destroy_stream(int /*ordinal*/, CUstream_st* /*stream*/) noexcept override {}
  CUevent_st* create_event(int /*ordinal*/) override { fail(); }
  void destroy_event(int /*ordinal*/, CUevent_st* /*event*/) noexcept override {}
  void set_kernel_attribute(int /*ordinal*/, const void* /*kernel*/, kernel_attribute /*attribute*/,
                            int /*value*/) override {
    fail();
  }
  void synchronize(int /*ordinal*/) override {}
  void reset(int /*ordinal*/) override {}
  std::optional<std::uint64_t> process_memory_bytes(int /*ordinal*/) override {
    return std::nullopt;
  }
  std::optional<bool> process_listed(int /*ordinal*/) override { return std::nullopt; }

 private:
  [[noreturn]] static void fail() {
    throw not_available(
        "this coolbench was built without the CUDA toolkit: it has no GPU support. "
        "Rebuild with nvcc on PATH.");
  }
};

}  // namespace

std::shared_ptr<gpu_api> make_cuda_api() {
  static const std::shared_ptr<gpu_api> api = std::make_shared<no_cuda_api>();
  return api;
}

}  // namespace coolbench::device::detail
