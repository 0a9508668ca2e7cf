// The device layer on a scripted host of several GPUs, one worker thread per GPU as
// `coolbench run --device all` uses it: each GPU's state is its own, a release touches only
// its own GPU, a refusal on one leaves the others alone, a lease makes its GPU current in the
// thread that takes it.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "coolbench/device/device.hpp"
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
    created->devices = 3;
    created->capacity_bytes = 4096 * mib;
    detail::use_gpu_api_for_testing(created);
    return created;
  }();
  return *api;
}

/// The calls of `api` after the first `from` that name GPU `ordinal`.
std::vector<std::string> calls_on(const fake_gpu_api& api, std::size_t from, int ordinal) {
  const auto all = api.calls();
  std::vector<std::string> out;
  const std::string suffix = " " + std::to_string(ordinal);
  for (std::size_t i = from; i < all.size(); ++i) {
    if (all[i].ends_with(suffix)) out.push_back(all[i]);
  }
  return out;
}

// Three threads, one per GPU, lease, allocate, time and release their GPU at once, 50 times
// each: no call ever names another GPU's memory, stream or event, and each GPU ends empty.
TEST(multi_device, workers_on_three_gpus_release_only_their_own) {
  auto& api = fake();
  std::atomic<int> refused{0};
  std::atomic<int> wrong_current{0};
  std::vector<std::thread> workers;
  for (int ordinal = 0; ordinal < 3; ++ordinal) {
    workers.emplace_back([&, ordinal] {
      auto& gpu = device::get(ordinal);
      for (int cycle = 0; cycle < 50; ++cycle) {
        {
          auto l = gpu.acquire();
          if (fake_gpu_api::current_device() != ordinal) ++wrong_current;
          auto b = l.allocate(static_cast<std::size_t>(ordinal + 1) * mib);
          (void)l.stream();
          (void)l.create_event();
        }
        try {
          (void)gpu.release();
        } catch (const release_refused&) {
          ++refused;
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(refused.load(), 0);
  EXPECT_EQ(wrong_current.load(), 0);
  EXPECT_FALSE(api.crossed_devices());
  EXPECT_FALSE(api.freed_twice());
  for (int ordinal = 0; ordinal < 3; ++ordinal) {
    const auto s = device::get(ordinal).status();
    EXPECT_EQ(s.releases, 50U) << "GPU " << ordinal;
    EXPECT_FALSE(s.context_active);
    EXPECT_EQ(api.allocated_bytes_on(ordinal), 0U);
  }
}

// GPU 1's release while GPU 0's lease is held in another thread: leases are per GPU, so it
// goes through, and touches nothing of GPU 0.
TEST(multi_device, a_lease_on_one_gpu_does_not_hold_back_anothers_release) {
  auto& api = fake();
  std::atomic<bool> holding{false};
  std::atomic<bool> done{false};
  std::thread other([&] {
    auto l = device::get(0).acquire();
    auto b = l.allocate(8 * mib);
    holding = true;
    while (!done) std::this_thread::sleep_for(1ms);
  });
  while (!holding) std::this_thread::sleep_for(1ms);
  {
    auto l = device::get(1).acquire();
    (void)l.allocate(4 * mib);
  }
  const std::size_t before = api.calls().size();
  const release_report r = device::get(1).release();
  EXPECT_TRUE(r.released);
  EXPECT_EQ(r.ordinal, 1);
  EXPECT_TRUE(calls_on(api, before, 0).empty());
  EXPECT_FALSE(calls_on(api, before, 1).empty());
  EXPECT_TRUE(device::get(0).status().context_active);
  EXPECT_GE(api.allocated_bytes_on(0), 8 * mib);
  done = true;
  other.join();
  (void)device::get(0).release();
}

// Another library's memory on GPU 2 refuses GPU 2's release and changes nothing there; GPU 0
// releases as usual.
TEST(multi_device, a_refusal_on_one_gpu_leaves_the_others_releases) {
  auto& api = fake();
  for (int ordinal : {0, 2}) {
    auto l = device::get(ordinal).acquire();
    (void)l.allocate(2 * mib);
  }
  api.foreign_bytes_on[2] = 64 * mib;
  EXPECT_THROW((void)device::get(2).release(), release_refused);
  EXPECT_TRUE(device::get(2).status().context_active);
  EXPECT_TRUE(device::get(0).release().released);
  EXPECT_FALSE(device::get(0).status().context_active);
  api.foreign_bytes_on.erase(2);
  EXPECT_TRUE(device::get(2).release().released);
}

// A lease taken in a thread whose current device is another GPU makes its own GPU current
// before anything is launched, also when the context exists already (made by another thread).
TEST(multi_device, a_lease_makes_its_gpu_current_in_its_thread) {
  fake();
  { auto made_elsewhere = device::get(2).acquire(); }
  std::thread worker([] {
    { auto l0 = device::get(0).acquire(); }
    EXPECT_EQ(fake_gpu_api::current_device(), 0);
    auto l2 = device::get(2).acquire();
    EXPECT_EQ(fake_gpu_api::current_device(), 2);
    { auto l0 = device::get(0).acquire(); }
    (void)l2.stream();
    EXPECT_EQ(fake_gpu_api::current_device(), 2);
  });
  worker.join();
  (void)device::get(0).release();
  (void)device::get(2).release();
}

// A worker thread that has taken no lease works on GPU 0 (CUDA's default): make_current gives
// it its own GPU, with the context made as a lease makes it, and no lease left behind.
TEST(multi_device, make_current_gives_a_fresh_thread_its_gpu_without_a_lease) {
  auto& api = fake();
  (void)device::get(1).release();
  std::thread worker([] {
    EXPECT_EQ(fake_gpu_api::current_device(), -1);
    device::get(1).make_current();
    EXPECT_EQ(fake_gpu_api::current_device(), 1);
  });
  worker.join();
  const auto s = device::get(1).status();
  EXPECT_TRUE(s.context_active);
  EXPECT_EQ(s.leases, 0U);
  EXPECT_TRUE(api.context_active(1));
  EXPECT_TRUE(device::get(1).release().released);
}

}  // namespace
}  // namespace coolbench::device
