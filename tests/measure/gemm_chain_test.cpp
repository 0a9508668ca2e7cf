// GEMM chains on a real GPU (label gpu; skipped without one): results against
// a host reference, event timing, release and re-acquire, the heater, and the
// bf16 8192^3 rate as a sanity check. Run on the GPU machine:
//   ctest --test-dir build -L gpu -R 'gemm_chain|heater' -V
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "coolbench/device.hpp"
#include "coolbench/measure.hpp"
#include "measure/detail/gemm_chain.hpp"
#include "measure/gpu_skip.hpp"

namespace coolbench::measure {
namespace {

using detail::gemm_matrix;
using detail::read_gemm_matrix;

// Equal up to fp16's rounding (the same algorithm is normally chosen again,
// giving identical bits, but nothing promises it).
void expect_same_result(const std::vector<float>& x, const std::vector<float>& y) {
  ASSERT_EQ(x.size(), y.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_NEAR(x[i], y[i], 2e-3 * std::abs(x[i]) + 1e-3) << "element " << i;
  }
}

// C = A·B on the host, in double, from the matrices the GPU holds.
std::vector<double> reference(const gemm_shape& s, const std::vector<float>& a,
                              const std::vector<float>& b) {
  std::vector<double> c(static_cast<std::size_t>(s.m * s.n));
  for (std::int64_t i = 0; i < s.m; ++i) {
    for (std::int64_t j = 0; j < s.n; ++j) {
      double sum = 0;
      for (std::int64_t p = 0; p < s.k; ++p) {
        sum += static_cast<double>(a[static_cast<std::size_t>(i * s.k + p)]) *
               static_cast<double>(b[static_cast<std::size_t>(p * s.n + j)]);
      }
      c[static_cast<std::size_t>(i * s.n + j)] = sum;
    }
  }
  return c;
}

// The largest |C - reference| less `relative` * |reference|, for every shape.
void expect_close(const gemm_chain_spec& spec, workload& w, double relative, double absolute) {
  for (std::size_t shape = 0; shape < spec.shapes.size(); ++shape) {
    const auto a = read_gemm_matrix(w, gemm_matrix::a, shape);
    const auto b = read_gemm_matrix(w, gemm_matrix::b, shape);
    const auto c = read_gemm_matrix(w, gemm_matrix::c, shape);
    // Seeded random inputs, never zero, in [-1, 1).
    EXPECT_EQ(std::count(a.begin(), a.end(), 0.0F), 0);
    EXPECT_EQ(std::count(b.begin(), b.end(), 0.0F), 0);
    EXPECT_LE(*std::max_element(a.begin(), a.end()), 1.0F);
    EXPECT_GE(*std::min_element(a.begin(), a.end()), -1.0F);
    const auto ref = reference(spec.shapes[shape], a, b);
    ASSERT_EQ(c.size(), ref.size());
    double worst = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      const double excess =
          std::abs(static_cast<double>(c[i]) - ref[i]) - relative * std::abs(ref[i]);
      worst = std::max(worst, excess);
      ASSERT_TRUE(std::isfinite(c[i])) << i;
    }
    std::printf("%s, shape %zu: largest error beyond %.0e relative: %.3g\n",
                to_string(spec).c_str(), shape + 1, relative, worst);
    EXPECT_LE(worst, absolute) << to_string(spec) << ", shape " << shape + 1;
  }
}

TEST(gemm_chain, fp32_matches_the_host_without_tf32) {
  SKIP_WITHOUT_GPU();
  // Sums of 256 products in [-1, 1): fp32 errs by about 1e-5 here, TF32 by
  // several 1e-3, so 5e-4 tells them apart.
  const gemm_chain_spec spec = single_gemm_chain(gemm_dtype::fp32, 64, 48, 256, 2);
  auto w = make_gemm_chain(spec, 0);
  (void)w->run();
  expect_close(spec, *w, 0.0, 5e-4);
  w->release();
}

TEST(gemm_chain, fp16_and_bf16_match_the_host_to_their_rounding) {
  SKIP_WITHOUT_GPU();
  // fp32 accumulation, then one rounding to the output type: 2^-11 (fp16) or
  // 2^-8 (bf16) relative, with margin.
  const gemm_chain_spec fp16 = single_gemm_chain(gemm_dtype::fp16, 80, 72, 256, 3);
  auto h = make_gemm_chain(fp16, 0);
  (void)h->run();
  expect_close(fp16, *h, 1e-3, 1e-3);
  const gemm_chain_spec bf16 = single_gemm_chain(gemm_dtype::bf16, 64, 128, 96, 1);
  auto b = make_gemm_chain(bf16, 0);
  (void)b->run();
  expect_close(bf16, *b, 8e-3, 1e-3);
}

// Several shapes: each has its own matrices, each result is right, and the
// shapes' inputs differ (their seeds do).
TEST(gemm_chain, several_shapes_each_compute_their_own_product) {
  SKIP_WITHOUT_GPU();
  const gemm_chain_spec spec = parse_gemm_chain("gemm:fp16:64:96:128:2,48:32:256@3");
  auto w = make_gemm_chain(spec, 0);
  (void)w->run();
  expect_close(spec, *w, 1e-3, 1e-3);
  const auto a1 = read_gemm_matrix(*w, gemm_matrix::a, 0);
  const auto a2 = read_gemm_matrix(*w, gemm_matrix::a, 1);
  EXPECT_NE(std::vector<float>(a1.begin(), a1.begin() + 64),
            std::vector<float>(a2.begin(), a2.begin() + 64));
  EXPECT_THROW((void)read_gemm_matrix(*w, gemm_matrix::a, 2), invalid_argument);
  w->release();
}

// GPT-2 small's 48 layer GEMMs: a chain long enough that the 32 ns event tick
// is a small part of it, still held (no short hold left after the warm-up).
TEST(gemm_chain, gpt2_small_layers_run_held_and_take_longer_than_one_layer) {
  SKIP_WITHOUT_GPU();
  auto whole = make_workload("gemm:fp16:gpt2-small", 0);
  auto layer = make_workload("gemm:fp16:128:2304:768,128:768:768,128:3072:768,128:768:3072", 0);
  const auto median = [](workload& w) {
    for (int i = 0; i < 20; ++i) (void)w.run();
    std::vector<double> ms;
    for (int i = 0; i < 50; ++i) ms.push_back(w.run().latency_ms);
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  const double one = median(*layer);
  const double twelve = median(*whole);
  const auto hold = detail::gemm_chain_hold(*whole);
  std::printf(
      "gpt2-small: one layer %.4f ms, 12 layers %.4f ms (%.1fx), hold %llu us, %llu redone\n", one,
      twelve, twelve / one, static_cast<unsigned long long>(hold.hold_ns / 1000),
      static_cast<unsigned long long>(hold.short_holds));
  // Twelve times the work on the same kernels: about 12x the time.
  EXPECT_GT(twelve, 9 * one);
  EXPECT_LT(twelve, 14 * one);
  EXPECT_EQ(whole->describe(),
            "gemm fp16 128x2304x768 x1, 128x768x768 x1, 128x3072x768 x1, 128x768x3072 x1 @12: "
            "48 GEMMs (cuBLASLt)");
  whole->release();
  layer->release();
}

TEST(gemm_chain, event_latency_is_positive_consistent_and_within_the_host_time) {
  SKIP_WITHOUT_GPU();
  for (const auto dtype : {gemm_dtype::fp16, gemm_dtype::bf16, gemm_dtype::fp32}) {
    const gemm_chain_spec spec = single_gemm_chain(dtype, 256, 512, 384, 8);
    auto w = make_gemm_chain(spec, 0);
    w->prepare();
    (void)w->run();  // warm-up: the first run loads cuBLASLt's kernels
    std::vector<double> ms;
    for (int i = 0; i < 30; ++i) {
      const timing t = w->run();
      EXPECT_GT(t.latency_ms, 0.0);
      EXPECT_GT(t.end_ns, t.start_ns);
      // The events sit inside the host's window (1 us of slack for clock granularity).
      EXPECT_LE(t.latency_ms, static_cast<double>(t.end_ns - t.start_ns) / 1e6 + 1e-3);
      ms.push_back(t.latency_ms);
    }
    std::sort(ms.begin(), ms.end());
    const double median = ms[ms.size() / 2];
    std::printf("%s: median %.4f ms, min %.4f, max %.4f\n", to_string(spec).c_str(), median,
                ms.front(), ms.back());
    EXPECT_GT(ms.front(), median / 3) << to_string(spec);
    EXPECT_LT(ms[ms.size() * 9 / 10], median * 3) << to_string(spec);
  }
}

// A new context loads its kernels on their first launch, which a hold sized
// for queueing cannot cover: the hold grows for that sample. It must shrink
// again, or every context would leave each later sample waiting longer
// (before, six contexts left a 0.25 ms chain holding the stream for ~16 ms).
TEST(gemm_chain, the_hold_shrinks_back_after_a_new_context) {
  SKIP_WITHOUT_GPU();
  auto w = make_gemm_chain(parse_gemm_chain("gemm:fp16:gpt2-small"), 0);
  for (int i = 0; i < 100; ++i) (void)w->run();
  const auto settled = detail::gemm_chain_hold(*w);
  std::uint64_t longest = settled.hold_ns;
  for (int context = 0; context < 5; ++context) {
    w->release();
    ASSERT_TRUE(device::device::get(0).release().released);
    for (int i = 0; i < 100; ++i) {
      (void)w->run();
      longest = std::max(longest, detail::gemm_chain_hold(*w).hold_ns);
    }
  }
  const auto after = detail::gemm_chain_hold(*w);
  std::printf(
      "RECORD hold over 6 contexts: %.0f us settled, %.0f us at most, %.0f us at the end, "
      "%llu samples redone\n",
      static_cast<double>(settled.hold_ns) / 1e3, static_cast<double>(longest) / 1e3,
      static_cast<double>(after.hold_ns) / 1e3, static_cast<unsigned long long>(after.short_holds));
  EXPECT_LE(after.hold_ns, 2 * settled.hold_ns);
  w->release();
  EXPECT_TRUE(device::device::get(0).release().released);
}

// The figure is GPU time, whatever the host's launch rate: with the host made
// to sleep 300 us before each of 4 launches, an unheld stream would time at
// least 900 us; the held one must give the unslowed figure, having grown its
// hold by itself.
TEST(gemm_chain, a_slow_host_does_not_change_the_figure) {
  SKIP_WITHOUT_GPU();
  const gemm_chain_spec spec = single_gemm_chain(gemm_dtype::fp16, 128, 2304, 768, 4);
  const auto median_of = [](workload& w) {
    std::vector<double> ms;
    for (int i = 0; i < 41; ++i) ms.push_back(w.run().latency_ms);
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  auto w = make_gemm_chain(spec, 0);
  for (int i = 0; i < 10; ++i) (void)w->run();  // warm-up
  const double fast = median_of(*w);
  const auto before = detail::gemm_chain_hold(*w);
  detail::set_launch_gap(*w, std::chrono::microseconds(300));
  const double slow = median_of(*w);
  const auto after = detail::gemm_chain_hold(*w);
  std::printf(
      "RECORD hold: %s median %.4f ms with a fast host, %.4f ms with 300 us before each "
      "launch; hold %.0f -> %.0f us, %llu samples redone\n",
      to_string(spec).c_str(), fast, slow, static_cast<double>(before.hold_ns) / 1e3,
      static_cast<double>(after.hold_ns) / 1e3, static_cast<unsigned long long>(after.short_holds));
  EXPECT_LT(slow, 0.9);  // an unheld stream would show the host's 4 x 300 us
  EXPECT_NEAR(slow, fast, 0.1 * fast + 0.002);
  EXPECT_GT(after.hold_ns, before.hold_ns);
  EXPECT_GT(after.short_holds, before.short_holds);
  w->release();
  EXPECT_TRUE(device::device::get(0).release().released);
}

TEST(gemm_chain, release_lets_the_device_release_and_the_next_run_reacquires) {
  SKIP_WITHOUT_GPU();
  auto& gpu = device::device::get(0);
  const gemm_chain_spec spec = single_gemm_chain(gemm_dtype::fp16, 128, 2304, 768, 4);
  auto w = make_gemm_chain(spec, 0);
  (void)w->run();
  const auto first = read_gemm_matrix(*w, gemm_matrix::c);
  EXPECT_GE(gpu.status().resources[static_cast<std::size_t>(device::resource_kind::blas_handle)],
            5U);  // the handle, the matmul descriptor and three layouts
  w->release();
  EXPECT_EQ(gpu.status().resources[static_cast<std::size_t>(device::resource_kind::blas_handle)],
            0U);
  const auto report = gpu.release();
  EXPECT_TRUE(report.released) << report.note;
  EXPECT_TRUE(report.context_reset);
  EXPECT_FALSE(gpu.status().context_active);

  const timing again = w->run();  // prepares in a new context
  EXPECT_GT(again.latency_ms, 0.0);
  expect_same_result(read_gemm_matrix(*w, gemm_matrix::c), first);  // seeded inputs

  // A device release while the chain is still prepared (this thread's lease
  // does not block it): the next run rebuilds in the new context.
  const auto second = gpu.release();
  EXPECT_TRUE(second.released) << second.note;
  EXPECT_GE(second.destroyed[static_cast<std::size_t>(device::resource_kind::blas_handle)], 5U);
  EXPECT_GT(w->run().latency_ms, 0.0);
  expect_same_result(read_gemm_matrix(*w, gemm_matrix::c), first);
  w->release();
  EXPECT_TRUE(gpu.release().released);
}

// The sentinel's form of the chain: one CUDA graph per prepare, replayed back to back. It does
// the held run's work, so its figure is close to the held run's, and a release makes it
// capture again in the new context.
TEST(gemm_chain, graph_replays_time_the_same_chain_and_survive_a_release) {
  SKIP_WITHOUT_GPU();
  auto& gpu = device::device::get(0);
  auto w = make_workload("gemm:fp16:gpt2-small", 0);
  for (int i = 0; i < 20; ++i) (void)w->run();
  std::vector<double> held;
  for (int i = 0; i < 50; ++i) held.push_back(w->run().latency_ms);
  std::vector<double> replays = detail::replay_gemm_chain_graph(*w, 20);  // warm-up
  replays = detail::replay_gemm_chain_graph(*w, 50);
  ASSERT_EQ(replays.size(), 50U);
  std::sort(held.begin(), held.end());
  std::sort(replays.begin(), replays.end());
  const double h = held[25], r = replays[25];
  std::printf("gpt2-small: held run %.4f ms, graph replay %.4f ms\n", h, r);
  EXPECT_GT(replays.front(), 0.0);
  // The same kernels; a graph saves the per-launch work of the stream path, which is no small
  // part of this latency-bound chain: 17 % faster on an H200, 21 % on an H100 (docs/perf/ci.md).
  EXPECT_GT(r / h, 0.7);
  EXPECT_LT(r / h, 1.05);
  EXPECT_EQ(gpu.status().resources[static_cast<std::size_t>(device::resource_kind::graph)], 1U);
  const auto report = gpu.release();
  EXPECT_TRUE(report.released) << report.note;
  EXPECT_EQ(report.destroyed[static_cast<std::size_t>(device::resource_kind::graph)], 1U);
  const auto again = detail::replay_gemm_chain_graph(*w, 10);  // prepares and captures anew
  EXPECT_GT(again.back(), 0.0);
  w->release();
  EXPECT_EQ(gpu.status().resources[static_cast<std::size_t>(device::resource_kind::graph)], 0U);
  EXPECT_TRUE(gpu.release().released);
  EXPECT_THROW((void)detail::replay_gemm_chain_graph(*w, 0), invalid_argument);
}

TEST(gemm_chain, bf16_8192_cubed_reaches_a_sensible_rate) {
  SKIP_WITHOUT_GPU();
  auto w = make_gemm_chain(default_heater_chain(), 0);
  (void)w->run();  // warm-up
  double best_ms = 1e30;
  for (int i = 0; i < 5; ++i) best_ms = std::min(best_ms, w->run().latency_ms);
  const double tflops = *w->flops() / (best_ms / 1e3) / 1e12;
  std::printf("RECORD gemm bf16 8192^3 x4: best %.3f ms per chain, %.0f TFLOP/s\n", best_ms,
              tflops);
  EXPECT_GT(tflops, 300.0) << "an H200 does about 770";
  w->release();
  EXPECT_TRUE(device::device::get(0).release().released);
}

TEST(heater, heats_until_stopped_and_then_lets_the_device_go) {
  SKIP_WITHOUT_GPU();
  heater heat(0, single_gemm_chain(gemm_dtype::bf16, 2048, 2048, 2048, 4));
  heat.start();
  EXPECT_TRUE(heat.running());
  EXPECT_GE(heat.gemms(), 4U);  // start() returns after the first chain
  EXPECT_THROW(heat.start(), invalid_argument);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto before_stop = std::chrono::steady_clock::now();
  const std::uint64_t gemms = heat.stop();
  const double stop_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - before_stop)
          .count();
  std::printf("RECORD heater: %llu GEMMs of 2048^3 in 0.3 s, stop took %.1f ms\n",
              static_cast<unsigned long long>(gemms), stop_ms);
  EXPECT_FALSE(heat.running());
  EXPECT_GT(gemms, 4U);
  EXPECT_EQ(gemms % 4, 0U);
  EXPECT_LT(stop_ms, 500.0);
  EXPECT_EQ(heat.stop(), gemms);  // a second stop does nothing
  // The heater's lease and resources are gone: nothing refuses the release.
  const auto report = device::device::get(0).release();
  EXPECT_TRUE(report.released) << report.note;

  // Again, with the default chain, for a duration.
  heater big(0);
  const std::uint64_t ran = big.run_for(std::chrono::milliseconds(500));
  std::printf("RECORD heater: %llu GEMMs of bf16 8192^3 in 0.5 s\n",
              static_cast<unsigned long long>(ran));
  EXPECT_GE(ran, 4U);
  EXPECT_TRUE(device::device::get(0).release().released);
}

TEST(heater, a_device_that_does_not_exist_fails_start) {
  SKIP_WITHOUT_GPU();
  heater heat(device::device::count() + 3, single_gemm_chain(gemm_dtype::fp16, 8, 8, 8));
  EXPECT_THROW(heat.start(), error);
  EXPECT_FALSE(heat.running());
}

}  // namespace
}  // namespace coolbench::measure
