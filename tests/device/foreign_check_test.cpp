// The foreign-state arithmetic and its messages (src/device/detail/foreign_check.cpp), and the
// bare-context cache (cached, stale, missing, unmeasurable), without a GPU.
#include "device/detail/foreign_check.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "coolbench/core/error.hpp"
#include "device/detail/context_baseline.hpp"
#include "device/fake_gpu_api.hpp"

namespace coolbench::device::detail {
namespace {

constexpr std::uint64_t mib = std::uint64_t{1} << 20U;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bare_context_figures h200_figures() {
  return {518 * mib,
          518 * mib,
          518 * mib,
          518 * mib,
          2 * mib,
          "2026-12-04T10:00:00Z",
          "/opt/coolbench/bin/coolbench-context-probe"};
}

/// A context CuPy made, as the C API sees it from a ctypes caller.
foreign_inputs cupy_context(std::uint64_t process_bytes) {
  foreign_inputs in;
  in.ordinal = 0;
  in.process_bytes = process_bytes;
  in.bare.figures = h200_figures();
  in.bare.source = "measured by the probe at 2026-12-04T10:00:00Z, cached in /home/u/.cache/x.json";
  in.granularity = 2 * mib;
  in.cuda_libraries = {"CuPy"};
  return in;
}

TEST(foreign_check,
     one_granule_of_another_runtimes_memory_is_refused_and_the_message_says_what_was_seen) {
  // CuPy's 72-byte array: one 2 MiB page of the driver's small-allocation pool.
  const auto v = check_foreign(cupy_context(520 * mib));
  EXPECT_TRUE(v.refuse);
  EXPECT_EQ(v.state, foreign_state::memory_live);
  ASSERT_TRUE(v.foreign_bytes.has_value());
  EXPECT_EQ(*v.foreign_bytes, static_cast<std::int64_t>(2 * mib));
  EXPECT_EQ(v.threshold, 1 * mib);
  for (const char* part :
       {"cannot release GPU 0: 2 MiB", "foreign memory live", "NVML: process 520 MiB",
        "baseline 518 MiB", "LAZY module loading", "cached in /home/u/.cache/x.json",
        "coolbench 0 MiB", "refused from 1 MiB (half of NVML's step 2 MiB, measured)",
        "context made by another runtime (loaded in this process: CuPy)", "force",
        "Nothing was changed"}) {
    EXPECT_TRUE(has(v.message, part)) << part << "\n" << v.message;
  }
  EXPECT_TRUE(has(v.dangling, "2 MiB of another runtime's device memory")) << v.dangling;
}

TEST(foreign_check, force_goes_through_and_says_what_dangles) {
  auto in = cupy_context(522 * mib);
  in.force = true;
  const auto v = check_foreign(in);
  EXPECT_FALSE(v.refuse);
  EXPECT_EQ(v.state, foreign_state::memory_live);
  EXPECT_TRUE(has(v.dangling, "4 MiB")) << v.dangling;
  EXPECT_TRUE(has(v.dangling, "CuPy")) << v.dangling;
}

TEST(foreign_check, another_runtimes_bare_context_is_context_state_without_memory) {
  const auto v = check_foreign(cupy_context(518 * mib));
  EXPECT_FALSE(v.refuse);
  EXPECT_EQ(v.state, foreign_state::context_state);
  EXPECT_EQ(*v.foreign_bytes, 0);
  EXPECT_TRUE(has(v.dangling, "no memory of another runtime")) << v.dangling;
  EXPECT_TRUE(has(v.dangling, "must be created again")) << v.dangling;
  EXPECT_STREQ(to_string(v.state), "foreign context state without memory");
}

TEST(foreign_check, coolbenchs_own_context_and_bytes_are_not_foreign) {
  foreign_inputs in;
  in.process_bytes = 530 * mib;
  in.context_by_coolbench = true;
  in.own_context_bytes = 518 * mib;
  in.coolbench_bytes = 12 * mib;  // its blocks and its kernels' code
  const auto v = check_foreign(in);
  EXPECT_FALSE(v.refuse);
  EXPECT_EQ(v.state, foreign_state::none);
  EXPECT_EQ(v.context_made_by, "coolbench");
  EXPECT_TRUE(has(v.baseline_source, "right after it created this context")) << v.baseline_source;
  EXPECT_TRUE(v.dangling.empty());
  // Another runtime's page in coolbench's context is refused all the same.
  in.process_bytes = 532 * mib;
  const auto w = check_foreign(in);
  EXPECT_TRUE(w.refuse);
  EXPECT_TRUE(has(w.message, "context made by coolbench")) << w.message;
}

TEST(foreign_check, the_threshold_is_half_the_measured_step) {
  auto in = cupy_context(519 * mib);  // half a 2 MiB step: refused
  EXPECT_TRUE(check_foreign(in).refuse);
  in.granularity = 4 * mib;  // a GPU whose figure moves in 4 MiB steps
  in.process_bytes = 519 * mib;
  EXPECT_FALSE(check_foreign(in).refuse);
  in.process_bytes = 520 * mib;
  EXPECT_TRUE(check_foreign(in).refuse);
  in.granularity.reset();  // not measured: 2 MiB, said so
  const auto v = check_foreign(in);
  EXPECT_EQ(v.granularity, 2 * mib);
  EXPECT_TRUE(has(v.check, "taken as 2 MiB (not measured here)")) << v.check;
  in.granularity = 0;  // a probe that saw no step: not used
  EXPECT_EQ(check_foreign(in).granularity, 2 * mib);
}

TEST(foreign_check, eager_loading_uses_the_eager_figures_and_the_smaller_of_runtime_and_driver) {
  auto in = cupy_context(540 * mib);
  in.bare.figures->runtime_eager = 540 * mib;
  in.bare.figures->driver_eager = 538 * mib;
  in.module_loading = "EAGER";
  const auto v = check_foreign(in);
  EXPECT_EQ(*v.baseline_bytes, 538 * mib);
  EXPECT_EQ(*v.foreign_bytes, static_cast<std::int64_t>(2 * mib));
  EXPECT_TRUE(v.refuse);
}

TEST(foreign_check, without_nvmls_figure_it_refuses_unless_forced_and_says_why) {
  foreign_inputs in;
  in.nvml_unavailable = "NVML does not list this process (pid 42) although it holds a context";
  auto v = check_foreign(in);
  EXPECT_TRUE(v.refuse);
  EXPECT_EQ(v.state, foreign_state::unknown);
  EXPECT_FALSE(v.foreign_bytes.has_value());
  EXPECT_TRUE(has(v.message,
                  "NVML gives no figure for this process's device memory (NVML does "
                  "not list this process (pid 42)"))
      << v.message;
  EXPECT_TRUE(has(v.message, "force")) << v.message;
  EXPECT_TRUE(has(v.check, "not checked")) << v.check;
  in.force = true;
  v = check_foreign(in);
  EXPECT_FALSE(v.refuse);
  EXPECT_TRUE(has(v.dangling, "unknown")) << v.dangling;
}

TEST(foreign_check, without_a_bare_context_figure_another_runtimes_context_is_refused) {
  auto in = cupy_context(518 * mib);
  in.bare.figures.reset();
  in.bare.source = "the bare context could not be measured: coolbench-context-probe was not found";
  const auto v = check_foreign(in);
  EXPECT_TRUE(v.refuse);
  EXPECT_EQ(v.state, foreign_state::unknown);
  EXPECT_TRUE(has(v.message, "bare context's figure is unknown")) << v.message;
  EXPECT_TRUE(has(v.message, "coolbench-context-probe was not found")) << v.message;
  EXPECT_TRUE(has(v.message, "NVML's 518 MiB cannot be split")) << v.message;
}

TEST(foreign_check, a_figure_below_the_baseline_is_noted) {
  const auto v = check_foreign(cupy_context(510 * mib));
  EXPECT_FALSE(v.refuse);
  EXPECT_EQ(*v.foreign_bytes, -static_cast<std::int64_t>(8 * mib));
  EXPECT_TRUE(has(v.check, "below the baseline")) << v.check;
}

// --- the cache ------------------------------------------------------------

class baseline_cache_test : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = device::testing::use_temporary_cache_dir();
    m_file = default_baseline_file();
  }
  std::filesystem::path m_dir, m_file;
  int m_measured = 0;
  std::string m_fail;
  baseline_cache cache() {
    return baseline_cache(m_file, [this](const baseline_key&) {
      ++m_measured;
      if (!m_fail.empty()) throw error(m_fail);
      return h200_figures();
    });
  }
};

const baseline_key h200{"GPU-32b4d6d2", "580.159.04", 13000, 13000};

TEST_F(baseline_cache_test, the_file_is_under_xdg_cache_home) {
  EXPECT_EQ(m_file, m_dir / "coolbench" / "context-baseline.json");
}

TEST_F(baseline_cache_test, missing_is_measured_once_then_cached) {
  auto c = cache();
  const auto first = c.get(h200);
  ASSERT_TRUE(first.figures.has_value()) << first.source;
  EXPECT_TRUE(first.measured_now);
  EXPECT_TRUE(has(first.source, "measured now by /opt/coolbench/bin/coolbench-context-probe"))
      << first.source;
  EXPECT_TRUE(std::filesystem::exists(m_file));
  auto again = cache();  // another process, say
  const auto second = again.get(h200);
  EXPECT_EQ(m_measured, 1);
  EXPECT_FALSE(second.measured_now);
  EXPECT_EQ(second.figures->runtime_lazy, 518 * mib);
  EXPECT_EQ(second.figures->granularity, 2 * mib);
  EXPECT_TRUE(has(second.source, "cached in " + m_file.string())) << second.source;
  EXPECT_TRUE(has(second.source, "2026-12-04T10:00:00Z")) << second.source;
}

TEST_F(baseline_cache_test, a_new_driver_or_cuda_version_is_measured_again) {
  (void)cache().get(h200);
  for (const baseline_key& changed : {baseline_key{"GPU-32b4d6d2", "590.10", 13000, 13000},
                                      baseline_key{"GPU-32b4d6d2", "580.159.04", 13010, 13000},
                                      baseline_key{"GPU-32b4d6d2", "580.159.04", 13000, 12080}}) {
    const int before = m_measured;
    const auto r = cache().get(changed);
    EXPECT_EQ(m_measured, before + 1);
    EXPECT_TRUE(has(r.source, "another driver or CUDA version")) << r.source;
    EXPECT_FALSE(cache().cached(h200).has_value());  // the stale entry was replaced
  }
}

TEST_F(baseline_cache_test, other_gpus_entries_are_kept) {
  (void)cache().get(h200);
  (void)cache().get({"GPU-other", "580.159.04", 13000, 13000});
  EXPECT_TRUE(cache().cached(h200).has_value());
  EXPECT_EQ(m_measured, 2);
}

TEST_F(baseline_cache_test, an_unreadable_file_is_measured_again) {
  std::filesystem::create_directories(m_file.parent_path());
  std::ofstream(m_file) << "{not json";
  const auto r = cache().get(h200);
  EXPECT_TRUE(r.figures.has_value());
  EXPECT_EQ(m_measured, 1);
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(m_file))["entries"].size(), 1U);
}

TEST_F(baseline_cache_test, a_probe_that_cannot_run_gives_no_figures_and_is_not_retried) {
  m_fail = "coolbench-context-probe was not found (looked at /x)";
  auto c = cache();
  const auto r = c.get(h200);
  EXPECT_FALSE(r.figures.has_value());
  EXPECT_TRUE(has(r.source, "the bare context could not be measured: coolbench-context-probe"))
      << r.source;
  const auto again = c.get(h200);
  EXPECT_EQ(m_measured, 1);
  EXPECT_TRUE(has(again.source, "not tried again in this process")) << again.source;
  EXPECT_FALSE(std::filesystem::exists(m_file));
}

}  // namespace
}  // namespace coolbench::device::detail
