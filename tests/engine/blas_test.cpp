// OpenBLAS as the CPU backend loads it: present, answering, and not left on a
// pre-AVX2 kernel set on a CPU that has AVX2 (the fallback Debian 12's
// OpenBLAS takes on CPU models it does not know).
#include "engine/backends/cpu/blas.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace coolbench::engine::cpu {
namespace {

// Read before anything loads OpenBLAS: coolbench sets the variable itself when
// it corrects the detection.
const bool g_user_set_coretype = std::getenv("OPENBLAS_CORETYPE") != nullptr;

TEST(Blas, LoadsAndMultiplies) {
  const blas_library& b = blas();
  EXPECT_FALSE(b.path.empty());
  EXPECT_FALSE(b.core.empty());
  EXPECT_GE(b.threads, 1);
  // [2x3] * [3x2], then the same with B transposed.
  const std::vector<float> a = {1, 2, 3, 4, 5, 6};
  const std::vector<float> bm = {7, 8, 9, 10, 11, 12};
  std::vector<float> c(4, -1.0F);
  blas_sgemm(false, false, 2, 2, 3, 1.0F, a.data(), 3, bm.data(), 2, 0.0F, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{58, 64, 139, 154}));
  const std::vector<float> bt = {7, 9, 11, 8, 10, 12};
  blas_sgemm(false, true, 2, 2, 3, 1.0F, a.data(), 3, bt.data(), 3, 0.0F, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{58, 64, 139, 154}));
}

TEST(Blas, UsesTheCpusVectorUnits) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    GTEST_SKIP() << "this CPU has no AVX2 and FMA";
  }
  const blas_library& b = blas();
  if (!b.corrected.empty()) {
    std::cout << "OpenBLAS chose " << b.corrected << "; coolbench loaded it as " << b.core << "\n";
  }
  if (g_user_set_coretype) {
    GTEST_SKIP() << "OPENBLAS_CORETYPE is set: OpenBLAS runs the core the user asked for";
  }
  for (const char* old :
       {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Sandybridge"}) {
    EXPECT_NE(b.core, old);
  }
}

}  // namespace
}  // namespace coolbench::engine::cpu
