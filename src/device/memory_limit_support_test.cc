#include "device/memory_limit_support.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "testing/temp_dir.h"

namespace gdp {
namespace {

// This host's layout: v1 controllers and cgroup2 at /sys/fs/cgroup/unified.
constexpr char kHybrid[] =
    "25 30 0:23 / /sys ro,nosuid,nodev,noexec,relatime shared:7 - sysfs "
    "sysfs rw\n"
    "29 25 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs "
    "tmpfs ro,mode=755\n"
    "30 29 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime "
    "shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
    "31 29 0:28 / /sys/fs/cgroup/memory rw,nosuid shared:11 - cgroup cgroup "
    "rw,memory\n";
constexpr char kUnified[] =
    "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - "
    "cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n";
constexpr char kV1Only[] =
    "31 29 0:28 / /sys/fs/cgroup/memory rw,nosuid shared:11 - cgroup cgroup "
    "rw,memory\n";

TEST(FindCgroup2MountTest, Layouts) {
  EXPECT_EQ(FindCgroup2Mount(kUnified), "/sys/fs/cgroup");
  EXPECT_EQ(FindCgroup2Mount(kHybrid), "/sys/fs/cgroup/unified");
  EXPECT_EQ(FindCgroup2Mount(kV1Only), std::nullopt);
  EXPECT_EQ(FindCgroup2Mount(""), std::nullopt);
  // /sys/fs/cgroup wins wherever it is listed.
  EXPECT_EQ(FindCgroup2Mount(std::string(kHybrid) +
                             "40 24 0:31 / /sys/fs/cgroup rw - cgroup2 "
                             "cgroup2 rw\n"),
            "/sys/fs/cgroup");
  // Optional fields of any number; escapes; garbage skipped.
  EXPECT_EQ(FindCgroup2Mount("x\n1 2 3:4 / /a\\040b rw - cgroup2 none rw\n"),
            "/a b");
  EXPECT_EQ(FindCgroup2Mount("1 2 3:4 / /c rw a:1 b:2 c:3 - cgroup2 none rw"),
            "/c");
  EXPECT_EQ(FindCgroup2Mount("1 2 3:4 / /d rw - cgroup2"), "/d");
  EXPECT_EQ(FindCgroup2Mount("1 2 3:4 / /e rw cgroup2 x y"), std::nullopt);
  EXPECT_EQ(FindCgroup2Mount("1 2 3:4 / /f rw -"), std::nullopt);
}

TEST(FindCgroup2MountTest, ReadsTheMountTableUnderProcRoot) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.File("self"));
  std::ofstream(dir.File("self/mountinfo")) << kHybrid;
  absl::StatusOr<std::optional<std::string>> got =
      ReadCgroup2Mount(dir.path().string());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "/sys/fs/cgroup/unified");
  absl::StatusOr<std::optional<std::string>> none =
      ReadCgroup2Mount(dir.File("missing"));
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("the mount table"),
            absl::string_view::npos);
}

TEST(MemoryLimitSupportTest, NodeWide) {
  struct Case {
    MemoryLimitNode node;
    MemoryLimitSupport want;
  } cases[] = {
      {{true, "615.10", "/sys/fs/cgroup"}, {true, ""}},
      {{true, "620.1.2", "/sys/fs/cgroup/unified"}, {true, ""}},
      {{false, "580.95.05", "/sys/fs/cgroup"},
       {false,
        "NVML has no memory-limit calls (nvmlDeviceSetMemoryLimits_v1; "
        "driver 580.95.05, R615 needed)"}},
      // The symbol without the driver: a fake or mixed install.
      {{true, "580.95.05", "/sys/fs/cgroup"},
       {false, "driver 580.95.05 is older than R615"}},
      {{true, "", "/sys/fs/cgroup"},
       {false, "driver of unknown version is older than R615"}},
      {{true, "garbage", "/sys/fs/cgroup"},
       {false, "driver garbage is older than R615"}},
      {{true, "615.10", std::nullopt},
       {false,
        "no cgroup v2 hierarchy is mounted (the driver limits cgroup v2 "
        "directories)"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.node.driver_version);
    EXPECT_EQ(NodeMemoryLimitSupport(c.node), c.want);
  }
}

TEST(MemoryLimitSupportTest, MigModeGpusCannot) {
  const MemoryLimitSupport yes{true, ""};
  const MemoryLimitSupport no{false, "driver 580.95.05 is older than R615"};
  GpuInfo gpu;
  gpu.index = 3;
  EXPECT_EQ(GpuMemoryLimitSupport(yes, gpu), yes);
  EXPECT_EQ(GpuMemoryLimitSupport(no, gpu), no);
  gpu.mig_enabled = true;
  EXPECT_EQ(GpuMemoryLimitSupport(yes, gpu),
            (MemoryLimitSupport{false,
                                "GPU 3 is in MIG mode: the driver limits the "
                                "memory of whole GPUs only"}));
  EXPECT_EQ(GpuMemoryLimitSupport(no, gpu), no);  // the node's reason first
}

}  // namespace
}  // namespace gdp
