// The hidden-state sentinels on a real GPU (label gpu; skipped without one): a check's figure,
// the context it names, and that it leaves no lease behind, so a release right after it goes
// through and the next check names the new context. Run on the GPU machine:
//   ctest --test-dir build -L gpu -R sentinel_gpu -V
#include <gtest/gtest.h>

#include <cmath>

#include "coolbench/device.hpp"
#include "coolbench/measure.hpp"
#include "measure/detail/sentinel.hpp"
#include "measure/gpu_skip.hpp"

namespace coolbench::measure {
namespace {

void checks_name_their_context_and_let_a_release_through(sentinel_kind kind) {
  auto& gpu = device::device::get(0);
  detail::sentinel s(0, kind);
  const auto first = s.check();
  const auto second = s.check();
  EXPECT_GT(first.median_ms, 0);
  EXPECT_EQ(first.context, second.context) << "no release between them";
  EXPECT_EQ(first.context, gpu.status().generation);
  // Two checks in one context agree within the sentinel's 2 % floor (a clock still rising
  // would show here first).
  EXPECT_LT(std::abs(second.median_ms / first.median_ms - 1), 0.02)
      << first.median_ms << " then " << second.median_ms << " ms";
  EXPECT_EQ(gpu.status().leases, 0U) << "a check keeps no lease";
  const auto report = gpu.release();
  EXPECT_TRUE(report.released) << report.note;
  const auto after = s.check();
  EXPECT_NE(after.context, first.context) << "the release made a new context";
  EXPECT_GT(after.median_ms, 0);
  (void)gpu.release();
}

TEST(sentinel_gpu, the_gemm_chain_names_its_context_and_keeps_no_lease) {
  SKIP_WITHOUT_GPU();
  checks_name_their_context_and_let_a_release_through(sentinel_kind::gemm_chain);
}

TEST(sentinel_gpu, the_l1_walk_names_its_context_and_keeps_no_lease) {
  SKIP_WITHOUT_GPU();
  checks_name_their_context_and_let_a_release_through(sentinel_kind::l1_walk);
}

TEST(sentinel_gpu, none_is_not_a_sentinel) {
  EXPECT_THROW(detail::sentinel(0, sentinel_kind::none), invalid_argument);
}

}  // namespace
}  // namespace coolbench::measure
