#include "config/load.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace gdp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class LoadConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info =
        ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = ::testing::TempDir() + "/load_test_" + info->name();
    std::filesystem::create_directories(dir_);
    flags_.config_file = dir_ + "/config.yaml";
  }

  void Write(const std::string& text) {
    std::ofstream(flags_.config_file) << text;
  }

  std::string dir_;
  Config flags_;  // as ParseFlags leaves it
};

TEST_F(LoadConfigTest, NoFileValidatesTheFlags) {
  Config flags;
  absl::StatusOr<Config> c = LoadConfig(flags, {});
  ASSERT_TRUE(c.ok()) << c.status();
  flags.cdi_annotation_prefix = "cdi";
  c = LoadConfig(flags, {"--cdi-annotation-prefix"});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("--cdi-annotation-prefix: 'cdi' must end with '/'"));
}

TEST_F(LoadConfigTest, FileBeatsDefaultsAndExplicitFlagsBeatTheFile) {
  Write(R"(flags:
  migStrategy: mixed
  nvidiaDriverRoot: /file-driver
  plugin:
    deviceListStrategy: [cdi-cri]
    passDeviceSpecs: true
)");
  absl::StatusOr<Config> c = LoadConfig(flags_, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->mig_strategy, MigStrategy::kMixed);
  EXPECT_EQ(c->driver_root, "/file-driver");
  EXPECT_THAT(c->device_list_strategies,
              ElementsAre(DeviceListStrategy::kCdiCri));
  EXPECT_TRUE(c->pass_device_specs);

  // Given explicitly with the default's value: still beats the file.
  Config flags = flags_;
  flags.driver_root = "/flag-driver";
  c = LoadConfig(flags,
                 {"--mig-strategy", "--driver-root", "--device-list-strategy"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->mig_strategy, MigStrategy::kNone);
  EXPECT_EQ(c->driver_root, "/flag-driver");
  EXPECT_THAT(c->device_list_strategies,
              ElementsAre(DeviceListStrategy::kEnvvar));
  EXPECT_TRUE(c->pass_device_specs);  // not given: the file's
}

// NVIDIA's hook path: the file's flags.plugin.nvidiaCTKPath, beaten by
// the flag (--nvidia-cdi-hook-path or its alias); none by default; a
// relative path refused by where it came from.
TEST_F(LoadConfigTest, NvidiaCdiHookPath) {
  Write("flags:\n  migStrategy: none\n");
  absl::StatusOr<Config> c = LoadConfig(flags_, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->nvidia_cdi_hook_path, "");

  Write("flags:\n  plugin:\n    nvidiaCTKPath: /usr/bin/nvidia-ctk\n");
  c = LoadConfig(flags_, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->nvidia_cdi_hook_path, "/usr/bin/nvidia-ctk");

  Config flags = flags_;
  flags.nvidia_cdi_hook_path = "/usr/local/nvidia/toolkit/nvidia-cdi-hook";
  c = LoadConfig(flags, {"--nvidia-cdi-hook-path"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->nvidia_cdi_hook_path,
            "/usr/local/nvidia/toolkit/nvidia-cdi-hook");

  Write("flags:\n  plugin:\n    nvidiaCTKPath: nvidia-ctk\n");
  c = LoadConfig(flags_, {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            flags_.config_file +
                ":3: flags.plugin.nvidiaCTKPath: must be an absolute path, "
                "got 'nvidia-ctk'");
}

// An error names where the bad value came from.
TEST_F(LoadConfigTest, ErrorsNameTheSourceOfTheValue) {
  Write("flags:\n  mpsRoot: relative\n");
  absl::StatusOr<Config> c = LoadConfig(flags_, {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            flags_.config_file +
                ":2: flags.mpsRoot: must be an absolute path, got 'relative'");

  // The same value from a flag is named by the flag, even with a file.
  Write("flags:\n  mpsRoot: /file/mps\n");
  Config flags = flags_;
  flags.mps_root = "flag-relative";
  c = LoadConfig(flags, {"--mps-root"});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "--mps-root: must be an absolute path, got 'flag-relative'");
}

TEST_F(LoadConfigTest, MpsRulesAcrossFlagsAndFile) {
  Write(R"(sharing:
  mps:
    resources:
    - name: gpu
      replicas: 4
)");
  absl::StatusOr<Config> c = LoadConfig(flags_, {});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr(":2: sharing.mps: needs the MPS root directory"));

  Config flags = flags_;
  flags.mps_root = "/run/nvidia/mps";
  c = LoadConfig(flags, {"--mps-root"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->sharing.strategy, SharingStrategy::kMps);

  flags.mig_strategy = MigStrategy::kMixed;
  c = LoadConfig(flags, {"--mps-root", "--mig-strategy"});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr(":2: sharing.mps: cannot be used with MIG strategy "
                        "'mixed' (set by --mig-strategy)"));

  // MIG single is checked against the GPUs later, not here.
  flags.mig_strategy = MigStrategy::kSingle;
  EXPECT_TRUE(LoadConfig(flags, {"--mps-root", "--mig-strategy"}).ok());
}

// A reload reads the file anew; a bad file leaves it to the caller to keep
// the running config.
TEST_F(LoadConfigTest, ReloadReadsTheFileAgain) {
  Write(
      "sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
      "      replicas: 2\n");
  absl::StatusOr<Config> first = LoadConfig(flags_, {});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->sharing.resources[0].replicas, 2);

  Write(
      "sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
      "      replicas: 8\n");
  absl::StatusOr<Config> second = LoadConfig(flags_, {});
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->sharing.resources[0].replicas, 8);

  Write(
      "sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
      "      replicas: 0\n");
  absl::StatusOr<Config> bad = LoadConfig(flags_, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr(":5: sharing.timeSlicing.resources[0].replicas: must "
                        "be at least 2, got 0"));

  // Sharing removed from the file: back to none.
  Write("version: v1\n");
  absl::StatusOr<Config> none = LoadConfig(flags_, {});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->sharing, Sharing{});
}

}  // namespace
}  // namespace gdp
