// run's --device for several GPUs (cli/device_list.hpp) and the per-GPU CSV names.
#include "cli/device_list.hpp"

#include <gtest/gtest.h>

#include "cli/commands/run_devices.hpp"
#include "coolbench/core/error.hpp"

namespace coolbench::cli {
namespace {

TEST(DeviceList, TheCheckTakesCpuAnOrdinalAllOrDistinctOrdinals) {
  for (const char* good : {"cpu", "0", "3", "all", "0,1", "2,0,3"}) {
    EXPECT_EQ(check_run_device(good), "") << good;
  }
  for (const char* bad : {"", "gpu", "-1", "0,0", "0,,1", "1,", "all,1", "0x1", "1.5"}) {
    EXPECT_NE(check_run_device(bad), "") << bad;
  }
  EXPECT_TRUE(names_several_gpus("all"));
  EXPECT_TRUE(names_several_gpus("0,1"));
  EXPECT_FALSE(names_several_gpus("1"));
  EXPECT_FALSE(names_several_gpus("cpu"));
}

TEST(DeviceList, AllIsEveryGpuAndAListKeepsItsOrder) {
  EXPECT_EQ(resolve_gpus("all", 1), std::vector<int>({0}));
  EXPECT_EQ(resolve_gpus("all", 3), std::vector<int>({0, 1, 2}));
  EXPECT_EQ(resolve_gpus("2,0", 3), std::vector<int>({2, 0}));
  EXPECT_THROW((void)resolve_gpus("0,3", 3), invalid_argument);  // no GPU 3: exit 4
  EXPECT_THROW((void)resolve_gpus("all", 0), not_available);     // no driver: exit 3
}

TEST(DeviceList, EachGpuWritesItsOwnCsv) {
  EXPECT_EQ(per_gpu_path("run.csv", 0), "run.gpu0.csv");
  EXPECT_EQ(per_gpu_path("out/run.csv", 12), "out/run.gpu12.csv");
  EXPECT_EQ(per_gpu_path("samples", 1), "samples.gpu1");
}

}  // namespace
}  // namespace coolbench::cli
