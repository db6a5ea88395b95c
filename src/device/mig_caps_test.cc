#include "device/mig_caps.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "testing/temp_dir.h"
#include "util/fifo_testing.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kMinors[] =
    "config 1\n"
    "monitor 2\n"
    "gpu0/gi0/access 3\n"
    "gpu0/gi0/ci0/access 4\n"
    "gpu0/gi0/ci1/access 5\n"
    "gpu0/gi2/access 21\n"
    "gpu0/gi2/ci0/access 22\n"
    "gpu3/gi13/access 525\n"
    "gpu3/gi13/ci0/access 526\n";

TEST(MigCapsTest, LooksUpGpuAndComputeInstances) {
  auto caps = MigCaps::Parse(kMinors, "/proc/driver/nvidia-caps/mig-minors");
  ASSERT_TRUE(caps.ok()) << caps.status();
  const struct {
    unsigned gpu, gi;
    int ci;  // -1: the GPU instance itself
    unsigned want;
  } kCases[] = {
      {0, 0, -1, 3}, {0, 0, 0, 4},     {0, 0, 1, 5},    {0, 2, -1, 21},
      {0, 2, 0, 22}, {3, 13, -1, 525}, {3, 13, 0, 526},
  };
  for (const auto& c : kCases) {
    auto got = c.ci < 0 ? caps->GpuInstanceMinor(c.gpu, c.gi)
                        : caps->ComputeInstanceMinor(c.gpu, c.gi, c.ci);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, c.want) << c.gpu << "/" << c.gi << "/" << c.ci;
  }
}

TEST(MigCapsTest, MissingCapabilityNamesItAndTheFile) {
  auto caps = MigCaps::Parse(kMinors, "/x/mig-minors");
  ASSERT_TRUE(caps.ok()) << caps.status();
  const absl::Status statuses[] = {
      caps->GpuInstanceMinor(1, 0).status(),
      caps->GpuInstanceMinor(0, 1).status(),
      caps->ComputeInstanceMinor(0, 2, 1).status(),
      caps->ComputeInstanceMinor(3, 0, 0).status(),
  };
  const char* kNames[] = {"gpu1/gi0/access", "gpu0/gi1/access",
                          "gpu0/gi2/ci1/access", "gpu3/gi0/ci0/access"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(statuses[i].code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(statuses[i].message(), std::string("no MIG capability ") +
                                         kNames[i] + " in /x/mig-minors");
  }
}

TEST(MigCapsTest, MalformedLinesNamePathAndLine) {
  const struct {
    const char* text;
    int line;
    const char* problem;
  } kCases[] = {
      {"config 1\nbogus 2\n", 2, "malformed line \"bogus 2\""},
      {"config\n", 1, "malformed line \"config\""},
      {"config 1 2\n", 1, "malformed"},
      {"config one\n", 1, "malformed"},
      {"config -1\n", 1, "malformed"},
      {"gpu0/gi0/access\n", 1, "malformed"},
      {"gpu0/gi0/access 3x\n", 1, "malformed"},
      {"gpu0/gi/access 3\n", 1, "malformed"},
      {"gpuX/gi0/access 3\n", 1, "malformed"},
      {"gpu0/gi0 3\n", 1, "malformed"},
      {"gpu0/gi0/ci0 3\n", 1, "malformed"},
      {"gpu0/gi0/ci0/access/x 3\n", 1, "malformed"},
      {"gpu0/gi0/ci4294967295/access 3\n", 1, "malformed"},
      {"gpu0/gi0/access 99999999999\n", 1, "malformed"},
      {"config 1\n\ngpu0/gi0/access 3\ngpu0/gi0/access 4\n", 4,
       "gpu0/gi0/access is listed twice (also on line 3)"},
  };
  for (const auto& c : kCases) {
    auto caps = MigCaps::Parse(c.text, "/p/mig-minors");
    ASSERT_FALSE(caps.ok()) << c.text;
    EXPECT_EQ(caps.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string message(caps.status().message());
    EXPECT_THAT(message,
                StartsWith("/p/mig-minors:" + std::to_string(c.line) + ": "))
        << c.text;
    EXPECT_THAT(message, HasSubstr(c.problem)) << c.text;
  }
}

TEST(MigCapsTest, BlankLinesAndEmptyFilesAreFine) {
  auto caps = MigCaps::Parse("\nconfig 1\n\n  \nmonitor 2", "f");
  ASSERT_TRUE(caps.ok()) << caps.status();
  EXPECT_TRUE(MigCaps::Parse("", "f").ok());
}

TEST(MigCapsTest, DevicePath) {
  EXPECT_EQ(MigCaps::DevicePath(22), "/dev/nvidia-caps/nvidia-cap22");
}

class MigCapsFileTest : public ::testing::Test {
 protected:
  const gdp::testing::TempDir tmp_{"migcaps"};
  const fs::path dir_ = tmp_.path();
};

TEST_F(MigCapsFileTest, MissingFileIsNotFoundWithPath) {
  auto caps = MigCaps::Read((dir_ / "proc").string());
  ASSERT_FALSE(caps.ok());
  EXPECT_EQ(caps.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(
      std::string(caps.status().message()),
      HasSubstr((dir_ / "proc/driver/nvidia-caps/mig-minors").string()));
}

TEST_F(MigCapsFileTest, AFifoInPlaceOfTheFileDoesNotBlock) {
  fs::create_directories(dir_ / "proc/driver/nvidia-caps");
  absl::StatusOr<MigCaps> caps = absl::InternalError("not read");
  EXPECT_TRUE(testing::ReturnsWithFifoInPlace(
      (dir_ / "proc/driver/nvidia-caps/mig-minors").string(),
      [&] { caps = MigCaps::Read((dir_ / "proc").string()); }));
  EXPECT_FALSE(caps.ok());
  EXPECT_THAT(std::string(caps.status().message()),
              HasSubstr("not a regular file (a FIFO)"));
}

TEST_F(MigCapsFileTest, ReadsWhatFakeNvmlWrites) {
  const std::string machine = std::string(GDP_MACHINES_DIR) + "/h100-mig.yaml";
  const std::string cmd = std::string(GDP_FAKE_NVML_TOOL) +
                          " rootfs --machine " + machine + " --out " +
                          (dir_ / "root").string();
  ASSERT_EQ(system(cmd.c_str()), 0);
  // A trailing slash on the root is fine.
  auto caps = MigCaps::Read((dir_ / "root/proc/").string());
  ASSERT_TRUE(caps.ok()) << caps.status();
  EXPECT_EQ(caps->path(),
            (dir_ / "root/proc/driver/nvidia-caps/mig-minors").string());
  // GPU 0's 3g.40gb instance is GPU instance 2 with compute instance 0; the
  // nodes for both exist in the fixture.
  const unsigned gi = *caps->GpuInstanceMinor(0, 2);
  const unsigned ci = *caps->ComputeInstanceMinor(0, 2, 0);
  EXPECT_EQ(gi, 21u);
  EXPECT_EQ(ci, 22u);
  for (unsigned n : {gi, ci}) {
    EXPECT_TRUE(fs::exists(dir_ / "root" / MigCaps::DevicePath(n).substr(1)))
        << n;
  }
  EXPECT_EQ(*caps->ComputeInstanceMinor(1, 14, 7), 272u);
}

}  // namespace
}  // namespace gdp
