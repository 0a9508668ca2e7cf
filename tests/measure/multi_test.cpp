// The protocol on a simulated host of 2 and 3 GPUs (sim_gpu.hpp), a worker thread each:
// results per GPU, the spread across GPUs of one model, a failing GPU (its workload throws, its
// release is refused, its job cannot be made) leaving the others' records, each worker
// releasing only its own GPU, and one GPU behaving as a single run.
#include "coolbench/measure/multi.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "coolbench/device/device.hpp"
#include "measure/protocol_helpers.hpp"
#include "measure/sim_gpu.hpp"

namespace coolbench::measure {
namespace {

using namespace std::chrono_literals;

protocol_options quick_options() {
  protocol_options o = protocol_helpers::quick_options();
  o.contexts = 1;
  return o;
}

/// A simulated environment whose device releases are refused from the n-th on, as the device
/// layer refuses one while another runtime's memory is live on the GPU.
class refusing_environment final : public environment {
 public:
  refusing_environment(sim::gpu& g, int refuse_from) : m_inner(g), m_refuse_from(refuse_from) {}
  std::int64_t now_ns() override { return m_inner.now_ns(); }
  void sleep_for(std::chrono::nanoseconds d) override { m_inner.sleep_for(d); }
  run_conditions conditions() override { return m_inner.conditions(); }
  std::optional<telemetry::gpu_sample> latest() override { return m_inner.latest(); }
  std::vector<telemetry::gpu_sample> between(std::int64_t from, std::int64_t to) override {
    return m_inner.between(from, to);
  }
  std::chrono::nanoseconds telemetry_period() const override { return m_inner.telemetry_period(); }
  bool interrupted() override { return m_inner.interrupted(); }
  std::string release_device() override {
    if (m_releases++ >= m_refuse_from) {
      throw device::release_refused(
          "cannot release the GPU: 64 MiB of device memory of another runtime is live in this "
          "process");
    }
    return m_inner.release_device();
  }

 private:
  sim::environment m_inner;
  int m_refuse_from;
  int m_releases = 0;
};

/// A host of simulated GPUs, one per ordinal, each with its own model and failure script.
struct sim_host {
  struct gpu_script {
    sim::gpu_model model;
    int fail_run_after = -1;       ///< the workload throws after this many runs; -1 never
    int refuse_release_from = -1;  ///< releases refused from this one on; -1 never
    bool cannot_make = false;      ///< the job cannot be made (the GPU is gone)
  };
  std::map<int, gpu_script> scripts;
  std::map<int, std::unique_ptr<sim::gpu>> gpus;
  std::mutex mutex;
  std::set<std::thread::id> threads;

  device_job make(int ordinal) {
    gpu_script script;
    sim::gpu* g = nullptr;
    {
      std::lock_guard lock(mutex);
      threads.insert(std::this_thread::get_id());
      script = scripts.at(ordinal);
      if (script.cannot_make) {
        throw not_available("GPU " + std::to_string(ordinal) + " fell off the bus");
      }
      g = (gpus[ordinal] = std::make_unique<sim::gpu>(script.model)).get();
    }
    auto w = std::make_unique<sim::workload>(*g);
    w->fail_run_after = script.fail_run_after;
    std::unique_ptr<environment> env;
    if (script.refuse_release_from >= 0) {
      env = std::make_unique<refusing_environment>(*g, script.refuse_release_from);
    } else {
      env = std::make_unique<sim::environment>(*g);
    }
    return {std::move(w), std::move(env)};
  }
  device_job_factory factory() {
    return [this](int ordinal) { return make(ordinal); };
  }
};

sim::gpu_model with_base(double base_ms) {
  sim::gpu_model m;
  m.base_ms = base_ms;
  return m;
}

TEST(MultiGpu, TwoGpusGiveAFigureEachAndTheirSpread) {
  sim_host host;
  host.scripts[0].model = with_base(0.40);
  host.scripts[1].model = with_base(0.42);
  const multi_result all = measure_devices({0, 1}, host.factory(), quick_options());
  ASSERT_EQ(all.runs.size(), 2U);
  EXPECT_EQ(all.failures(), 0);
  for (const auto& d : all.runs) {
    ASSERT_TRUE(d.result) << d.error;
    EXPECT_TRUE(d.result->complete) << d.result->error;
    EXPECT_FALSE(d.failed()) << d.failure();
  }
  EXPECT_EQ(all.runs[0].ordinal, 0);
  EXPECT_NEAR(*figure_of(*all.runs[0].result), 0.40, 1e-9);
  EXPECT_NEAR(*figure_of(*all.runs[1].result), 0.42, 1e-9);
  ASSERT_EQ(all.spread.size(), 1U);
  const model_spread& s = all.spread[0];
  EXPECT_EQ(s.model, "Simulated H200");
  EXPECT_NEAR(s.min_ms, 0.40, 1e-9);
  EXPECT_NEAR(s.max_ms, 0.42, 1e-9);
  EXPECT_NEAR(s.mean_ms, 0.41, 1e-9);
  EXPECT_NEAR(s.max_over_min, 0.05, 1e-9);
  EXPECT_EQ(s.fastest, 0);
  EXPECT_EQ(s.slowest, 1);
  ASSERT_EQ(s.gpus.size(), 2U);
  EXPECT_NEAR(s.gpus[0].vs_mean, 0.40 / 0.41 - 1, 1e-9);
  EXPECT_NEAR(s.gpus[1].vs_mean, 0.42 / 0.41 - 1, 1e-9);
  // Each worker released its own GPU, and only it: each simulated GPU counts the releases of
  // its own run, no more.
  for (const auto& d : all.runs) {
    EXPECT_GE(d.result->releases, 2);
    EXPECT_EQ(host.gpus.at(d.ordinal)->device_releases, d.result->releases);
  }
}

// The workers run at the same time: each job waits until every GPU's job is being made, which
// a one-after-another run would never reach.
TEST(MultiGpu, ThreeGpusAreMeasuredAtTheSameTimeInAThreadEach) {
  sim_host host;
  for (int i = 0; i < 3; ++i) host.scripts[i].model = with_base(0.4 + 0.01 * i);
  std::mutex mutex;
  std::condition_variable all_arrived;
  int arrived = 0;
  bool met = true;
  const device_job_factory factory = [&](int ordinal) {
    {
      std::unique_lock lock(mutex);
      ++arrived;
      all_arrived.notify_all();
      if (!all_arrived.wait_for(lock, 10s, [&] { return arrived == 3; })) met = false;
    }
    return host.make(ordinal);
  };
  const multi_result all = measure_devices({2, 0, 1}, factory, quick_options());
  EXPECT_TRUE(met) << "the GPUs' jobs were not made at the same time";
  EXPECT_EQ(host.threads.size(), 3U);
  ASSERT_EQ(all.runs.size(), 3U);
  EXPECT_EQ(all.runs[0].ordinal, 2);  // in the order given
  ASSERT_EQ(all.spread.size(), 1U);
  EXPECT_EQ(all.spread[0].gpus.size(), 3U);
  EXPECT_EQ(all.spread[0].gpus[0].ordinal, 0);  // the spread in ordinal order
  EXPECT_EQ(all.spread[0].fastest, 0);
  EXPECT_EQ(all.spread[0].slowest, 2);
  EXPECT_NEAR(all.spread[0].max_over_min, 0.42 / 0.40 - 1, 1e-9);
}

TEST(MultiGpu, AGpuWhoseWorkloadThrowsLeavesTheOthersRecords) {
  sim_host host;
  for (int i = 0; i < 3; ++i) host.scripts[i].model = with_base(0.4);
  host.scripts[1].fail_run_after = 5;
  const multi_result all = measure_devices({0, 1, 2}, host.factory(), quick_options());
  EXPECT_EQ(all.failures(), 1);
  const device_run& bad = all.runs[1];
  ASSERT_TRUE(bad.result);  // what it measured is kept
  EXPECT_FALSE(bad.result->complete);
  EXPECT_TRUE(bad.failed());
  EXPECT_NE(bad.failure().find("fell off the bus"), std::string::npos) << bad.failure();
  // Its GPU was still handed back at the end.
  EXPECT_EQ(bad.result->final_release, "release: simulated");
  for (int i : {0, 2}) {
    ASSERT_TRUE(all.runs[i].result);
    EXPECT_TRUE(all.runs[i].result->complete);
    EXPECT_GT(all.runs[i].result->summary.count, 30);
  }
  ASSERT_EQ(all.spread.size(), 1U);  // over the two that measured
  ASSERT_EQ(all.spread[0].gpus.size(), 2U);
  EXPECT_EQ(all.spread[0].gpus[0].ordinal, 0);
  EXPECT_EQ(all.spread[0].gpus[1].ordinal, 2);
}

TEST(MultiGpu, ARefusedReleaseFailsItsGpuOnly) {
  sim_host host;
  for (int i = 0; i < 3; ++i) host.scripts[i].model = with_base(0.4);
  // How many releases a run of this GPU does: the last of them is the one at the end.
  sim::gpu probe(with_base(0.4));
  sim::workload probe_w(probe);
  sim::environment probe_env(probe);
  const int releases = measure(probe_w, probe_env, quick_options()).releases;
  ASSERT_GE(releases, 2);
  host.scripts[0].refuse_release_from = 0;             // refused at the first gate
  host.scripts[2].refuse_release_from = releases - 1;  // only the one at the end is refused
  const multi_result all = measure_devices({0, 1, 2}, host.factory(), quick_options());
  EXPECT_EQ(all.failures(), 2);
  EXPECT_NE(all.runs[0].failure().find("another runtime"), std::string::npos)
      << all.runs[0].failure();
  EXPECT_FALSE(all.runs[1].failed()) << all.runs[1].failure();
  EXPECT_TRUE(all.runs[1].result->complete);
  ASSERT_TRUE(all.runs[2].result);
  EXPECT_TRUE(all.runs[2].result->complete);  // measured; its GPU was not handed back
  EXPECT_TRUE(all.runs[2].result->final_release.starts_with("release failed"));
  EXPECT_TRUE(all.runs[2].failed());
  EXPECT_TRUE(all.spread.empty());  // one GPU left: no spread
  // The refusals changed nothing on the other GPUs.
  EXPECT_EQ(host.gpus.at(1)->device_releases, all.runs[1].result->releases);
}

TEST(MultiGpu, AJobThatCannotBeMadeFailsItsGpuOnly) {
  sim_host host;
  host.scripts[0].model = with_base(0.4);
  host.scripts[1].cannot_make = true;
  host.scripts[2].model = with_base(0.44);
  const multi_result all = measure_devices({0, 1, 2}, host.factory(), quick_options());
  EXPECT_EQ(all.failures(), 1);
  EXPECT_FALSE(all.runs[1].result);
  EXPECT_EQ(all.runs[1].failure(), "GPU 1 fell off the bus");
  ASSERT_EQ(all.spread.size(), 1U);
  EXPECT_NEAR(all.spread[0].max_over_min, 0.1, 1e-9);
}

// One GPU (`--device all` on a host with one): the same records as a plain run.
TEST(MultiGpu, OneGpuGivesTheSameRunAsASingleRun) {
  sim_host host;
  host.scripts[0].model = with_base(0.4);
  const multi_result all = measure_devices({0}, host.factory(), quick_options());
  sim::gpu g(with_base(0.4));
  sim::workload w(g);
  sim::environment env(g);
  const run_result single = measure(w, env, quick_options());
  ASSERT_EQ(all.runs.size(), 1U);
  ASSERT_TRUE(all.runs[0].result);
  const run_result& r = *all.runs[0].result;
  EXPECT_EQ(r.samples.size(), single.samples.size());
  EXPECT_EQ(r.summary.median_ms, single.summary.median_ms);
  EXPECT_EQ(r.releases, single.releases);
  EXPECT_TRUE(all.spread.empty());
}

TEST(MultiGpu, AnEmptyOrRepeatedListIsRefusedBeforeAnythingRuns) {
  sim_host host;
  EXPECT_THROW((void)measure_devices({}, host.factory(), quick_options()), invalid_argument);
  EXPECT_THROW((void)measure_devices({0, 1, 0}, host.factory(), quick_options()), invalid_argument);
  EXPECT_THROW((void)measure_devices({-1}, host.factory(), quick_options()), invalid_argument);
  EXPECT_TRUE(host.threads.empty());
}

device_run made_run(int ordinal, const std::string& model, double median_ms) {
  device_run d;
  d.ordinal = ordinal;
  d.result.emplace();
  d.result->conditions.gpu.emplace();
  d.result->conditions.gpu->name = model;
  d.result->summary.count = 100;
  d.result->summary.median_ms = median_ms;
  d.result->final_release = "release: freed 8 MiB, context reset, 80 ms";
  return d;
}

TEST(MultiGpu, TheSpreadIsPerModelAndUsesTheContextsFigure) {
  std::vector<device_run> runs = {
      made_run(0, "NVIDIA H200", 1.00), made_run(1, "NVIDIA H100", 1.30),
      made_run(2, "NVIDIA H200", 1.08), made_run(3, "NVIDIA H100", 1.30)};
  runs[2].result->contexts.emplace();
  runs[2].result->contexts->mean_ms = 1.10;  // the run's figure, not the pooled median
  const auto spread = spread_of(runs);
  ASSERT_EQ(spread.size(), 2U);
  EXPECT_EQ(spread[0].model, "NVIDIA H200");
  EXPECT_NEAR(spread[0].max_over_min, 0.10, 1e-12);
  EXPECT_NEAR(spread[0].mean_ms, 1.05, 1e-12);
  EXPECT_EQ(spread[1].model, "NVIDIA H100");
  EXPECT_NEAR(spread[1].max_over_min, 0.0, 1e-12);
  runs[3].result->complete = false;  // cut short: left out, and H100 has one GPU left
  runs[3].result->stop_reason = stop_reason::error;
  EXPECT_EQ(spread_of(runs).size(), 1U);
}

}  // namespace
}  // namespace coolbench::measure
