#include "runtime/cgroup_memory.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace strata {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t MiB = 1 << 20;
const std::string kV1Unlimited = "9223372036854771712";

// A fake cgroup file system under a scratch directory, named by the mountinfo it writes.
class FakeCgroups {
 public:
  explicit FakeCgroups(const std::string& name)
      : root_(fs::temp_directory_path() / ("strata-cgroup-test-" + name)) {
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~FakeCgroups() { fs::remove_all(root_); }

  std::string point(const std::string& mount) const { return (root_ / mount).string(); }

  void write(const std::string& path, const std::string& text) const {
    const fs::path file = root_ / path;
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }

 private:
  fs::path root_;
};

std::string v1_mount_line(const std::string& point) {
  return "34 30 0:31 / " + point + " rw,relatime - cgroup cgroup rw,memory\n";
}

std::string v2_mount_line(const std::string& root, const std::string& point) {
  return "40 30 0:37 " + root + " " + point + " rw,relatime - cgroup2 cgroup2 rw\n";
}

TEST(CgroupMemory, V1LimitLessWorkingSet) {
  FakeCgroups fake("v1");
  fake.write("memory/memory.limit_in_bytes", kV1Unlimited);
  fake.write("memory/memory.usage_in_bytes", std::to_string(9000 * MiB));
  fake.write("memory/cap/memory.limit_in_bytes", std::to_string(2048 * MiB) + "\n");
  fake.write("memory/cap/memory.usage_in_bytes", std::to_string(500 * MiB) + "\n");
  // Inactive file pages are reclaimed before the kernel kills: they are not counted.
  fake.write("memory/cap/memory.stat",
             "cache 1\ninactive_file 7\ntotal_inactive_file " + std::to_string(100 * MiB) + "\n");
  const std::string mountinfo =
      "30 22 0:27 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n" +
      std::string("31 30 0:28 / /nowhere/cpu rw - cgroup cgroup rw,cpu\n") +
      v1_mount_line(fake.point("memory"));
  EXPECT_EQ(cgroup_memory_headroom("5:devices:/\n4:memory:/cap\n0::/\n", mountinfo),
            (2048 - 400) * MiB);
  // The root cgroup alone has no limit.
  EXPECT_EQ(cgroup_memory_headroom("4:memory:/\n", mountinfo), std::nullopt);
}

TEST(CgroupMemory, AnAncestorsTighterLimitWins) {
  FakeCgroups fake("ancestor");
  fake.write("memory/outer/memory.limit_in_bytes", std::to_string(1024 * MiB));
  fake.write("memory/outer/memory.usage_in_bytes", std::to_string(900 * MiB));
  fake.write("memory/outer/inner/memory.limit_in_bytes", kV1Unlimited);
  fake.write("memory/outer/inner/memory.usage_in_bytes", std::to_string(800 * MiB));
  EXPECT_EQ(cgroup_memory_headroom("4:cpuacct,memory:/outer/inner\n",
                                   v1_mount_line(fake.point("memory"))),
            124 * MiB);
}

TEST(CgroupMemory, V2MaxCurrentAndInactiveFile) {
  FakeCgroups fake("v2");
  fake.write("unified/a/memory.max", std::to_string(3072 * MiB) + "\n");
  fake.write("unified/a/memory.current", std::to_string(1024 * MiB) + "\n");
  fake.write("unified/a/memory.stat", "anon 5\ninactive_file " + std::to_string(24 * MiB) + "\n");
  fake.write("unified/a/b/memory.max", "max\n");
  fake.write("unified/a/b/memory.current", std::to_string(10 * MiB) + "\n");
  const std::string mountinfo = v2_mount_line("/", fake.point("unified"));
  EXPECT_EQ(cgroup_memory_headroom("0::/a/b\n", mountinfo), 2072 * MiB);
}

// In a container the mount shows the hierarchy from the container's own cgroup down.
TEST(CgroupMemory, MountRootedBelowTheHierarchysRoot) {
  FakeCgroups fake("container");
  fake.write("sys fs/memory.max", std::to_string(512 * MiB));
  fake.write("sys fs/memory.current", std::to_string(12 * MiB));
  const std::string mountinfo = v2_mount_line("/docker/abc", fake.point("sys\\040fs"));
  EXPECT_EQ(cgroup_memory_headroom("0::/docker/abc\n", mountinfo), 500 * MiB);
}

TEST(CgroupMemory, UsageAboveTheLimitLeavesNothing) {
  FakeCgroups fake("over");
  fake.write("unified/memory.max", std::to_string(100 * MiB));
  fake.write("unified/memory.current", std::to_string(150 * MiB));
  EXPECT_EQ(cgroup_memory_headroom("0::/\n", v2_mount_line("/", fake.point("unified"))), 0u);
}

TEST(CgroupMemory, NothingToReadIsNoLimit) {
  FakeCgroups fake("none");
  fake.write("unified/memory.max", "garbage");
  fake.write("unified/memory.current", "1");
  const std::string mountinfo = v2_mount_line("/", fake.point("unified"));
  EXPECT_EQ(cgroup_memory_headroom("0::/\n", mountinfo), std::nullopt);
  EXPECT_EQ(cgroup_memory_headroom("0::/missing\n", mountinfo), std::nullopt);
  EXPECT_EQ(cgroup_memory_headroom("", mountinfo), std::nullopt);
  EXPECT_EQ(cgroup_memory_headroom("0::/\n", ""), std::nullopt);
  EXPECT_EQ(cgroup_memory_headroom("not a cgroup line", "nor a mount"), std::nullopt);
}

}  // namespace
}  // namespace strata
