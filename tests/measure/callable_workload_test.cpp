// The callable workload on the host: it calls setup once per preparation,
// times the call with the host clock, and tears down at release; the
// protocol measures it like any workload. (On a GPU: tests/python's gpu tests.)
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "coolbench/core/error.hpp"
#include "coolbench/measure/protocol.hpp"
#include "coolbench/measure/workload.hpp"

namespace coolbench::measure {
namespace {

using namespace std::chrono_literals;

TEST(CallableWorkload, SetupRunTeardownInOrder) {
  int setups = 0;
  int runs = 0;
  int teardowns = 0;
  callable_spec spec;
  spec.name = "sleep 2 ms";
  spec.run = [&] {
    EXPECT_EQ(setups, teardowns + 1);  // prepared
    ++runs;
    std::this_thread::sleep_for(2ms);
  };
  spec.setup = [&] { ++setups; };
  spec.teardown = [&] { ++teardowns; };
  spec.flops = 1e6;
  auto w = make_callable_workload(spec);
  EXPECT_EQ(w->describe(), "sleep 2 ms");
  EXPECT_FALSE(w->device());
  ASSERT_TRUE(w->flops());
  EXPECT_EQ(*w->flops(), 1e6);
  const timing t = w->run();  // prepares first
  EXPECT_EQ(setups, 1);
  EXPECT_GE(t.latency_ms, 2.0);
  EXPECT_LT(t.latency_ms, 200.0);
  EXPECT_NEAR(t.latency_ms, static_cast<double>(t.end_ns - t.start_ns) / 1e6, 1e-9);
  w->prepare();  // idempotent
  (void)w->run();
  EXPECT_EQ(setups, 1);
  w->release();
  w->release();  // once
  EXPECT_EQ(teardowns, 1);
  (void)w->run();  // prepares again
  EXPECT_EQ(setups, 2);
  EXPECT_EQ(runs, 3);
  w->release();
  EXPECT_EQ(teardowns, 2);
}

TEST(CallableWorkload, NeedsAFunction) {
  callable_spec spec;
  spec.name = "nothing";
  EXPECT_THROW((void)make_callable_workload(spec), invalid_argument);
}

TEST(CallableWorkload, AFailingSetupLeavesItUnprepared) {
  int attempts = 0;
  callable_spec spec;
  spec.run = [] {};
  spec.setup = [&] {
    if (++attempts == 1) throw std::runtime_error("no model");
  };
  auto w = make_callable_workload(spec);
  EXPECT_THROW(w->prepare(), std::runtime_error);
  w->prepare();
  EXPECT_EQ(attempts, 2);
}

TEST(CallableWorkload, TheProtocolMeasuresItOnTheHost) {
  int teardowns = 0;
  callable_spec spec;
  spec.run = [] { std::this_thread::sleep_for(1ms); };
  spec.teardown = [&] { ++teardowns; };
  auto w = make_callable_workload(spec);
  auto env = make_cpu_environment();
  protocol_options o;
  o.min_time = 0ms;
  o.min_samples = 20;
  o.max_samples = 40;
  o.rel_ci = 0.5;  // the host's sleep is not what this checks
  const run_result r = measure(*w, *env, o);
  EXPECT_TRUE(r.complete) << r.error;
  EXPECT_GE(r.summary.count, 20);
  EXPECT_GE(r.summary.median_ms, 1.0);
  EXPECT_EQ(teardowns, 1);               // released at the end of the run
  EXPECT_TRUE(r.final_release.empty());  // nothing of a GPU to hand back
}

TEST(CallableWorkload, AnErrorInTheCallableEndsTheRunAndKeepsWhatWasMeasured) {
  int calls = 0;
  callable_spec spec;
  spec.run = [&] {
    if (++calls > 25) throw std::runtime_error("the callable failed: CUDA out of memory");
  };
  auto w = make_callable_workload(spec);
  auto env = make_cpu_environment();
  protocol_options o;
  o.min_time = 0ms;
  o.min_samples = 1000;
  const run_result r = measure(*w, *env, o);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(to_string(r.stop_reason), "error");
  EXPECT_NE(r.error.find("CUDA out of memory"), std::string::npos) << r.error;
  EXPECT_GT(r.samples.size(), 0U);
}

}  // namespace
}  // namespace coolbench::measure
