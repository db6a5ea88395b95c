#include "registration_server.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "device_manager.h"
#include "test_support.h"

namespace gdp::dpctl {
namespace {

using ::gdp::dpctl::testing::FakePlugin;
using ::gdp::dpctl::testing::MakeDevice;
using ::gdp::dpctl::testing::RecordingSink;
using ::gdp::dpctl::testing::TempDir;

constexpr char kGpu[] = "nvidia.com/gpu";

// Leaves a bound unix socket file at `path` (as a crashed process would).
void MakeStaleSocket(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  close(fd);
}

class RegistrationServerTest : public ::testing::Test {
 protected:
  void StartServer() {
    RegistrationServer::Options options;
    options.dir = dir_.path();
    options.dial_timeout = absl::Milliseconds(500);
    options.rpc_timeout = absl::Seconds(2);
    server_ = std::make_unique<RegistrationServer>(options, &manager_, &sink_);
    ASSERT_TRUE(server_->Start().ok());
  }

  // A plugin on <dir>/<endpoint> with devices g0 (numa 0), g1 (numa 1).
  std::unique_ptr<FakePlugin> StartPlugin(const std::string& endpoint) {
    auto plugin = std::make_unique<FakePlugin>(dir_.File(endpoint));
    plugin->SetDevices(
        {MakeDevice("g0", "Healthy", {0}), MakeDevice("g1", "Healthy", {1})});
    EXPECT_TRUE(plugin->Start());
    return plugin;
  }

  TempDir dir_;
  RecordingSink sink_;
  DeviceManager manager_{&sink_};
  std::unique_ptr<RegistrationServer> server_;
};

TEST_F(RegistrationServerTest, StartRemovesOnlySockets) {
  namespace fs = std::filesystem;
  MakeStaleSocket(dir_.File("old-plugin.sock"));
  MakeStaleSocket(dir_.File("kubelet.sock"));
  std::ofstream(dir_.File("kubelet_internal_checkpoint")) << "{}";
  fs::create_directory(dir_.File("subdir"));
  MakeStaleSocket(dir_.File("subdir/nested.sock"));
  ASSERT_TRUE(fs::is_socket(dir_.File("old-plugin.sock")));

  StartServer();
  EXPECT_FALSE(fs::exists(dir_.File("old-plugin.sock")));
  EXPECT_TRUE(fs::is_regular_file(dir_.File("kubelet_internal_checkpoint")));
  EXPECT_TRUE(fs::is_directory(dir_.File("subdir")));
  EXPECT_TRUE(fs::is_socket(dir_.File("subdir/nested.sock")));
  EXPECT_TRUE(fs::is_socket(dir_.File("kubelet.sock")));
  EXPECT_EQ(sink_.WaitForEvent("listening").dump(),
            R"({"event":"listening","socket":")" + dir_.File("kubelet.sock") +
                R"("})");

  server_->Shutdown();
  EXPECT_FALSE(fs::exists(dir_.File("kubelet.sock")));
}

TEST_F(RegistrationServerTest, RegisterDialsBackAndFollowsDevices) {
  StartServer();
  auto plugin = StartPlugin("gpu.sock");
  v1beta1::DevicePluginOptions options;
  options.set_get_preferred_allocation_available(true);
  plugin->SetOptions(options);
  grpc::Status status =
      plugin->Register(server_->socket_path(), kGpu, "gpu.sock");
  ASSERT_TRUE(status.ok()) << status.error_message();

  EXPECT_EQ(sink_.WaitForEvent("register").dump(),
            R"({"event":"register","resource":"nvidia.com/gpu",)"
            R"("endpoint":"gpu.sock","version":"v1beta1","ok":true})");
  EXPECT_EQ(sink_.WaitForEvent("options").dump(),
            R"({"event":"options","resource":"nvidia.com/gpu",)"
            R"("pre_start_required":false,)"
            R"("get_preferred_allocation_available":true})");
  EXPECT_EQ(sink_.WaitForEvent("devices").dump(),
            R"({"event":"devices","resource":"nvidia.com/gpu","devices":[)"
            R"({"id":"g0","health":"Healthy","numa":[0]},)"
            R"({"id":"g1","health":"Healthy","numa":[1]}],)"
            R"("total":2,"healthy":2})");

  // Each message replaces the whole list.
  plugin->SetDevices({MakeDevice("g1", "Unhealthy", {1})});
  Json update = sink_.WaitFor(
      [](const Json& e) { return e["event"] == "devices" && e["total"] == 1; });
  ASSERT_FALSE(update.is_null());
  EXPECT_EQ(update["healthy"], 0);
}

TEST_F(RegistrationServerTest, RefusesWrongVersion) {
  StartServer();
  auto plugin = StartPlugin("gpu.sock");
  grpc::Status status =
      plugin->Register(server_->socket_path(), kGpu, "gpu.sock", "v1alpha");
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.error_message().find("\"v1alpha\" is not supported"),
            std::string::npos)
      << status.error_message();
  Json event = sink_.WaitForEvent("register");
  EXPECT_EQ(event["ok"], false);
  EXPECT_EQ(event["version"], "v1alpha");
  EXPECT_EQ(event["error"], status.error_message());
  EXPECT_TRUE(sink_.Events("options").empty());
}

TEST_F(RegistrationServerTest, RefusesBadResourceNames) {
  StartServer();
  auto plugin = StartPlugin("gpu.sock");
  for (const char* name : {"gpu", "kubernetes.io/gpu", "nvidia.com/"}) {
    grpc::Status status =
        plugin->Register(server_->socket_path(), name, "gpu.sock");
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << name;
    EXPECT_NE(status.error_message().find("not an extended resource name"),
              std::string::npos);
  }
  EXPECT_EQ(sink_.Events("register").size(), 3u);
  EXPECT_TRUE(sink_.Events("devices").empty());
}

TEST_F(RegistrationServerTest, RefusesWhenTheDialBackFails) {
  StartServer();
  auto plugin = StartPlugin("gpu.sock");
  grpc::Status status =
      plugin->Register(server_->socket_path(), kGpu, "missing.sock");
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.error_message().find("cannot dial plugin"),
            std::string::npos)
      << status.error_message();
  EXPECT_EQ(sink_.WaitForEvent("register")["ok"], false);
}

TEST_F(RegistrationServerTest, PluginStopMarksDevicesUnhealthy) {
  StartServer();
  auto plugin = StartPlugin("gpu.sock");
  ASSERT_TRUE(plugin->Register(server_->socket_path(), kGpu, "gpu.sock").ok());
  ASSERT_FALSE(sink_.WaitForEvent("devices").is_null());
  plugin->Stop();
  Json closed = sink_.WaitForEvent("stream_closed");
  EXPECT_EQ(closed.dump(),
            R"({"event":"stream_closed","resource":"nvidia.com/gpu",)"
            R"("error":"EOF"})");
  Json last = sink_.WaitFor([](const Json& e) {
    return e["event"] == "devices" && e["healthy"] == 0;
  });
  ASSERT_FALSE(last.is_null());
  EXPECT_EQ(last["total"], 2);
  EXPECT_EQ(last["devices"][0]["health"], "Unhealthy");
  EXPECT_EQ(manager_.HealthyFreeCount(kGpu), 0);

  // The plugin comes back on the same socket and registers again.
  auto again = StartPlugin("gpu.sock");
  ASSERT_TRUE(again->Register(server_->socket_path(), kGpu, "gpu.sock").ok());
  EXPECT_FALSE(sink_
                   .WaitFor([](const Json& e) {
                     return e["event"] == "devices" && e["healthy"] == 2;
                   })
                   .is_null());
}

TEST_F(RegistrationServerTest, SecondRegistrationReplacesTheFirst) {
  StartServer();
  auto first = StartPlugin("first.sock");
  ASSERT_TRUE(first->Register(server_->socket_path(), kGpu, "first.sock").ok());
  ASSERT_FALSE(sink_.WaitForEvent("devices").is_null());
  auto second = StartPlugin("second.sock");
  second->SetDevices({MakeDevice("s0")});
  ASSERT_TRUE(
      second->Register(server_->socket_path(), kGpu, "second.sock").ok());
  ASSERT_FALSE(sink_
                   .WaitFor([](const Json& e) {
                     return e["event"] == "devices" && e["total"] == 1;
                   })
                   .is_null());
  // The first plugin's stream was cancelled by the kubelet; its end is not
  // reported, nor is the first plugin stopping later.
  first->Stop();
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_TRUE(sink_.Events("stream_closed").empty());
  auto got = manager_.Allocate(kGpu, 1, "p");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(second->allocate_requests().size(), 1u);
  EXPECT_TRUE(first->allocate_requests().empty());
}

TEST_F(RegistrationServerTest, AllocatesThroughThePlugin) {
  StartServer();
  auto plugin = StartPlugin("gpu.sock");
  v1beta1::DevicePluginOptions options;
  options.set_get_preferred_allocation_available(true);
  options.set_pre_start_required(true);
  plugin->SetOptions(options);
  plugin->SetPreferred({"g1"});
  ASSERT_TRUE(plugin->Register(server_->socket_path(), kGpu, "gpu.sock").ok());
  ASSERT_FALSE(sink_.WaitForEvent("devices").is_null());

  auto got = manager_.Allocate(kGpu, 1, "pod-a");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(
      sink_.WaitForEvent("allocate").dump(),
      R"({"event":"allocate","resource":"nvidia.com/gpu","pod":"pod-a",)"
      R"("devices":["g1"],"response":{"envs":{"FAKE_DEVICES":"g1"},)"
      R"("mounts":[{"container_path":"/fake/g1","host_path":"/host/g1",)"
      R"("read_only":true}],"devices":[{"container_path":"/dev/g1",)"
      R"("host_path":"/dev/g1","permissions":"rw"}],)"
      R"("annotations":{"fake":"yes"},"cdi_devices":["fake.com/gpu=g1"]}})");
  ASSERT_EQ(plugin->prestart_requests().size(), 1u);
  EXPECT_EQ(plugin->prestart_requests()[0].devices_ids(0), "g1");
  EXPECT_EQ(plugin->preferred_requests().size(), 1u);
}

TEST_F(RegistrationServerTest, ShutdownEndsStreamsQuietly) {
  StartServer();
  auto plugin = StartPlugin("gpu.sock");
  ASSERT_TRUE(plugin->Register(server_->socket_path(), kGpu, "gpu.sock").ok());
  ASSERT_FALSE(sink_.WaitForEvent("devices").is_null());
  server_->Shutdown();
  server_->Shutdown();
  EXPECT_TRUE(sink_.Events("stream_closed").empty());
  EXPECT_FALSE(std::filesystem::exists(server_->socket_path()));
}

}  // namespace
}  // namespace gdp::dpctl
