#include "base/kernel_stat_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace strata {
namespace {

TEST(KernelStatFile, ReadsBothLineShapes) {
  const std::string path = std::filesystem::temp_directory_path() / "strata-kernel-stat-test";
  std::ofstream(path) << "MemTotal:       24000000 kB\nMemAvailable:   20515264 kB\n"
                      << "inactive_file_extra 9\ninactive_file 316502016\nbroken: x\n";
  EXPECT_EQ(kernel_stat_field(path, "MemAvailable"), 20515264u);
  EXPECT_EQ(kernel_stat_field(path, "inactive_file"), 316502016u);  // not the longer key
  EXPECT_EQ(kernel_stat_field(path, "MemFree"), std::nullopt);
  EXPECT_EQ(kernel_stat_field(path, "broken"), std::nullopt);
  EXPECT_EQ(kernel_stat_field(path + "-missing", "MemTotal"), std::nullopt);
  std::filesystem::remove(path);
}

TEST(KernelStatFile, ReadsThisProcess) {
  EXPECT_GT(kernel_stat_field("/proc/self/status", "VmRSS").value_or(0), 0u);
}

}  // namespace
}  // namespace strata
