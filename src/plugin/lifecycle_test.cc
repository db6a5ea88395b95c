// The lifecycle against an in-test kubelet that behaves like the real one:
// it wipes the directory's sockets when it starts, and dials back into the
// plugin before answering Register.
#include "plugin/lifecycle.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "device/device_set.h"
#include "plugin/service.h"
#include "v1beta1/api.grpc.pb.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;

class TestKubelet final : public v1beta1::Registration::Service {
 public:
  // Wipes the sockets in `dir`, as the kubelet does, then serves.
  explicit TestKubelet(const fs::path& dir, bool accept = true)
      : dir_(dir), accept_(accept) {
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.is_socket()) fs::remove(e.path());
    }
    grpc::ServerBuilder b;
    b.AddListeningPort("unix:" + (dir / "kubelet.sock").string(),
                       grpc::InsecureServerCredentials());
    b.RegisterService(this);
    server_ = b.BuildAndStart();
  }
  ~TestKubelet() override { server_->Shutdown(); }

  grpc::Status Register(grpc::ServerContext*,
                        const v1beta1::RegisterRequest* req,
                        v1beta1::Empty*) override {
    absl::MutexLock lock(&mu_);
    attempts_++;
    last_ = *req;
    if (!accept_) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "go away");
    }
    // Dial back before answering, as the kubelet does.
    auto stub = v1beta1::DevicePlugin::NewStub(
        grpc::CreateChannel("unix:" + (dir_ / req->endpoint()).string(),
                            grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(5));
    v1beta1::DevicePluginOptions opts;
    grpc::Status s = stub->GetDevicePluginOptions(&ctx, {}, &opts);
    if (!s.ok())
      return grpc::Status(grpc::StatusCode::UNKNOWN, "dial back failed");
    registered_++;
    return grpc::Status::OK;
  }

  int attempts() {
    absl::MutexLock lock(&mu_);
    return attempts_;
  }
  int registered() {
    absl::MutexLock lock(&mu_);
    return registered_;
  }
  v1beta1::RegisterRequest last() {
    absl::MutexLock lock(&mu_);
    return last_;
  }
  void set_accept(bool accept) {
    absl::MutexLock lock(&mu_);
    accept_ = accept;
  }

 private:
  fs::path dir_;
  std::unique_ptr<grpc::Server> server_;
  absl::Mutex mu_;
  bool accept_ ABSL_GUARDED_BY(mu_);
  int attempts_ ABSL_GUARDED_BY(mu_) = 0;
  int registered_ ABSL_GUARDED_BY(mu_) = 0;
  v1beta1::RegisterRequest last_ ABSL_GUARDED_BY(mu_);
};

// Polls `cond` for up to 5 s.
template <typename F>
bool Eventually(F cond) {
  for (int i = 0; i < 500; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cond();
}

class LifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path("/tmp") / ("gdp-lc-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    auto lc = PluginLifecycle::Create(
        {.kubelet_socket = (dir_ / "kubelet.sock").string(),
         .socket_name = "test.sock",
         .resource_name = "example.com/dev",
         .initial_backoff = absl::Milliseconds(20),
         .max_backoff = absl::Milliseconds(80)},
        [this] {
          return std::make_unique<DevicePluginService>(devices_, allocator_);
        });
    ASSERT_TRUE(lc.ok()) << lc.status();
    lifecycle_ = *std::move(lc);
  }
  void TearDown() override {
    StopRunning();
    lifecycle_.reset();
    fs::remove_all(dir_);
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
  bool OurSocketExists() { return fs::is_socket(dir_ / "test.sock"); }

  fs::path dir_;
  DeviceSet devices_{{}};
  Allocator allocator_{AllocatorOptions{}};
  std::unique_ptr<PluginLifecycle> lifecycle_;
  std::thread runner_;
};

TEST_F(LifecycleTest, StepServesAndRegisters) {
  TestKubelet kubelet(dir_);
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

TEST_F(LifecycleTest, WaitsForAbsentKubeletThenRegisters) {
  lifecycle_->Step(absl::ZeroDuration());
  EXPECT_TRUE(OurSocketExists());  // serving before the kubelet exists
  EXPECT_FALSE(lifecycle_->registered());
  StartRunning();
  TestKubelet kubelet(dir_);  // wipes our socket, as a starting kubelet does
  EXPECT_TRUE(Eventually([&] { return lifecycle_->registered(); }));
  EXPECT_TRUE(OurSocketExists());
  EXPECT_EQ(kubelet.registered(), 1);
}

TEST_F(LifecycleTest, KubeletRestartLeadsToReRegistration) {
  auto kubelet = std::make_unique<TestKubelet>(dir_);
  StartRunning();
  ASSERT_TRUE(Eventually([&] { return lifecycle_->registrations() == 1; }));
  kubelet.reset();
  kubelet = std::make_unique<TestKubelet>(dir_);  // deletes our socket
  EXPECT_TRUE(Eventually([&] { return lifecycle_->registrations() == 2; }));
  EXPECT_TRUE(Eventually([&] { return OurSocketExists(); }));
  EXPECT_EQ(kubelet->registered(), 1);
}

TEST_F(LifecycleTest, RejectedRegistrationIsRetriedWithBackoff) {
  TestKubelet kubelet(dir_, /*accept=*/false);
  StartRunning();
  EXPECT_TRUE(Eventually([&] { return kubelet.attempts() >= 3; }));
  EXPECT_FALSE(lifecycle_->registered());
  kubelet.set_accept(true);
  EXPECT_TRUE(Eventually([&] { return lifecycle_->registered(); }));
}

TEST_F(LifecycleTest, StopReturnsPromptlyAndRemovesSocket) {
  TestKubelet kubelet(dir_);
  StartRunning();
  ASSERT_TRUE(Eventually([&] { return lifecycle_->registered(); }));
  auto start = std::chrono::steady_clock::now();
  StopRunning();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_FALSE(OurSocketExists());
}

TEST_F(LifecycleTest, DirectoryRemovedIsRecreatedAndWatchedAgain) {
  auto kubelet = std::make_unique<TestKubelet>(dir_);
  StartRunning();
  ASSERT_TRUE(Eventually([&] { return lifecycle_->registrations() == 1; }));
  kubelet.reset();
  fs::remove_all(dir_);
  // The plugin recreates the directory and serves there again...
  ASSERT_TRUE(Eventually([&] { return OurSocketExists(); }));
  // ...and notices the next kubelet.
  kubelet = std::make_unique<TestKubelet>(dir_);
  EXPECT_TRUE(Eventually([&] { return lifecycle_->registrations() == 2; }));
}

TEST_F(LifecycleTest, RestartServesAndRegistersAgain) {
  TestKubelet kubelet(dir_);
  StartRunning();
  ASSERT_TRUE(Eventually([&] { return lifecycle_->registrations() == 1; }));
  lifecycle_->Restart();
  EXPECT_TRUE(Eventually([&] { return lifecycle_->registrations() == 2; }));
}

}  // namespace
}  // namespace gdp
