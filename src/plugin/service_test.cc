// The DevicePlugin service over a real unix socket, as the kubelet uses it.
#include "plugin/service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "plugin/plugin_server.h"
#include "plugin/wire.h"

namespace gdp {
namespace {

using ::testing::HasSubstr;

std::vector<Device> Devices() {
  std::vector<Device> out;
  for (int i = 0; i < 3; ++i) {
    Device d;
    d.id = "GPU-" + std::to_string(i);
    d.visible_id = d.id;
    d.device_nodes = {"/dev/nvidia" + std::to_string(i)};
    d.numa_node = i == 2 ? -1 : i;
    out.push_back(d);
  }
  return out;
}

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = "/tmp/gdp-service-test-" + std::to_string(getpid()) + ".sock";
    auto server = PluginServer::Start(
        path_, std::make_unique<DevicePluginService>(devices_, allocator_));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ = v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(
        "unix:" + path_, grpc::InsecureChannelCredentials()));
  }

  grpc::Status Allocate(std::vector<std::vector<std::string>> containers,
                        v1beta1::AllocateResponse* resp) {
    v1beta1::AllocateRequest req;
    for (const auto& ids : containers) {
      auto* c = req.add_container_requests();
      for (const auto& id : ids) c->add_devices_ids(id);
    }
    grpc::ClientContext ctx;
    return stub_->Allocate(&ctx, req, resp);
  }

  std::string path_;
  DeviceSet devices_{Devices()};
  Allocator allocator_{AllocatorOptions{}};
  std::unique_ptr<PluginServer> server_;
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
};

TEST_F(ServiceTest, OptionsOfferPreferredAllocation) {
  grpc::ClientContext ctx;
  v1beta1::DevicePluginOptions opts;
  ASSERT_TRUE(stub_->GetDevicePluginOptions(&ctx, {}, &opts).ok());
  EXPECT_TRUE(opts.get_preferred_allocation_available());
  EXPECT_FALSE(opts.pre_start_required());
}

TEST_F(ServiceTest, ListAndWatchSendsListThenEveryChange) {
  grpc::ClientContext ctx;
  auto stream = stub_->ListAndWatch(&ctx, {});
  v1beta1::ListAndWatchResponse msg;
  ASSERT_TRUE(stream->Read(&msg));
  ASSERT_EQ(msg.devices_size(), 3);
  EXPECT_EQ(msg.devices(0).id(), "GPU-0");
  EXPECT_EQ(msg.devices(0).health(), kHealthy);
  ASSERT_EQ(msg.devices(1).topology().nodes_size(), 1);
  EXPECT_EQ(msg.devices(1).topology().nodes(0).id(), 1);
  EXPECT_FALSE(msg.devices(2).has_topology());  // unknown NUMA: left out

  devices_.SetHealth("GPU-1", Health::kUnhealthy, "XID 79");
  ASSERT_TRUE(stream->Read(&msg));
  EXPECT_EQ(msg.devices(1).health(), kUnhealthy);

  devices_.SetHealth("GPU-1", Health::kHealthy, "");
  ASSERT_TRUE(stream->Read(&msg));
  EXPECT_EQ(msg.devices(1).health(), kHealthy);

  // Server shutdown ends the stream promptly.
  server_.reset();
  EXPECT_FALSE(stream->Read(&msg));
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(ServiceTest, AllocateAnswersEachContainer) {
  v1beta1::AllocateResponse resp;
  ASSERT_TRUE(Allocate({{"GPU-0", "GPU-2"}, {"GPU-1"}}, &resp).ok());
  ASSERT_EQ(resp.container_responses_size(), 2);
  EXPECT_EQ(resp.container_responses(0).envs().at("NVIDIA_VISIBLE_DEVICES"),
            "GPU-0,GPU-2");
  EXPECT_EQ(resp.container_responses(1).envs().at("NVIDIA_VISIBLE_DEVICES"),
            "GPU-1");
}

TEST_F(ServiceTest, BadAllocateIsRefusedAndServingGoesOn) {
  devices_.SetHealth("GPU-2", Health::kUnhealthy, "GPU is lost");
  struct Case {
    std::vector<std::vector<std::string>> containers;
    grpc::StatusCode code;
    const char* message;
  } cases[] = {
      {{}, grpc::StatusCode::INVALID_ARGUMENT, "no container requests"},
      {{{}}, grpc::StatusCode::INVALID_ARGUMENT, "names no devices"},
      {{{"GPU-0"}, {"GPU-7"}},
       grpc::StatusCode::INVALID_ARGUMENT,
       "container request 1: unknown device ID 'GPU-7'"},
      {{{"GPU-0", "GPU-0"}},
       grpc::StatusCode::INVALID_ARGUMENT,
       "'GPU-0' is requested more than once"},
      {{{"GPU-2"}},
       grpc::StatusCode::FAILED_PRECONDITION,
       "'GPU-2' is unhealthy: GPU is lost"},
  };
  for (const Case& c : cases) {
    v1beta1::AllocateResponse resp;
    grpc::Status s = Allocate(c.containers, &resp);
    EXPECT_EQ(s.error_code(), c.code) << c.message;
    EXPECT_THAT(s.error_message(), HasSubstr(c.message));
    EXPECT_EQ(resp.container_responses_size(), 0);
  }
  v1beta1::AllocateResponse resp;
  EXPECT_TRUE(Allocate({{"GPU-1"}}, &resp).ok());
}

TEST_F(ServiceTest, PreferredAllocation) {
  v1beta1::PreferredAllocationRequest req;
  auto* c = req.add_container_requests();
  for (const char* id : {"GPU-0", "GPU-1", "GPU-2"})
    c->add_available_deviceids(id);
  c->add_must_include_deviceids("GPU-1");
  c->set_allocation_size(1);
  v1beta1::PreferredAllocationResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub_->GetPreferredAllocation(&ctx, req, &resp).ok());
  ASSERT_EQ(resp.container_responses_size(), 1);
  EXPECT_THAT(resp.container_responses(0).deviceids(),
              ::testing::ElementsAre("GPU-1"));

  c->set_allocation_size(9);
  grpc::ClientContext ctx2;
  grpc::Status s = stub_->GetPreferredAllocation(&ctx2, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace gdp
