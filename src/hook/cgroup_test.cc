#include "hook/cgroup.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "testing/temp_dir.h"

namespace gdp::hook {
namespace {

using ::testing::HasSubstr;

// A hybrid host (v1 controllers, cgroup2 at /sys/fs/cgroup/unified) and a
// unified one.
constexpr char kHybrid[] =
    "25 30 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs "
    "rw\n"
    "31 25 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs "
    "ro,mode=755\n"
    "32 31 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime "
    "shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
    "33 31 0:28 / /sys/fs/cgroup/memory rw,nosuid shared:11 - cgroup cgroup "
    "rw,memory\n";
constexpr char kUnified[] =
    "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - "
    "cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n";

TEST(FindCgroup2MountTest, HybridUnifiedAndV1) {
  absl::StatusOr<Cgroup2Mount> m = FindCgroup2Mount(kHybrid);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->mount_point, "/sys/fs/cgroup/unified");
  EXPECT_EQ(m->root, "/");
  m = FindCgroup2Mount(kUnified);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->mount_point, "/sys/fs/cgroup");
  // A bind mount of a sub-cgroup first (e.g. a container's view): the
  // host's own root mount wins.
  m = FindCgroup2Mount(
      "40 30 0:30 /kubepods /var/x\\040y rw - cgroup2 cgroup2 rw\n" +
      std::string(kUnified));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->mount_point, "/sys/fs/cgroup");
  m = FindCgroup2Mount("40 30 0:30 /kubepods /var/x\\040y rw - cgroup2 c rw\n");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->mount_point, "/var/x y");
  EXPECT_EQ(m->root, "/kubepods");

  absl::StatusOr<Cgroup2Mount> v1 = FindCgroup2Mount(
      "33 31 0:28 / /sys/fs/cgroup/memory rw shared:11 - cgroup cgroup rw\n");
  EXPECT_EQ(v1.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(v1.status().message(), HasSubstr("cgroup v1 host"));
  EXPECT_EQ(FindCgroup2Mount("1 2 - cgroup2 x\n").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(UnifiedCgroupPathTest, ZeroLine) {
  EXPECT_EQ(*UnifiedCgroupPath("12:memory:/machine.slice/libpod-1.scope\n"
                               "0::/machine.slice/libpod-1.scope/container\n"),
            "/machine.slice/libpod-1.scope/container");
  EXPECT_EQ(UnifiedCgroupPath("12:memory:/x\n").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(UnifiedCgroupPath("0::/../../x\n").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(UnifiedCgroupPath("0::x\n").status().code(),
            absl::StatusCode::kInvalidArgument);
}

class ContainerCgroupDirTest : public ::testing::Test {
 protected:
  void Write(const std::string& rel, const std::string& text) {
    std::string path = dir_.path().string() + "/" + rel;
    std::string parent = path.substr(0, path.rfind('/'));
    std::filesystem::create_directories(parent);
    std::ofstream(path) << text;
  }
  // A proc tree whose cgroup2 mount is <tmp>/cg and process 42 is in
  // `cgroup`.
  std::string Proc(const std::string& cgroup, const std::string& root = "/") {
    Write("proc/self/mountinfo", "32 31 0:27 " + root + " " +
                                     dir_.path().string() +
                                     "/cg rw - cgroup2 cgroup2 rw\n");
    Write("proc/42/cgroup", "1:name=systemd:/x\n0::" + cgroup + "\n");
    return dir_.path().string() + "/proc";
  }
  gdp::testing::TempDir dir_;
};

TEST_F(ContainerCgroupDirTest, JoinsMountAndPath) {
  std::filesystem::create_directories(dir_.path().string() + "/cg/pod/ctr");
  absl::StatusOr<std::string> d = ContainerCgroupDir(Proc("/pod/ctr"), 42);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(*d, dir_.path().string() + "/cg/pod/ctr");
  // A mount of a sub-tree: the path below its root.
  d = ContainerCgroupDir(Proc("/kube/pod/ctr", "/kube"), 42);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(*d, dir_.path().string() + "/cg/pod/ctr");
}

TEST_F(ContainerCgroupDirTest, RefusesWhatIsNotTheContainersOwn) {
  std::filesystem::create_directories(dir_.path().string() + "/cg");
  absl::StatusOr<std::string> d = ContainerCgroupDir(Proc("/"), 42);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(d.status().message(), HasSubstr("root cgroup"));
  d = ContainerCgroupDir(Proc("/gone"), 42);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(d.status().message(), HasSubstr("/cg/gone"));
  d = ContainerCgroupDir(Proc("/other/ctr", "/kube"), 42);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(d.status().message(), HasSubstr("outside the cgroup2 mount"));
  d = ContainerCgroupDir(Proc("/pod"), 43);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(d.status().message(), HasSubstr("/43/cgroup"));
  Write("proc/self/mountinfo",
        "1 2 0:1 / /sys/fs/cgroup/memory rw - cgroup "
        "cgroup rw,memory\n");
  d = ContainerCgroupDir(dir_.path().string() + "/proc", 42);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(d.status().message(), HasSubstr("cgroup v1 host"));
}

}  // namespace
}  // namespace gdp::hook
