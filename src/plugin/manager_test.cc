#include "plugin/manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "testing/eventually.h"
#include "testing/fake_kubelet.h"
#include "testing/temp_dir.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;
using gdp::testing::Eventually;
using gdp::testing::FakeKubelet;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

PluginSpec Spec(const std::string& name, int devices, int replicas = 1) {
  PluginSpec s;
  s.resource.name = name;
  s.resource.socket_name = SocketNameFor(name);
  s.resource.replicas = replicas;
  for (int i = 0; i < devices; ++i) {
    Device d;
    d.id = "GPU-" + std::to_string(i);
    d.visible_id = d.id;
    s.resource.devices.push_back(d);
  }
  return s;
}

class ManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kubelet_ = std::make_unique<FakeKubelet>(dir_);
    LifecycleOptions options;
    options.kubelet_socket = (dir_ / "kubelet.sock").string();
    options.initial_backoff = absl::Milliseconds(20);
    options.max_backoff = absl::Milliseconds(80);
    manager_ = std::make_unique<PluginManager>(options);
  }
  void TearDown() override {
    manager_.reset();
    kubelet_.reset();
  }
  bool Socket(const std::string& name) { return fs::is_socket(dir_ / name); }

  const gdp::testing::TempDir tmp_{"mgr"};
  const fs::path dir_ = tmp_.path();
  std::unique_ptr<FakeKubelet> kubelet_;
  std::unique_ptr<PluginManager> manager_;
};

TEST_F(ManagerTest, StartsOnePluginPerResource) {
  ASSERT_TRUE(manager_
                  ->Apply({Spec("nvidia.com/gpu", 2),
                           Spec("nvidia.com/mig-1g.10gb", 3)})
                  .ok());
  EXPECT_THAT(manager_->Running(),
              ElementsAre("nvidia.com/gpu", "nvidia.com/mig-1g.10gb"));
  ASSERT_TRUE(Eventually([&] { return manager_->AllRegistered(); }));
  EXPECT_EQ(kubelet_->registered("nvidia.com/gpu"), 1);
  EXPECT_EQ(kubelet_->registered("nvidia.com/mig-1g.10gb"), 1);
  EXPECT_TRUE(Socket("nvidia-gpu.sock"));
  EXPECT_TRUE(Socket("nvidia-mig-1g.10gb.sock"));
  EXPECT_EQ(manager_->Devices("nvidia.com/gpu")->Get()->devices.size(), 2u);
}

TEST_F(ManagerTest, ReapplyRestartsOnlyWhatChanged) {
  ASSERT_TRUE(manager_
                  ->Apply({Spec("nvidia.com/gpu", 2), Spec("nvidia.com/a", 1),
                           Spec("nvidia.com/b", 1)})
                  .ok());
  ASSERT_TRUE(Eventually([&] { return kubelet_->registered() == 3; }));
  DeviceSet* unchanged = manager_->Devices("nvidia.com/gpu");

  // a changes (more devices), b goes away, c is new, gpu is untouched.
  ASSERT_TRUE(manager_
                  ->Apply({Spec("nvidia.com/gpu", 2), Spec("nvidia.com/a", 2),
                           Spec("nvidia.com/c", 1)})
                  .ok());
  EXPECT_THAT(manager_->Running(),
              ElementsAre("nvidia.com/a", "nvidia.com/c", "nvidia.com/gpu"));
  ASSERT_TRUE(Eventually([&] {
    return kubelet_->registered("nvidia.com/a") == 2 &&
           kubelet_->registered("nvidia.com/c") == 1;
  }));
  EXPECT_EQ(kubelet_->registered("nvidia.com/gpu"), 1);
  EXPECT_EQ(manager_->Devices("nvidia.com/gpu"), unchanged);
  EXPECT_FALSE(Socket("nvidia-b.sock"));
  EXPECT_TRUE(Socket("nvidia-gpu.sock"));
  EXPECT_EQ(manager_->Devices("nvidia.com/a")->Get()->devices.size(), 2u);
}

TEST_F(ManagerTest, RestartKeepsHealth) {
  ASSERT_TRUE(manager_->Apply({Spec("nvidia.com/gpu", 2)}).ok());
  manager_->Devices("nvidia.com/gpu")
      ->SetHealth("GPU-1", Health::kUnhealthy, "XID 79");
  ASSERT_TRUE(manager_->Apply({Spec("nvidia.com/gpu", 3)}).ok());
  auto list = manager_->Devices("nvidia.com/gpu")->Get();
  ASSERT_EQ(list->devices.size(), 3u);
  EXPECT_EQ(list->Find("GPU-1")->health, Health::kUnhealthy);
  EXPECT_EQ(list->Find("GPU-1")->unhealthy_reason, "XID 79");
  EXPECT_EQ(list->Find("GPU-2")->health, Health::kHealthy);
}

TEST_F(ManagerTest, RefusesBadSpecsWithoutChangingAnything) {
  ASSERT_TRUE(manager_->Apply({Spec("nvidia.com/gpu", 1)}).ok());
  absl::Status s =
      manager_->Apply({Spec("nvidia.com/x", 1), Spec("nvidia.com/x", 1)});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("defined twice"));
  s = manager_->Apply({Spec("nvidia.com/" + std::string(120, 'l'), 1)});
  EXPECT_THAT(std::string(s.message()), HasSubstr("longer than the 107"));
  EXPECT_THAT(manager_->Running(), ElementsAre("nvidia.com/gpu"));
}

TEST_F(ManagerTest, StopAllRemovesSockets) {
  ASSERT_TRUE(manager_->Apply({Spec("nvidia.com/gpu", 1)}).ok());
  ASSERT_TRUE(Eventually([&] { return manager_->AllRegistered(); }));
  manager_->StopAll();
  EXPECT_TRUE(manager_->Running().empty());
  EXPECT_FALSE(Socket("nvidia-gpu.sock"));
}

}  // namespace
}  // namespace gdp
