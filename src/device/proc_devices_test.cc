#include "device/proc_devices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "testing/temp_dir.h"

namespace gdp {
namespace {

using ::testing::HasSubstr;

// /proc/devices of a node with the NVIDIA driver loaded.
constexpr char kNode[] =
    "Character devices:\n"
    "  1 mem\n"
    "  4 /dev/vc/0\n"
    "195 nvidia\n"
    "195 nvidia-modeset\n"
    "195 nvidia-frontend\n"
    "508 nvidia-nvlink\n"
    "509 nvidia-caps\n"
    "510 nvidia-uvm\n"
    "\n"
    "Block devices:\n"
    "  7 loop\n"
    "259 blkext\n";

TEST(ProcDevicesTest, Table) {
  const struct {
    const char* what;
    std::string text;
    const char* name;
    std::optional<unsigned> want;
    absl::StatusCode code;
    const char* message;
  } kCases[] = {
      {"nvidia-caps", kNode, "nvidia-caps", 509, absl::StatusCode::kOk, ""},
      {"nvidia-uvm", kNode, "nvidia-uvm", 510, absl::StatusCode::kOk, ""},
      {"a name listed beside others", kNode, "nvidia", 195,
       absl::StatusCode::kOk, ""},
      {"block devices are not character devices", kNode, "blkext", std::nullopt,
       absl::StatusCode::kNotFound,
       "no character device blkext in /proc/devices"},
      {"no driver", "Character devices:\n  1 mem\n", "nvidia-caps",
       std::nullopt, absl::StatusCode::kNotFound,
       "(is the NVIDIA driver loaded?)"},
      {"a malformed line", "Character devices:\n  1 mem\nx nvidia-caps\n",
       "nvidia-caps", std::nullopt, absl::StatusCode::kInvalidArgument,
       "/proc/devices:3: 'x nvidia-caps' is not '<major> <name>'"},
      {"a major past 12 bits", "Character devices:\n4096 nvidia-caps\n",
       "nvidia-caps", std::nullopt, absl::StatusCode::kInvalidArgument,
       "/proc/devices:2: '4096 nvidia-caps'"},
      {"two majors for one name",
       "Character devices:\n509 nvidia-caps\n510 nvidia-caps\n", "nvidia-caps",
       std::nullopt, absl::StatusCode::kInvalidArgument,
       "/proc/devices:3: nvidia-caps listed with major 510 after major 509"},
      {"empty", "", "nvidia-caps", std::nullopt, absl::StatusCode::kNotFound,
       "no character device nvidia-caps"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.what);
    absl::StatusOr<unsigned> major =
        ParseCharDeviceMajor(c.text, c.name, "/proc/devices");
    EXPECT_EQ(major.status().code(), c.code) << major.status();
    if (c.want.has_value() && major.ok()) {
      EXPECT_EQ(*major, *c.want);
    }
    EXPECT_THAT(std::string(major.status().message()), HasSubstr(c.message));
  }
}

TEST(ProcDevicesTest, ReadsTheFileUnderProcRoot) {
  const gdp::testing::TempDir tmp("proc-devices");
  const std::string proc = tmp.path().string();
  absl::StatusOr<unsigned> missing = ReadCharDeviceMajor(proc, "nvidia-caps");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr(proc + "/devices"));
  std::ofstream(tmp.path() / "devices") << kNode;
  absl::StatusOr<unsigned> major = ReadCharDeviceMajor(proc, "nvidia-caps");
  ASSERT_TRUE(major.ok()) << major.status();
  EXPECT_EQ(*major, 509u);
}

}  // namespace
}  // namespace gdp
