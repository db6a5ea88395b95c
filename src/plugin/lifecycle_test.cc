// The lifecycle against an in-test kubelet that behaves like the real one:
// it wipes the directory's sockets when it starts, and dials back into the
// plugin before answering Register.
#include "plugin/lifecycle.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "device/device_set.h"
#include "plugin/service.h"
#include "testing/eventually.h"
#include "testing/fake_kubelet.h"
#include "testing/temp_dir.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;
using gdp::testing::Eventually;
using gdp::testing::FakeKubelet;

class LifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto lc = PluginLifecycle::Create(
        {.kubelet_socket = (dir_ / "kubelet.sock").string(),
         .socket_name = "test.sock",
         .resource_name = "example.com/dev",
         .initial_backoff = absl::Milliseconds(20),
         .max_backoff = absl::Milliseconds(80)},
        [this] { return Services(); });
    ASSERT_TRUE(lc.ok()) << lc.status();
    lifecycle_ = *std::move(lc);
  }
  void TearDown() override {
    StopRunning();
    lifecycle_.reset();
  }
  void StartRunning() {
    runner_ = std::thread([this] { lifecycle_->Run(); });
  }
  void StopRunning() {
    if (runner_.joinable()) {
      lifecycle_->Stop();
      runner_.join();
    }
  }
  ServiceList Services() {
    ServiceList services;
    services.push_back(
        std::make_unique<DevicePluginService>(devices_, allocator_));
    return services;
  }
  bool OurSocketExists() { return fs::is_socket(dir_ / "test.sock"); }

  const gdp::testing::TempDir tmp_{"lc"};
  const fs::path dir_ = tmp_.path();
  DeviceSet devices_{{}};
  Allocator allocator_{AllocatorOptions{}};
  std::unique_ptr<PluginLifecycle> lifecycle_;
  std::thread runner_;
};

TEST_F(LifecycleTest, StepServesAndRegisters) {
  FakeKubelet kubelet(dir_);
  lifecycle_->Step(absl::ZeroDuration());
  EXPECT_TRUE(OurSocketExists());
  EXPECT_TRUE(lifecycle_->registered());
  EXPECT_EQ(kubelet.registered(), 1);
  v1beta1::RegisterRequest req = kubelet.last();
  EXPECT_EQ(req.version(), "v1beta1");
  EXPECT_EQ(req.endpoint(), "test.sock");
  EXPECT_EQ(req.resource_name(), "example.com/dev");
  EXPECT_TRUE(req.options().get_preferred_allocation_available());
}

// Two instances on one socket (e.g. a rolling update with surge): the
// second does not take the socket over while the first serves it, and
// takes over once the first is gone.
TEST_F(LifecycleTest, SecondInstanceWaitsInsteadOfFighting) {
  FakeKubelet kubelet(dir_);
  StartRunning();
  ASSERT_TRUE(Eventually([&] { return lifecycle_->registered(); }));
  auto second = PluginLifecycle::Create(
      {.kubelet_socket = (dir_ / "kubelet.sock").string(),
       .socket_name = "test.sock",
       .resource_name = "example.com/dev",
       .initial_backoff = absl::Milliseconds(20),
       .max_backoff = absl::Milliseconds(80)},
      [this] { return Services(); });
  ASSERT_TRUE(second.ok());
  std::thread runner([&] { (*second)->Run(); });
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_FALSE((*second)->registered());
  EXPECT_TRUE(lifecycle_->registered());
  EXPECT_EQ(kubelet.registered(), 1) << "no ping-pong of registrations";

  StopRunning();  // the first instance goes away and removes its socket
  EXPECT_TRUE(Eventually([&] { return (*second)->registered(); }));
  (*second)->Stop();
  runner.join();
}

TEST_F(LifecycleTest, WaitsForAbsentKubeletThenRegisters) {
  lifecycle_->Step(absl::ZeroDuration());
  EXPECT_TRUE(OurSocketExists());  // serving before the kubelet exists
  EXPECT_FALSE(lifecycle_->registered());
  StartRunning();
  FakeKubelet kubelet(dir_);  // wipes our socket, as a starting kubelet does
  EXPECT_TRUE(Eventually([&] { return lifecycle_->registered(); }));
  EXPECT_TRUE(OurSocketExists());
  EXPECT_EQ(kubelet.registered(), 1);
}

TEST_F(LifecycleTest, KubeletRestartLeadsToReRegistration) {
  auto kubelet = std::make_unique<FakeKubelet>(dir_);
  StartRunning();
  ASSERT_TRUE(Eventually([&] { return lifecycle_->registrations() == 1; }));
  kubelet.reset();
  kubelet = std::make_unique<FakeKubelet>(dir_);  // deletes our socket
  EXPECT_TRUE(Eventually([&] { return lifecycle_->registrations() == 2; }));
  EXPECT_TRUE(Eventually([&] { return OurSocketExists(); }));
  EXPECT_EQ(kubelet->registered(), 1);
}

TEST_F(LifecycleTest, RejectedRegistrationIsRetriedWithBackoff) {
  FakeKubelet kubelet(dir_, /*accept=*/false);
  StartRunning();
  EXPECT_TRUE(Eventually([&] { return kubelet.attempts() >= 3; }));
  EXPECT_FALSE(lifecycle_->registered());
  kubelet.set_accept(true);
  EXPECT_TRUE(Eventually([&] { return lifecycle_->registered(); }));
}

TEST_F(LifecycleTest, StopReturnsPromptlyAndRemovesSocket) {
  FakeKubelet kubelet(dir_);
  StartRunning();
  ASSERT_TRUE(Eventually([&] { return lifecycle_->registered(); }));
  auto start = std::chrono::steady_clock::now();
  StopRunning();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_FALSE(OurSocketExists());
}

TEST_F(LifecycleTest, DirectoryRemovedIsRecreatedAndWatchedAgain) {
  auto kubelet = std::make_unique<FakeKubelet>(dir_);
  StartRunning();
  ASSERT_TRUE(Eventually([&] { return lifecycle_->registrations() == 1; }));
  kubelet.reset();
  // As `rm -rf` would, until it wins: the plugin may serve its socket again
  // between the removal of the socket and that of the directory.
  ASSERT_TRUE(Eventually([&] {
    std::error_code error;
    fs::remove_all(dir_, error);
    return !error && !fs::exists(dir_);
  }));
  // The plugin recreates the directory and serves there again...
  ASSERT_TRUE(Eventually([&] { return OurSocketExists(); }));
  // ...and notices the next kubelet.
  kubelet = std::make_unique<FakeKubelet>(dir_);
  EXPECT_TRUE(Eventually([&] { return lifecycle_->registrations() == 2; }));
}

TEST_F(LifecycleTest, RestartServesAndRegistersAgain) {
  FakeKubelet kubelet(dir_);
  StartRunning();
  ASSERT_TRUE(Eventually([&] { return lifecycle_->registrations() == 1; }));
  lifecycle_->Restart();
  EXPECT_TRUE(Eventually([&] { return lifecycle_->registrations() == 2; }));
}

}  // namespace
}  // namespace gdp
