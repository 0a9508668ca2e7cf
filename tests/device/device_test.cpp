// The device layer's lifecycle over a scripted GPU: leases, the registry, the
// caching allocator, release and its refusals, re-acquire, threads.
#include "coolbench/device/device.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "device/fake_gpu_api.hpp"

namespace coolbench::device {
namespace {

using namespace std::chrono_literals;
using testing::fake_gpu_api;

constexpr std::uint64_t mib = fake_gpu_api::mib;

fake_gpu_api& fake() {
  static const std::shared_ptr<fake_gpu_api> api = [] {
    testing::use_temporary_cache_dir();
    auto created = std::make_shared<fake_gpu_api>();
    created->devices = 1000;
    detail::use_gpu_api_for_testing(created);
    return created;
  }();
  return *api;
}

/// Each test gets a device of its own: device state lives for the process.
class device_test : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> next_ordinal{0};
    auto& api = fake();
    api.capacity_bytes = 4096 * mib;
    api.foreign_bytes = 0;
    api.nvml_sees_process = true;
    api.fail_synchronize = false;
    api.code_bytes = 0;
    api.probe_error.clear();
    api.loaded_cuda_libraries.clear();
    m_device = &device::get(next_ordinal++);
  }
  device& gpu() { return *m_device; }

 private:
  device* m_device = nullptr;
};

std::uint64_t destroyed(const release_report& report, resource_kind kind) {
  return report.destroyed[static_cast<std::size_t>(kind)];
}

TEST_F(device_test, unknown_ordinals_are_refused) {
  EXPECT_THROW((void)device::get(5000), invalid_argument);
  EXPECT_THROW((void)device::get(-1), invalid_argument);
}

TEST_F(device_test, a_release_with_nothing_to_release_is_a_no_op_that_says_so) {
  const int resets = fake().resets();
  const auto report = gpu().release();
  EXPECT_FALSE(report.released);
  EXPECT_FALSE(report.context_reset);
  EXPECT_NE(report.note.find("nothing to release"), std::string::npos) << report.note;
  EXPECT_EQ(fake().resets(), resets);
  EXPECT_EQ(gpu().status().generation, report.generation_after);
}

TEST_F(device_test, acquire_creates_the_context_once_and_counts_leases) {
  const int created = fake().contexts_created();
  {
    auto first = gpu().acquire();
    auto second = gpu().acquire();
    EXPECT_EQ(gpu().status().leases, 2U);
    EXPECT_TRUE(gpu().status().context_active);
    EXPECT_EQ(first.generation(), second.generation());
  }
  EXPECT_EQ(gpu().status().leases, 0U);
  EXPECT_EQ(fake().contexts_created(), created + 1);
}

TEST_F(device_test, release_destroys_everything_and_resets_the_context) {
  int adopted_destroyed = 0;
  buffer big;
  buffer small;
  owned_resource handle;
  const int kernel = 0;
  {
    auto l = gpu().acquire();
    big = l.allocate(256 * mib);
    small = l.allocate(1000);
    (void)l.stream();
    (void)l.create_event();
    (void)l.create_event();
    l.set_kernel_attribute(&kernel, kernel_attribute::max_dynamic_shared_memory_bytes, 200 * 1024);
    handle = l.adopt(resource_kind::blas_handle, [&] { ++adopted_destroyed; });
  }
  buffer cached = gpu().acquire().allocate(4 * mib);
  cached = buffer();  // back to the cache
  const auto before = gpu().status();
  EXPECT_EQ(before.live_bytes, 256 * mib + 1024);
  EXPECT_EQ(before.cached_bytes, 4 * mib);
  EXPECT_EQ(before.resources[static_cast<std::size_t>(resource_kind::allocation)], 3U);

  const auto report = gpu().release();
  EXPECT_TRUE(report.released);
  EXPECT_TRUE(report.context_reset);
  EXPECT_EQ(report.bytes_freed, 260 * mib + 1024);
  EXPECT_EQ(report.live_bytes_freed, 256 * mib + 1024);
  EXPECT_EQ(destroyed(report, resource_kind::allocation), 3U);
  EXPECT_EQ(destroyed(report, resource_kind::stream), 1U);
  EXPECT_EQ(destroyed(report, resource_kind::event), 2U);
  EXPECT_EQ(destroyed(report, resource_kind::blas_handle), 1U);
  EXPECT_EQ(adopted_destroyed, 1);
  EXPECT_EQ(report.generation_after, before.generation + 1);
  ASSERT_TRUE(report.process_listed_after.has_value());
  EXPECT_FALSE(*report.process_listed_after);
  ASSERT_TRUE(report.foreign_bytes.has_value());
  EXPECT_EQ(*report.foreign_bytes, 0);
  EXPECT_GE(report.seconds, 0.0);

  EXPECT_EQ(fake().live_streams(), 0U);
  EXPECT_EQ(fake().live_events(), 0U);
  const auto after = gpu().status();
  EXPECT_FALSE(after.context_active);
  EXPECT_EQ(after.live_bytes + after.cached_bytes + after.peak_bytes, 0U);
  EXPECT_EQ(after.releases, 1U);

  // Handles from before the release are stale, never dangling.
  EXPECT_FALSE(big.valid());
  EXPECT_THROW((void)big.get(), stale_resource);
  EXPECT_FALSE(handle.valid());
  big = buffer();
  small = buffer();
  handle = owned_resource();
  EXPECT_EQ(adopted_destroyed, 1);  // not destroyed twice
  EXPECT_FALSE(fake().freed_twice());
}

TEST_F(device_test, the_next_use_re_acquires_and_re_applies_kernel_attributes) {
  const int kernel = 0;
  std::uint64_t first_generation = 0;
  {
    auto l = gpu().acquire();
    first_generation = l.generation();
    l.set_kernel_attribute(&kernel, kernel_attribute::max_dynamic_shared_memory_bytes, 100 * 1024);
    l.set_kernel_attribute(&kernel, kernel_attribute::max_dynamic_shared_memory_bytes, 200 * 1024);
  }
  (void)gpu().release();
  const int created = fake().contexts_created();
  auto l = gpu().acquire();
  EXPECT_EQ(fake().contexts_created(), created + 1);
  EXPECT_GT(l.generation(), first_generation);
  int applied_after_release = 0;
  for (const auto& call : fake().attribute_calls()) {
    if (call.kernel == &kernel) applied_after_release = call.value;
  }
  EXPECT_EQ(applied_after_release, 200 * 1024);  // the latest value, in the new context
  auto b = l.allocate(1 * mib);
  EXPECT_TRUE(b.valid());
  EXPECT_NE(b.get(), nullptr);
}

TEST_F(device_test, a_lease_kept_across_a_release_in_its_own_thread_re_acquires_on_next_use) {
  auto l = gpu().acquire();
  auto before = l.allocate(2 * mib);
  const auto report = gpu().release();  // this thread's own lease does not block it
  EXPECT_TRUE(report.released);
  EXPECT_FALSE(gpu().status().context_active);
  auto after = l.allocate(2 * mib);  // re-acquires
  EXPECT_TRUE(gpu().status().context_active);
  EXPECT_TRUE(after.valid());
  EXPECT_FALSE(before.valid());
  EXPECT_EQ(l.generation(), report.generation_after);
}

TEST_F(device_test, the_allocator_reuses_cached_blocks) {
  auto l = gpu().acquire();
  void* first = nullptr;
  {
    auto b = l.allocate(3 * mib);
    first = b.get();
    EXPECT_EQ(b.size(), 4 * mib);  // rounded to the 2 MiB page
  }
  EXPECT_EQ(gpu().status().cached_bytes, 4 * mib);
  {
    auto b = l.allocate(4 * mib);
    EXPECT_EQ(b.get(), first);
    EXPECT_EQ(gpu().status().cached_bytes, 0U);
  }
  gpu().empty_cache();
  const auto status = gpu().status();
  EXPECT_EQ(status.cached_bytes, 0U);
  EXPECT_EQ(status.peak_bytes, 4 * mib);
}

TEST_F(device_test, out_of_memory_empties_the_cache_then_says_what_was_asked) {
  fake().capacity_bytes = fake().allocated_bytes() + 10 * mib;
  auto l = gpu().acquire();
  { auto b = l.allocate(8 * mib); }  // cached
  auto c = l.allocate(6 * mib);      // fits only once the cache is emptied
  EXPECT_TRUE(c.valid());
  EXPECT_EQ(gpu().status().cached_bytes, 0U);
  try {
    (void)l.allocate(64 * mib);
    FAIL() << "allocated beyond the capacity";
  } catch (const cuda_error& e) {
    EXPECT_NE(std::string(e.what()).find("out of device memory"), std::string::npos) << e.what();
  }
}

TEST_F(device_test, memory_of_another_library_refuses_the_release_and_changes_nothing) {
  auto b = gpu().acquire().allocate(10 * mib);
  fake().foreign_bytes = 300 * mib;
  const int resets = fake().resets();
  try {
    (void)gpu().release();
    FAIL() << "released over another library's memory";
  } catch (const release_refused& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("300 MiB"), std::string::npos) << message;
    EXPECT_NE(message.find("force"), std::string::npos) << message;
  }
  EXPECT_EQ(fake().resets(), resets);
  EXPECT_TRUE(b.valid());
  EXPECT_TRUE(gpu().status().context_active);

  const auto report = gpu().release({.force = true});
  EXPECT_TRUE(report.released);
  EXPECT_TRUE(report.forced);
  ASSERT_TRUE(report.foreign_bytes.has_value());
  EXPECT_EQ(*report.foreign_bytes, static_cast<std::int64_t>(300 * mib));
}

TEST_F(device_test, without_nvml_per_process_memory_only_force_releases) {
  (void)gpu().acquire().allocate(1 * mib);
  fake().nvml_sees_process = false;
  EXPECT_THROW((void)gpu().release(), release_refused);
  const auto report = gpu().release({.force = true});
  EXPECT_TRUE(report.released);
  EXPECT_FALSE(report.foreign_bytes.has_value());
  EXPECT_NE(report.foreign_check.find("not checked"), std::string::npos);
  EXPECT_FALSE(report.process_listed_after.has_value());
}

TEST_F(device_test, a_context_another_library_created_is_released_when_its_memory_is_gone) {
  const int ordinal = gpu().ordinal();
  fake().make_context_exist(ordinal);  // e.g. a TVM program's context, tensors freed
  const auto report = gpu().release();
  EXPECT_TRUE(report.released);
  EXPECT_EQ(report.foreign_state, "foreign context state without memory");
  EXPECT_EQ(report.foreign_bytes, 0);
  EXPECT_EQ(report.baseline_bytes, 500 * mib);  // the bare context, from the probe
  EXPECT_NE(report.baseline_source.find("scripted probe"), std::string::npos)
      << report.baseline_source;
  EXPECT_NE(report.context_made_by.find("another runtime"), std::string::npos);
  EXPECT_NE(report.dangling.find("must be created again"), std::string::npos) << report.dangling;

  fake().make_context_exist(ordinal);
  fake().foreign_bytes = 2048 * mib;  // its tensors are still there
  EXPECT_THROW((void)gpu().release(), release_refused);
}

TEST_F(device_test,
       one_page_of_another_runtime_in_its_context_is_refused_and_force_says_what_dangles) {
  const int ordinal = gpu().ordinal();
  fake().make_context_exist(ordinal);
  fake().foreign_bytes = 2 * mib;  // a 72-byte array: one page of the driver's small pool
  const int resets = fake().resets();
  try {
    (void)gpu().release();
    FAIL() << "released over one page of another runtime's memory";
  } catch (const release_refused& e) {
    const std::string message = e.what();
    for (const char* part : {"2 MiB", "foreign memory live", "NVML: process 502 MiB",
                             "baseline 500 MiB", "scripted probe", "another runtime"}) {
      EXPECT_NE(message.find(part), std::string::npos) << part << "\n" << message;
    }
  }
  EXPECT_EQ(fake().resets(), resets);
  const auto forced = gpu().release({.force = true});
  EXPECT_TRUE(forced.released);
  EXPECT_EQ(forced.foreign_state, "foreign memory live");
  EXPECT_NE(forced.dangling.find("2 MiB of another runtime's device memory"), std::string::npos)
      << forced.dangling;
}

TEST_F(device_test, what_coolbenchs_leases_load_is_its_own_and_what_others_load_is_not) {
  {
    auto l = gpu().acquire();
    auto b = l.allocate(3 * mib);
    fake().code_bytes = 6 * mib;  // its kernels' code and a library handle, loaded in the lease
  }
  gpu().empty_cache();  // the 4 MiB block goes back to the driver: no longer coolbench's
  auto report = gpu().release();
  EXPECT_TRUE(report.released);
  EXPECT_EQ(report.coolbench_bytes, 6 * mib);
  EXPECT_EQ(report.foreign_state, "none");
  EXPECT_EQ(report.context_made_by, "coolbench");

  { auto l = gpu().acquire(); }
  fake().code_bytes = 2 * mib;  // another runtime's kernel, loaded outside coolbench's leases
  EXPECT_THROW((void)gpu().release(), release_refused);
}

// The H200's refusal after graph runs: an engine trims the cache inside a
// lease; the drop was counted by empty_cache and again by the window, and
// coolbench's share fell to 0 MiB with its workspace live.
TEST_F(device_test, an_empty_cache_inside_a_lease_is_counted_once) {
  {
    auto l = gpu().acquire();
    auto old = l.allocate(4 * mib);
  }  // cached: still coolbench's
  buffer kept;
  {
    auto l = gpu().acquire();
    gpu().empty_cache();  // the cached 4 MiB go back to the driver, inside the window
    kept = l.allocate(6 * mib);
  }
  const auto report = gpu().release();
  EXPECT_TRUE(report.released) << report.note;
  EXPECT_EQ(report.coolbench_bytes, 6 * mib);
  EXPECT_EQ(report.foreign_bytes, 0);

  // Outside a lease empty_cache counts the drop itself.
  {
    auto l = gpu().acquire();
    auto old = l.allocate(4 * mib);
  }
  gpu().empty_cache();
  fake().foreign_bytes = 2 * mib;  // another runtime's small array
  EXPECT_THROW((void)gpu().release(), release_refused);
}

// A resource that gives memory back when destroyed outside a lease (a CUDA
// graph dropped with its session) leaves coolbench's share; else another
// runtime's allocation of the same size would hide behind it.
TEST_F(device_test, an_adopted_resource_destroyed_outside_a_lease_leaves_coolbenchs_share) {
  owned_resource graph;
  {
    auto l = gpu().acquire();
    fake().code_bytes += 4 * mib;  // the executable graph's device memory
    graph = l.adopt(resource_kind::graph, [] { fake().code_bytes -= 4 * mib; });
  }
  graph = owned_resource{};  // destroyed, no lease held
  fake().foreign_bytes = 4 * mib;
  try {
    (void)gpu().release();
    ADD_FAILURE() << "released under another runtime's 4 MiB";
  } catch (const release_refused& e) {
    EXPECT_NE(std::string(e.what()).find("foreign memory live"), std::string::npos) << e.what();
  }
  fake().foreign_bytes = 0;
  const auto report = gpu().release();
  EXPECT_TRUE(report.released);
  EXPECT_EQ(report.coolbench_bytes, 0U);
  EXPECT_EQ(report.foreign_state, "none");
}

TEST_F(device_test,
       the_bare_context_is_measured_once_and_a_probe_failure_refuses_another_runtimes_context) {
  const int runs = fake().probe_runs();
  fake().make_context_exist(gpu().ordinal());
  (void)gpu().release();
  fake().make_context_exist(gpu().ordinal());
  (void)gpu().release();
  EXPECT_LE(fake().probe_runs(), runs + 1);  // cached (by an earlier test, or now)
  // A coolbench context needs no probe: its baseline is its own.
  { auto l = gpu().acquire(); }
  EXPECT_TRUE(gpu().release().released);

  // A new driver: the cached figure is stale, and the probe cannot run.
  fake().driver_version = "590.1";
  fake().probe_error = "coolbench-context-probe was not found (looked at /nowhere)";
  fake().loaded_cuda_libraries = {"PyTorch (libtorch_cuda.so)"};
  fake().make_context_exist(gpu().ordinal());
  try {
    (void)gpu().release();
    ADD_FAILURE() << "released another runtime's context without a baseline";
  } catch (const release_refused& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("bare context's figure is unknown"), std::string::npos) << message;
    EXPECT_NE(message.find("/nowhere"), std::string::npos) << message;
    EXPECT_NE(message.find("PyTorch (libtorch_cuda.so)"), std::string::npos) << message;
  }
  const auto forced = gpu().release({.force = true});
  EXPECT_EQ(forced.foreign_state, "unknown");
  fake().driver_version = "580.159.04";
}

TEST_F(device_test, failed_in_flight_work_is_reported_and_the_reset_still_happens) {
  (void)gpu().acquire().allocate(1 * mib);
  fake().fail_synchronize = true;
  const auto report = gpu().release();
  EXPECT_TRUE(report.context_reset);
  EXPECT_NE(report.note.find("cudaErrorIllegalAddress"), std::string::npos) << report.note;
}

TEST_F(device_test, adopt_refuses_memory_and_attributes) {
  auto l = gpu().acquire();
  EXPECT_THROW((void)l.adopt(resource_kind::allocation, [] {}), invalid_argument);
  EXPECT_THROW((void)l.adopt(resource_kind::kernel_attribute, [] {}), invalid_argument);
}

TEST_F(device_test, an_adopted_resource_dropped_early_is_destroyed_once) {
  int destroyed_count = 0;
  {
    auto l = gpu().acquire();
    auto graph = l.adopt(resource_kind::graph, [&] { ++destroyed_count; });
    EXPECT_TRUE(graph.valid());
  }
  EXPECT_EQ(destroyed_count, 1);
  const auto report = gpu().release();
  EXPECT_EQ(destroyed(report, resource_kind::graph), 0U);
  EXPECT_EQ(destroyed_count, 1);
}

TEST_F(device_test, a_lease_in_another_thread_refuses_the_release_at_once) {
  std::atomic<bool> holding{false};
  std::atomic<bool> done{false};
  std::thread other([&] {
    auto l = gpu().acquire();
    holding = true;
    while (!done) std::this_thread::sleep_for(1ms);
  });
  while (!holding) std::this_thread::sleep_for(1ms);
  try {
    (void)gpu().release();
    ADD_FAILURE() << "released under another thread's lease";
  } catch (const release_refused& e) {
    EXPECT_NE(std::string(e.what()).find("other threads"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(gpu().status().context_active);
  const auto started = std::chrono::steady_clock::now();
  EXPECT_THROW((void)gpu().release({.wait_for_leases = 50ms}), release_refused);
  EXPECT_GE(std::chrono::steady_clock::now() - started, 45ms);
  done = true;
  other.join();
}

TEST_F(device_test, a_release_can_wait_for_other_threads_to_end_their_leases) {
  std::atomic<bool> holding{false};
  std::thread other([&] {
    auto l = gpu().acquire();
    holding = true;
    std::this_thread::sleep_for(100ms);
  });
  while (!holding) std::this_thread::sleep_for(1ms);
  const auto report = gpu().release({.wait_for_leases = 5s});
  EXPECT_TRUE(report.released);
  other.join();
}

TEST_F(device_test, many_threads_lease_and_allocate_while_one_releases) {
  constexpr int workers = 6;
  std::atomic<bool> stop{false};
  std::atomic<int> stale_seen{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < workers; ++t) {
    threads.emplace_back([&, t] {
      while (!stop) {
        auto l = gpu().acquire();
        auto b = l.allocate(static_cast<std::size_t>(t + 1) * 4096);
        try {
          (void)b.get();
        } catch (const stale_resource&) {
          ++stale_seen;  // a release can only happen between leases: never here
        }
      }
    });
  }
  int released = 0;
  for (int i = 0; i < 50; ++i) {
    try {
      if (gpu().release({.wait_for_leases = 20ms}).released) ++released;
    } catch (const release_refused&) {
    }
  }
  stop = true;
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(stale_seen.load(), 0);
  (void)gpu().release();
  const auto status = gpu().status();
  EXPECT_EQ(status.leases, 0U);
  EXPECT_EQ(status.live_bytes + status.cached_bytes, 0U);
}

TEST_F(device_test, two_hundred_run_release_cycles_leave_nothing_behind) {
  const std::uint64_t before = fake().allocated_bytes();
  const int kernel = 0;
  for (int cycle = 0; cycle < 200; ++cycle) {
    {
      auto l = gpu().acquire();
      auto a = l.allocate(1 * mib);
      auto b = l.allocate(3000);
      (void)l.stream();
      (void)l.create_event();
      l.set_kernel_attribute(&kernel, kernel_attribute::preferred_shared_memory_carveout, 50);
    }
    const auto report = gpu().release();
    ASSERT_TRUE(report.released) << cycle;
    ASSERT_EQ(report.bytes_freed, 2 * mib + 3072) << cycle;
    ASSERT_EQ(fake().allocated_bytes(), before) << cycle;
  }
  const auto status = gpu().status();
  EXPECT_EQ(status.releases, 200U);
  EXPECT_EQ(status.resources[static_cast<std::size_t>(resource_kind::kernel_attribute)], 1U);
  EXPECT_EQ(fake().live_streams() + fake().live_events(), 0U);
  EXPECT_FALSE(fake().freed_twice());
}

}  // namespace
}  // namespace coolbench::device
