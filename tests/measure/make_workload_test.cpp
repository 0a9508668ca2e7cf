// Workloads by name, and what the GPU ones do on a machine without a GPU.
#include <gtest/gtest.h>

#include <string>

#include "coolbench/device.hpp"
#include "coolbench/measure.hpp"

namespace coolbench::measure {
namespace {

std::string error_of(std::string_view name) {
  try {
    (void)make_workload(name, 0);
  } catch (const error& e) {
    return e.what();
  }
  ADD_FAILURE() << "'" << name << "' was accepted";
  return {};
}

bool have_gpu() {
  try {
    return device::device::count() > 0;
  } catch (const error&) {
    return false;
  }
}

TEST(make_workload, refuses_what_is_neither_a_gemm_chain_nor_a_model) {
  for (const char* name : {"", "add", "model.pt", "gemmfp16"}) {
    EXPECT_THROW((void)make_workload(name, 0), invalid_argument) << name;
    const std::string message = error_of(name);
    EXPECT_NE(message.find("unknown workload"), std::string::npos) << message;
    EXPECT_NE(message.find(".onnx"), std::string::npos) << message;
  }
}

TEST(make_workload, a_bad_gemm_chain_says_what_is_wrong) {
  EXPECT_THROW((void)make_workload("gemm:fp8:1:1:1", 0), invalid_argument);
  EXPECT_NE(error_of("gemm:fp8:1:1:1").find("DTYPE 'fp8'"), std::string::npos);
  EXPECT_THROW((void)make_workload("gemm", 0), invalid_argument);
}

TEST(make_workload, a_missing_model_file_is_named) {
  const std::string message = error_of("/nonexistent/model.onnx");
  EXPECT_NE(message.find("/nonexistent/model.onnx"), std::string::npos) << message;
#ifdef COOLBENCH_HAVE_ENGINE
  EXPECT_THROW((void)make_workload("/nonexistent/model.onnx", 0), invalid_argument);
#else
  EXPECT_THROW((void)make_workload("/nonexistent/model.onnx", 0), not_available);
  EXPECT_NE(message.find("COOLBENCH_ENGINE"), std::string::npos) << message;
#endif
}

TEST(make_workload, a_gemm_chain_describes_itself_before_touching_the_gpu) {
#ifdef COOLBENCH_HAVE_CUDA
  const auto w = make_workload("gemm:fp16:128:2304:768:4", 3);
  EXPECT_EQ(w->describe(), "gemm fp16 128x2304x768 x4 (cuBLASLt)");
  EXPECT_EQ(w->device(), 3);
  ASSERT_TRUE(w->flops().has_value());
  EXPECT_DOUBLE_EQ(*w->flops(), 2.0 * 128 * 2304 * 768 * 4);
  if (!have_gpu()) {
    EXPECT_THROW(w->prepare(), error);
    EXPECT_THROW((void)w->run(), error);
    w->release();  // nothing to drop: no throw
  }
#else
  EXPECT_THROW((void)make_workload("gemm:fp16:128:2304:768:4", 0), not_available);
#endif
}

TEST(heater, without_a_gpu_start_throws_and_nothing_runs) {
  if (have_gpu()) GTEST_SKIP() << "a GPU is here: tests/measure/heater_test covers it";
  heater heat(0, single_gemm_chain(gemm_dtype::bf16, 64, 64, 64));
  EXPECT_THROW(heat.start(), error);
  EXPECT_FALSE(heat.running());
  EXPECT_EQ(heat.stop(), 0U);
  EXPECT_THROW((void)heat.run_for(std::chrono::milliseconds(10)), error);
}

TEST(heater, checks_its_chain) {
  EXPECT_THROW(heater(0, gemm_chain_spec{}), invalid_argument);
  const heater heat(0);
  EXPECT_EQ(to_string(heat.chain()), "gemm:bf16:8192:8192:8192:4");
  EXPECT_DOUBLE_EQ(heat.flops_per_gemm(), 2.0 * 8192.0 * 8192.0 * 8192.0);
  EXPECT_FALSE(heat.running());
}

}  // namespace
}  // namespace coolbench::measure
