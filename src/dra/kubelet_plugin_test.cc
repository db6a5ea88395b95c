#include "dra/kubelet_plugin.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "testing/temp_dir.h"

namespace gdp::dra {
namespace {

namespace fs = std::filesystem;

class KubeletPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.driver_name = "gpu.example.com";
    options_.registration_dir = (dir_ / "reg").string();
    options_.plugins_dir = (dir_ / "plugins").string();
  }

  const gdp::testing::TempDir tmp_{"kplugin"};
  const fs::path dir_ = tmp_.path() / "d";
  KubeletPluginOptions options_;
  HealthStreams streams_;
  RegistrationState state_;
};

// Probes read serving(): a socket that is gone is not served, from the
// moment it goes, not only once the plugin's thread has handled it.
TEST_F(KubeletPluginTest, ServingIsFalseAsSoonAsASocketIsGone) {
  RegistrationState endpoint_state;
  auto plugin = KubeletPlugin::Create(
      options_,
      [&] {
        return RegistrationServices({"gpu.example.com", "", {}},
                                    endpoint_state);
      },
      streams_, state_);
  ASSERT_TRUE(plugin.ok()) << plugin.status();
  (*plugin)->Step(absl::ZeroDuration());
  ASSERT_TRUE((*plugin)->serving());
  fs::remove(EndpointSocket(options_));
  EXPECT_FALSE((*plugin)->serving());     // before the next Step
  (*plugin)->Step(absl::ZeroDuration());  // sees it gone: drops both
  (*plugin)->Step(absl::ZeroDuration());  // serves them again
  EXPECT_TRUE((*plugin)->serving());
  EXPECT_TRUE(fs::exists(RegistrationSocket(options_)));
  fs::remove(RegistrationSocket(options_));
  EXPECT_FALSE((*plugin)->serving());
}

}  // namespace
}  // namespace gdp::dra
