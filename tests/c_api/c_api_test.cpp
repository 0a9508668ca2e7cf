// The C API over a scripted GPU (tests/device/fake_gpu_api.hpp): return codes, the report's
// JSON, last_error, truncation, and the named-function registry.
#include "coolbench/c_api.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "coolbench/core/version.hpp"
#include "coolbench/device/device.hpp"
#include "coolbench/registry.hpp"
#include "device/fake_gpu_api.hpp"

extern "C" int coolbench_c_header_check(void);  // c_header_check.c, compiled as C

namespace coolbench {
namespace {

using namespace std::chrono_literals;
using device::testing::fake_gpu_api;
using nlohmann::json;

constexpr std::uint64_t mib = fake_gpu_api::mib;
constexpr int device_count = 64;

// The fake, wrapped so that a reset can be made to fail (the path to COOLBENCH_ERROR).
class scripted_api final : public device::detail::gpu_api {
 public:
  fake_gpu_api fake;
  std::atomic<bool> fail_reset{false};

  int device_count() override { return fake.device_count(); }
  void check_device(int ordinal) override { fake.check_device(ordinal); }
  bool context_active(int ordinal) override { return fake.context_active(ordinal); }
  void create_context(int ordinal) override { fake.create_context(ordinal); }
  void* allocate(int ordinal, std::size_t bytes) override { return fake.allocate(ordinal, bytes); }
  void free(int ordinal, void* pointer) noexcept override { fake.free(ordinal, pointer); }
  CUstream_st* create_stream(int ordinal) override { return fake.create_stream(ordinal); }
  void destroy_stream(int ordinal, CUstream_st* stream) noexcept override {
    fake.destroy_stream(ordinal, stream);
  }
  CUevent_st* create_event(int ordinal) override { return fake.create_event(ordinal); }
  void destroy_event(int ordinal, CUevent_st* event) noexcept override {
    fake.destroy_event(ordinal, event);
  }
  void set_kernel_attribute(int ordinal, const void* kernel, device::kernel_attribute attribute,
                            int value) override {
    fake.set_kernel_attribute(ordinal, kernel, attribute, value);
  }
  void synchronize(int ordinal) override { fake.synchronize(ordinal); }
  void reset(int ordinal) override {
    if (fail_reset)
      throw cuda_error("cudaDeviceReset failed: cudaErrorLaunchFailure (scripted)", 4);
    fake.reset(ordinal);
  }
  std::optional<std::uint64_t> process_memory_bytes(int ordinal) override {
    return fake.process_memory_bytes(ordinal);
  }
  std::optional<bool> process_listed(int ordinal) override { return fake.process_listed(ordinal); }
  process_memory_reading process_memory(int ordinal) override {
    return fake.process_memory(ordinal);
  }
  device::detail::baseline_key baseline_key_of(int ordinal) override {
    return fake.baseline_key_of(ordinal);
  }
  device::detail::bare_context_figures measure_bare_context(
      int ordinal, const device::detail::baseline_key& key) override {
    return fake.measure_bare_context(ordinal, key);
  }
  std::vector<std::string> cuda_libraries() override { return fake.cuda_libraries(); }
  std::chrono::milliseconds nvml_settle_time() override { return fake.nvml_settle_time(); }
};

// Installed before the first device::get of the process, as use_gpu_api_for_testing requires.
scripted_api& api() {
  static const std::shared_ptr<scripted_api> installed = [] {
    device::testing::use_temporary_cache_dir();
    auto created = std::make_shared<scripted_api>();
    created->fake.devices = device_count;
    device::detail::use_gpu_api_for_testing(created);
    return created;
  }();
  return *installed;
}

struct call_result {
  int code;
  json report;
};

call_result release(int ordinal, unsigned flags = 0) {
  char buffer[4096];
  const int code = coolbench_release_device(ordinal, flags, buffer, sizeof buffer);
  return {code, json::parse(buffer)};
}

json state(int ordinal) {
  char buffer[4096];
  EXPECT_EQ(coolbench_device_state(ordinal, buffer, sizeof buffer), COOLBENCH_OK)
      << coolbench_last_error();
  return json::parse(buffer);
}

bool contains(const char* text, const char* part) { return std::strstr(text, part) != nullptr; }

/// Each test gets a device of its own: device state lives for the process.
class c_api_test : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> next_ordinal{0};
    auto& fake = api().fake;
    fake.capacity_bytes = 4096 * mib;
    fake.foreign_bytes = 0;
    fake.nvml_sees_process = true;
    fake.fail_synchronize = false;
    fake.code_bytes = 0;
    fake.loaded_cuda_libraries.clear();
    api().fail_reset = false;
    m_ordinal = next_ordinal++;
    ASSERT_LT(m_ordinal, device_count);
  }
  [[nodiscard]] int ordinal() const { return m_ordinal; }
  device::device& gpu() { return device::device::get(m_ordinal); }

 private:
  int m_ordinal = -1;
};

TEST_F(c_api_test, nothing_to_release_returns_1_and_says_so) {
  const int resets = api().fake.resets();
  const auto [code, report] = release(ordinal());
  EXPECT_EQ(code, COOLBENCH_NOTHING_TO_RELEASE);
  EXPECT_EQ(report["ordinal"], ordinal());
  EXPECT_EQ(report["released"], false);
  EXPECT_EQ(report["context_reset"], false);
  EXPECT_NE(report["note"].get<std::string>().find("nothing to release"), std::string::npos)
      << report.dump();
  EXPECT_EQ(report["bytes_freed"], 0);
  EXPECT_EQ(api().fake.resets(), resets);
}

TEST_F(c_api_test, a_release_after_acquiring_returns_0_and_reports_what_it_freed) {
  device::buffer kept;
  {
    auto lease = gpu().acquire();
    kept = lease.allocate(3 * mib);
    auto dropped = lease.allocate(1 * mib);  // back to the cache: freed as cached memory
    (void)lease.stream();
    (void)lease.create_event();
  }
  const json before = state(ordinal());
  EXPECT_EQ(before["context_active"], true);
  EXPECT_EQ(before["resources"]["allocation"], 2);
  const std::uint64_t held =
      before["live_bytes"].get<std::uint64_t>() + before["cached_bytes"].get<std::uint64_t>();
  const int resets = api().fake.resets();

  const auto [code, report] = release(ordinal());
  EXPECT_EQ(code, COOLBENCH_OK) << coolbench_last_error();
  EXPECT_EQ(api().fake.resets(), resets + 1);
  EXPECT_EQ(report["released"], true);
  EXPECT_EQ(report["context_reset"], true);
  EXPECT_EQ(report["forced"], false);
  EXPECT_EQ(report["note"], "released");
  EXPECT_EQ(report["bytes_freed"], held);
  EXPECT_EQ(report["live_bytes_freed"], kept.size());
  EXPECT_GE(report["bytes_freed"].get<std::uint64_t>(), 4 * mib);
  EXPECT_EQ(report["destroyed"]["allocation"], 2);
  EXPECT_EQ(report["destroyed"]["stream"], 1);
  EXPECT_EQ(report["destroyed"]["event"], 1);
  EXPECT_EQ(report["destroyed"]["graph"], 0);
  EXPECT_EQ(report["generation_after"], before["generation"].get<std::uint64_t>() + 1);
  EXPECT_TRUE(report["foreign_bytes"].is_number_integer()) << report.dump();
  EXPECT_FALSE(report["foreign_check"].get<std::string>().empty());
  EXPECT_EQ(report["process_listed_after"], false);
  EXPECT_TRUE(report["seconds"].is_number());
  EXPECT_FALSE(kept.valid());

  const json after = state(ordinal());
  EXPECT_EQ(after["context_active"], false);
  EXPECT_EQ(after["live_bytes"], 0);
  EXPECT_EQ(after["releases"], 1);
  EXPECT_EQ(release(ordinal()).code, COOLBENCH_NOTHING_TO_RELEASE);
}

TEST_F(c_api_test, unknown_nvml_reports_null_fields_and_only_force_releases) {
  api().fake.nvml_sees_process = false;
  { auto lease = gpu().acquire(); }
  EXPECT_EQ(release(ordinal()).code, COOLBENCH_REFUSED);
  const auto [code, report] = release(ordinal(), COOLBENCH_RELEASE_FORCE);
  EXPECT_EQ(code, COOLBENCH_OK) << coolbench_last_error();
  EXPECT_EQ(report["forced"], true);
  EXPECT_TRUE(report["foreign_bytes"].is_null()) << report.dump();
  EXPECT_TRUE(report["process_listed_after"].is_null()) << report.dump();
  EXPECT_NE(report["foreign_check"].get<std::string>().find("not checked"), std::string::npos);
}

TEST_F(c_api_test, foreign_memory_refuses_with_minus_1_changes_nothing_and_force_releases) {
  { auto lease = gpu().acquire(); }
  api().fake.foreign_bytes = 2048 * mib;  // another library's tensors
  const json before = state(ordinal());
  const int resets = api().fake.resets();

  const auto [code, report] = release(ordinal());
  EXPECT_EQ(code, COOLBENCH_REFUSED);
  EXPECT_TRUE(contains(coolbench_last_error(),
                       "2048 MiB of this process's device memory is not "
                       "coolbench's (foreign memory live)"))
      << coolbench_last_error();
  EXPECT_TRUE(contains(coolbench_last_error(), "force")) << coolbench_last_error();
  EXPECT_EQ(report["released"], false);
  EXPECT_EQ(report["error"], coolbench_last_error());
  EXPECT_EQ(api().fake.resets(), resets);
  EXPECT_EQ(state(ordinal()), before);

  const auto forced = release(ordinal(), COOLBENCH_RELEASE_FORCE);
  EXPECT_EQ(forced.code, COOLBENCH_OK) << coolbench_last_error();
  EXPECT_EQ(forced.report["forced"], true);
  EXPECT_GE(forced.report["foreign_bytes"].get<std::int64_t>(), std::int64_t{2048 * mib});
  EXPECT_EQ(forced.report["foreign_state"], "foreign memory live");
  EXPECT_TRUE(contains(forced.report["dangling"].get<std::string>().c_str(), "2048 MiB"))
      << forced.report.dump();
}

TEST_F(c_api_test, another_runtimes_context_is_checked_exactly_and_the_report_says_against_what) {
  // As from ctypes in a CuPy process: CuPy made the context, coolbench never used the GPU.
  api().fake.make_context_exist(ordinal());
  api().fake.loaded_cuda_libraries = {"CuPy"};
  api().fake.foreign_bytes = 2 * mib;  // one 72-byte array
  auto refused = release(ordinal());
  EXPECT_EQ(refused.code, COOLBENCH_REFUSED);
  for (const char* part :
       {"cannot release GPU", "2 MiB", "foreign memory live", "NVML: process 502 MiB",
        "baseline 500 MiB", "scripted probe", "another runtime (loaded in this process: CuPy)"}) {
    EXPECT_TRUE(contains(coolbench_last_error(), part)) << part << "\n" << coolbench_last_error();
  }
  api().fake.foreign_bytes = 0;  // CuPy freed its memory and dropped its kernels
  const auto [code, report] = release(ordinal());
  api().fake.loaded_cuda_libraries.clear();
  ASSERT_EQ(code, COOLBENCH_OK) << coolbench_last_error();
  EXPECT_EQ(report["foreign_state"], "foreign context state without memory");
  EXPECT_EQ(report["foreign_bytes"], 0);
  EXPECT_EQ(report["process_bytes"], 500 * mib);
  EXPECT_EQ(report["baseline_bytes"], 500 * mib);
  EXPECT_EQ(report["coolbench_bytes"], 0);
  EXPECT_EQ(report["granularity_bytes"], 2 * mib);
  EXPECT_EQ(report["threshold_bytes"], 1 * mib);
  EXPECT_TRUE(contains(report["context_made_by"].get<std::string>().c_str(), "CuPy"));
  EXPECT_TRUE(contains(report["baseline_source"].get<std::string>().c_str(), "scripted probe"));
  EXPECT_TRUE(contains(report["dangling"].get<std::string>().c_str(), "must be created again"));
}

TEST_F(c_api_test, a_lease_in_another_thread_refuses_unless_the_release_waits_for_it) {
  std::atomic<bool> holding = false;
  std::atomic<bool> done = false;
  std::thread other([&] {
    auto lease = gpu().acquire();
    holding = true;
    while (!done) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(100ms);  // still held when the waiting release starts
  });
  while (!holding) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(release(ordinal()).code, COOLBENCH_REFUSED);
  EXPECT_TRUE(contains(coolbench_last_error(), "other threads")) << coolbench_last_error();

  done = true;
  const auto [code, report] = release(ordinal(), COOLBENCH_RELEASE_WAIT);
  other.join();
  EXPECT_EQ(code, COOLBENCH_OK) << coolbench_last_error();
  EXPECT_EQ(report["released"], true);
}

TEST_F(c_api_test, an_unknown_ordinal_is_no_device) {
  for (const int bad : {99, -1}) {
    const auto [code, report] = release(bad);
    EXPECT_EQ(code, COOLBENCH_NO_DEVICE) << bad;
    EXPECT_TRUE(contains(coolbench_last_error(), std::to_string(bad).c_str()))
        << coolbench_last_error();
    EXPECT_EQ(report["ordinal"], bad);
    EXPECT_EQ(report["released"], false);
    EXPECT_EQ(report["error"], coolbench_last_error());

    char buffer[64] = "untouched";
    EXPECT_EQ(coolbench_device_state(bad, buffer, sizeof buffer), COOLBENCH_NO_DEVICE);
    EXPECT_STREQ(buffer, "");
  }
}

TEST_F(c_api_test, other_failures_are_error_and_never_throw) {
  { auto lease = gpu().acquire(); }
  api().fail_reset = true;
  const auto [code, report] = release(ordinal());
  EXPECT_EQ(code, COOLBENCH_ERROR);
  EXPECT_TRUE(contains(coolbench_last_error(), "cudaDeviceReset failed")) << coolbench_last_error();
  EXPECT_EQ(report["error"], coolbench_last_error());
}

TEST_F(c_api_test, bad_arguments_are_invalid_argument_and_change_nothing) {
  { auto lease = gpu().acquire(); }
  const json before = state(ordinal());
  const int resets = api().fake.resets();

  const auto [code, report] = release(ordinal(), 0x4);
  EXPECT_EQ(code, COOLBENCH_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(coolbench_last_error(), "unknown flag bits 4")) << coolbench_last_error();
  EXPECT_EQ(report["error"], coolbench_last_error());
  EXPECT_EQ(release(ordinal(), COOLBENCH_RELEASE_FORCE | 0x80000000U).code,
            COOLBENCH_INVALID_ARGUMENT);
  EXPECT_EQ(coolbench_release_device(ordinal(), 0, nullptr, 16), COOLBENCH_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(coolbench_last_error(), "NULL")) << coolbench_last_error();
  EXPECT_EQ(coolbench_device_state(ordinal(), nullptr, 16), COOLBENCH_INVALID_ARGUMENT);
  EXPECT_EQ(api().fake.resets(), resets);
  EXPECT_EQ(state(ordinal()), before);

  // NULL with length 0 is allowed: the release happens, the report is dropped.
  EXPECT_EQ(coolbench_release_device(ordinal(), 0, nullptr, 0), COOLBENCH_OK);
  EXPECT_EQ(coolbench_device_state(ordinal(), nullptr, 0), COOLBENCH_OK);
}

TEST_F(c_api_test, a_truncated_report_is_nul_terminated_and_keeps_the_return_code) {
  char full[4096];
  ASSERT_EQ(coolbench_release_device(ordinal(), 0, full, sizeof full),
            COOLBENCH_NOTHING_TO_RELEASE);

  char small[17];
  std::memset(small, 'x', sizeof small);
  EXPECT_EQ(coolbench_release_device(ordinal(), 0, small, 16), COOLBENCH_NOTHING_TO_RELEASE);
  EXPECT_EQ(std::strlen(small), 15U);
  EXPECT_EQ(std::string(small), std::string(full, 15));
  EXPECT_EQ(small[16], 'x');  // nothing written past report_len

  char one = 'x';
  EXPECT_EQ(coolbench_release_device(ordinal(), 0, &one, 1), COOLBENCH_NOTHING_TO_RELEASE);
  EXPECT_EQ(one, '\0');

  { auto lease = gpu().acquire(); }
  char tiny[8];
  EXPECT_EQ(coolbench_release_device(ordinal(), 0, tiny, sizeof tiny), COOLBENCH_OK);
  EXPECT_EQ(std::strlen(tiny), sizeof tiny - 1);

  char state_text[10];
  EXPECT_EQ(coolbench_device_state(ordinal(), state_text, sizeof state_text), COOLBENCH_OK);
  EXPECT_EQ(std::strlen(state_text), sizeof state_text - 1);
}

TEST_F(c_api_test, device_state_is_what_the_device_layer_says) {
  auto lease = gpu().acquire();
  auto buffer = lease.allocate(2 * mib);
  const json j = state(ordinal());
  const auto status = gpu().status();
  EXPECT_EQ(j["ordinal"], ordinal());
  EXPECT_EQ(j["context_active"], true);
  EXPECT_EQ(j["generation"], status.generation);
  EXPECT_EQ(j["leases"], 1);
  EXPECT_EQ(j["live_bytes"], status.live_bytes);
  EXPECT_EQ(j["cached_bytes"], 0);
  EXPECT_EQ(j["peak_bytes"], status.peak_bytes);
  EXPECT_EQ(j["resources"]["allocation"], 1);
  EXPECT_EQ(j["resources"].size(), device::resource_kind_count);
  EXPECT_EQ(j["releases"], 0);
}

TEST_F(c_api_test, last_error_is_per_thread_and_kept_until_the_next_failure) {
  std::string in_other_thread = "not run";
  std::thread([&] { in_other_thread = coolbench_last_error(); }).join();
  EXPECT_EQ(in_other_thread, "");

  ASSERT_EQ(release(99).code, COOLBENCH_NO_DEVICE);
  const std::string message = coolbench_last_error();
  EXPECT_FALSE(message.empty());
  EXPECT_EQ(release(ordinal()).code, COOLBENCH_NOTHING_TO_RELEASE);
  EXPECT_EQ(coolbench_last_error(), message);  // successful calls leave it alone

  std::thread([] { (void)coolbench_release_device(0, 0x8, nullptr, 0); }).join();
  EXPECT_EQ(coolbench_last_error(), message);  // another thread's failure is its own
}

TEST_F(c_api_test, the_registry_finds_cuda_reset_as_the_release_function) {
  void* const release_function = reinterpret_cast<void*>(&coolbench_release_device);  // NOLINT
  EXPECT_EQ(coolbench_find_function("device_api.cuda_reset"), release_function);
  EXPECT_EQ(coolbench_find_function("coolbench.release_device"), release_function);
  EXPECT_EQ(coolbench_find_function("coolbench.device_state"),
            reinterpret_cast<void*>(&coolbench_device_state));  // NOLINT
  EXPECT_STREQ(coolbench_function_signature("device_api.cuda_reset"),
               "int(int,unsigned,char*,size_t)");
  EXPECT_STREQ(coolbench_function_signature("coolbench.device_state"), "int(int,char*,size_t)");

  using release_type = int (*)(int, unsigned, char*, std::size_t);
  auto* found = reinterpret_cast<release_type>(  // NOLINT
      coolbench_find_function("device_api.cuda_reset"));
  char report[256];
  EXPECT_EQ(found(ordinal(), 0, report, sizeof report), COOLBENCH_NOTHING_TO_RELEASE);
}

TEST_F(c_api_test, unknown_names_are_null) {
  EXPECT_EQ(coolbench_find_function("device_api.cuda_reset "), nullptr);
  EXPECT_EQ(coolbench_find_function("device_api.cuda"), nullptr);
  EXPECT_EQ(coolbench_find_function(""), nullptr);
  EXPECT_EQ(coolbench_find_function(nullptr), nullptr);
  EXPECT_EQ(coolbench_function_signature("nope"), nullptr);
  EXPECT_EQ(coolbench_function_signature(nullptr), nullptr);
}

TEST_F(c_api_test, every_registered_name_is_unique_and_found_through_c) {
  std::set<std::string_view> names;
  for (const auto& f : registered_functions()) {
    EXPECT_TRUE(names.insert(f.name).second) << "registered twice: " << f.name;
    EXPECT_NE(f.function, nullptr) << f.name;
    EXPECT_FALSE(f.signature.empty()) << f.name;
    EXPECT_EQ(find_function(f.name), &f);
    const std::string name(f.name);
    EXPECT_EQ(coolbench_find_function(name.c_str()),
              reinterpret_cast<void*>(f.function));  // NOLINT
    EXPECT_EQ(coolbench_function_signature(name.c_str()), f.signature);
  }
  EXPECT_GE(names.size(), 3U);
  EXPECT_EQ(find_function("no.such.function"), nullptr);
}

TEST_F(c_api_test, version_is_the_library_version) {
  EXPECT_EQ(std::string(coolbench_version()), std::string(version()));
}

TEST_F(c_api_test, the_header_compiles_as_c_and_declares_the_same_functions) {
  EXPECT_EQ(coolbench_c_header_check(), 0);
}

}  // namespace
}  // namespace coolbench
