// The DeviceStatus service over a real unix socket, served beside the
// DevicePlugin service as the plugin serves them.
#include "plugin/status_service.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "plugin/service.h"
#include "rpc/socket_server.h"
#include "testing/temp_dir.h"

namespace gdp {
namespace {

// A whole GPU, two replicas of a second GPU, and a MIG device.
std::vector<Device> Devices() {
  Device gpu;
  gpu.id = "GPU-a";
  gpu.visible_id = "GPU-a";
  gpu.gpu_uuid = "GPU-a";
  gpu.gpu_index = 0;
  gpu.numa_node = 1;
  gpu.device_nodes = {"/dev/nvidia0"};

  std::vector<Device> out = {gpu};
  for (int k = 0; k < 2; ++k) {
    Device r;
    r.id = "GPU-b::" + std::to_string(k);
    r.visible_id = "GPU-b";
    r.gpu_uuid = "GPU-b";
    r.gpu_index = 1;
    r.replica = k;
    r.device_nodes = {"/dev/nvidia1"};
    out.push_back(r);
  }

  Device mig;
  mig.id = "MIG-c";
  mig.visible_id = "MIG-c";
  mig.gpu_uuid = "GPU-c";
  mig.gpu_index = 2;
  mig.mig_gi = 3;
  mig.mig_ci = 0;
  mig.numa_node = 0;
  mig.device_nodes = {"/dev/nvidia2"};
  out.push_back(mig);
  return out;
}

class StatusServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServiceList services;
    services.push_back(
        std::make_unique<DevicePluginService>(devices_, allocator_));
    services.push_back(
        std::make_unique<DeviceStatusService>(devices_, "nvidia.com/gpu"));
    auto server = SocketServer::Start(path_, std::move(services));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    channel_ = grpc::CreateChannel("unix:" + path_,
                                   grpc::InsecureChannelCredentials());
    stub_ = status::v1::DeviceStatus::NewStub(channel_);
  }

  status::v1::ListResponse List() {
    grpc::ClientContext ctx;
    status::v1::ListResponse resp;
    grpc::Status s = stub_->List(&ctx, {}, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }

  const gdp::testing::TempDir tmp_{"status"};
  const std::string path_ = tmp_.File("s.sock");
  DeviceSet devices_{Devices()};
  Allocator allocator_{AllocatorOptions{}};
  std::unique_ptr<SocketServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<status::v1::DeviceStatus::Stub> stub_;
};

TEST_F(StatusServiceTest, ListsEveryDeviceWithItsPhysicalUnit) {
  status::v1::ListResponse resp = List();
  EXPECT_EQ(resp.resource_name(), "nvidia.com/gpu");
  ASSERT_EQ(resp.devices_size(), 4);

  struct Want {
    std::string id, visible_id, gpu_uuid;
    unsigned gpu_index;
    int numa, gi, ci, replica;  // -1: absent
  };
  const std::vector<Want> want = {
      {"GPU-a", "GPU-a", "GPU-a", 0, 1, -1, -1, -1},
      {"GPU-b::0", "GPU-b", "GPU-b", 1, -1, -1, -1, 0},
      {"GPU-b::1", "GPU-b", "GPU-b", 1, -1, -1, -1, 1},
      {"MIG-c", "MIG-c", "GPU-c", 2, 0, 3, 0, -1},
  };
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(want[i].id);
    const status::v1::Device& d = resp.devices(static_cast<int>(i));
    EXPECT_EQ(d.id(), want[i].id);
    EXPECT_EQ(d.health(), "Healthy");
    EXPECT_EQ(d.reason(), "");
    EXPECT_EQ(d.visible_id(), want[i].visible_id);
    EXPECT_EQ(d.gpu_uuid(), want[i].gpu_uuid);
    EXPECT_EQ(d.gpu_index(), want[i].gpu_index);
    EXPECT_EQ(d.has_numa_node() ? d.numa_node() : -1, want[i].numa);
    EXPECT_EQ(d.has_mig_gi() ? d.mig_gi() : -1, want[i].gi);
    EXPECT_EQ(d.has_mig_ci() ? d.mig_ci() : -1, want[i].ci);
    EXPECT_EQ(d.has_replica() ? d.replica() : -1, want[i].replica);
  }
}

TEST_F(StatusServiceTest, ShowsHealthAndReasonAsTheyChange) {
  devices_.SetHealth("GPU-b::1", Health::kUnhealthy,
                     "XID 48 (double-bit ECC): unhealthy until reset");
  status::v1::ListResponse resp = List();
  ASSERT_EQ(resp.devices_size(), 4);
  EXPECT_EQ(resp.devices(1).health(), "Healthy");
  EXPECT_EQ(resp.devices(2).health(), "Unhealthy");
  EXPECT_EQ(resp.devices(2).reason(),
            "XID 48 (double-bit ECC): unhealthy until reset");

  devices_.SetHealth("GPU-b::1", Health::kHealthy, "");
  resp = List();
  EXPECT_EQ(resp.devices(2).health(), "Healthy");
  EXPECT_EQ(resp.devices(2).reason(), "");
}

TEST_F(StatusServiceTest, DevicePluginServiceSharesTheSocket) {
  auto plugin = v1beta1::DevicePlugin::NewStub(channel_);
  grpc::ClientContext ctx;
  auto stream = plugin->ListAndWatch(&ctx, {});
  v1beta1::ListAndWatchResponse msg;
  ASSERT_TRUE(stream->Read(&msg));
  EXPECT_EQ(msg.devices_size(), 4);
  ctx.TryCancel();
  while (stream->Read(&msg)) {
  }
  stream->Finish();
}

TEST_F(StatusServiceTest, EmptyResourceListsNothing) {
  DeviceSet empty{{}};
  std::string path = path_ + ".empty";
  auto server = SocketServer::Start(
      path, std::make_unique<DeviceStatusService>(empty, "example.com/none"));
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = status::v1::DeviceStatus::NewStub(
      grpc::CreateChannel("unix:" + path, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  status::v1::ListResponse resp;
  ASSERT_TRUE(stub->List(&ctx, {}, &resp).ok());
  EXPECT_EQ(resp.resource_name(), "example.com/none");
  EXPECT_EQ(resp.devices_size(), 0);
}

}  // namespace
}  // namespace gdp
