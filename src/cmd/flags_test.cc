#include "cmd/flags.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <vector>

namespace gdp {
namespace {

ParsedFlags Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "gpu-device-plugin");
  return ParseFlags(static_cast<int>(args.size()), args.data());
}

class FlagsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v :
         {"KUBELET_SOCKET", "NVIDIA_DRIVER_ROOT", "NVIDIA_DEV_ROOT",
          "FAIL_ON_INIT_ERROR", "PASS_DEVICE_SPECS", "DEVICE_ID_STRATEGY"}) {
      unsetenv(v);
    }
  }
};

TEST_F(FlagsTest, Defaults) {
  ParsedFlags f = Parse({});
  ASSERT_TRUE(f.config.has_value());
  EXPECT_EQ(f.config->kubelet_socket,
            "/var/lib/kubelet/device-plugins/kubelet.sock");
  EXPECT_EQ(f.config->driver_root, "/");
  EXPECT_EQ(f.config->DevRoot(), "/");
  EXPECT_TRUE(f.config->fail_on_init_error);
  EXPECT_FALSE(f.config->pass_device_specs);
  EXPECT_EQ(f.config->device_id_strategy, DeviceIdStrategy::kUuid);
  EXPECT_EQ(f.command, Command::kServe);
}

TEST_F(FlagsTest, EnvBeatsDefaultAndFlagBeatsEnv) {
  setenv("KUBELET_SOCKET", "/env/kubelet.sock", 1);
  setenv("NVIDIA_DRIVER_ROOT", "/run/nvidia/driver", 1);
  setenv("FAIL_ON_INIT_ERROR", "false", 1);
  setenv("PASS_DEVICE_SPECS", "true", 1);
  setenv("DEVICE_ID_STRATEGY", "index", 1);
  ParsedFlags env = Parse({});
  ASSERT_TRUE(env.config.has_value());
  EXPECT_EQ(env.config->kubelet_socket, "/env/kubelet.sock");
  EXPECT_EQ(env.config->DevRoot(), "/run/nvidia/driver");
  EXPECT_FALSE(env.config->fail_on_init_error);
  EXPECT_TRUE(env.config->pass_device_specs);
  EXPECT_EQ(env.config->device_id_strategy, DeviceIdStrategy::kIndex);

  ParsedFlags flags =
      Parse({"--kubelet-socket=/flag/kubelet.sock", "--nvidia-driver-root",
             "/drv", "--dev-root=/devroot", "--fail-on-init-error=true",
             "--pass-device-specs=false", "--device-id-strategy=uuid"});
  ASSERT_TRUE(flags.config.has_value());
  EXPECT_EQ(flags.config->kubelet_socket, "/flag/kubelet.sock");
  EXPECT_EQ(flags.config->driver_root, "/drv");
  EXPECT_EQ(flags.config->DevRoot(), "/devroot");
  EXPECT_TRUE(flags.config->fail_on_init_error);
  EXPECT_FALSE(flags.config->pass_device_specs);
  EXPECT_EQ(flags.config->device_id_strategy, DeviceIdStrategy::kUuid);
}

TEST_F(FlagsTest, BareBooleanFlagsMeanTrue) {
  ParsedFlags f = Parse({"--pass-device-specs"});
  ASSERT_TRUE(f.config.has_value());
  EXPECT_TRUE(f.config->pass_device_specs);
}

TEST_F(FlagsTest, BadValuesAreUsageErrors) {
  for (std::vector<const char*> args :
       {std::vector<const char*>{"--device-id-strategy=serial"},
        {"--kubelet-socket=relative/kubelet.sock"},
        {"--driver-root=relative"},
        {"--no-such-flag"}}) {
    ParsedFlags f = Parse(args);
    EXPECT_FALSE(f.config.has_value()) << args[0];
    EXPECT_EQ(f.exit_code, 2) << args[0];
  }
}

TEST_F(FlagsTest, HelpAndVersionExitZero) {
  for (const char* arg : {"--help", "--version"}) {
    ParsedFlags f = Parse({arg});
    EXPECT_FALSE(f.config.has_value());
    EXPECT_EQ(f.exit_code, 0);
  }
}

TEST_F(FlagsTest, KlogVerbositySpellings) {
  for (std::vector<const char*> args : {std::vector<const char*>{"-v=3"},
                                        {"--v=3"},
                                        {"--v", "3"},
                                        {"-v", "3"},
                                        {"-v3"},
                                        {"--verbosity=3"}}) {
    ParsedFlags f = Parse(args);
    ASSERT_TRUE(f.config.has_value()) << args[0];
    EXPECT_EQ(f.config->verbosity, 3) << args[0];
  }
}

TEST_F(FlagsTest, NvmlRetryInterval) {
  EXPECT_EQ(Parse({}).config->nvml_retry_interval, absl::Seconds(30));
  EXPECT_EQ(Parse({"--nvml-retry-interval=2"}).config->nvml_retry_interval,
            absl::Seconds(2));
  EXPECT_FALSE(Parse({"--nvml-retry-interval=0"}).config.has_value());
}

TEST_F(FlagsTest, DiscoverSubcommand) {
  EXPECT_EQ(Parse({"discover"}).command, Command::kDiscover);
}

}  // namespace
}  // namespace gdp
