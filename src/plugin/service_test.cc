// The DevicePlugin service over a real unix socket, as the kubelet uses it.
#include "plugin/service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "plugin/wire.h"
#include "rpc/socket_server.h"
#include "testing/temp_dir.h"

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
    Serve(std::make_unique<DevicePluginService>(devices_, allocator_));
  }

  void Serve(std::unique_ptr<DevicePluginService> service) {
    auto server = SocketServer::Start(path_, std::move(service));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ = v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(
        "unix:" + path_, grpc::InsecureChannelCredentials()));
  }

  grpc::Status Preferred(const std::vector<std::string>& available,
                         const std::vector<std::string>& must, int size,
                         std::vector<std::string>* chosen) {
    v1beta1::PreferredAllocationRequest req;
    auto* c = req.add_container_requests();
    for (const auto& id : available) c->add_available_deviceids(id);
    for (const auto& id : must) c->add_must_include_deviceids(id);
    c->set_allocation_size(size);
    v1beta1::PreferredAllocationResponse resp;
    grpc::ClientContext ctx;
    grpc::Status s = stub_->GetPreferredAllocation(&ctx, req, &resp);
    chosen->clear();
    if (s.ok() && resp.container_responses_size() == 1) {
      for (const auto& id : resp.container_responses(0).deviceids()) {
        chosen->push_back(id);
      }
    }
    return s;
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

  const gdp::testing::TempDir tmp_{"service"};
  const std::string path_ = tmp_.File("s.sock");
  DeviceSet devices_{Devices()};
  Allocator allocator_{AllocatorOptions{}};
  std::unique_ptr<SocketServer> server_;
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

// An ID of any size or bytes is answered with its reason, quoted and cut:
// a 1 MiB ID once made an error over gRPC's 8 KiB metadata limit (the
// client saw RESOURCE_EXHAUSTED) and a newline forged log lines.
TEST_F(ServiceTest, HugeOrForgedIdsAreQuotedAndCut) {
  v1beta1::AllocateResponse resp;
  grpc::Status s = Allocate({{std::string(1 << 20, 'x')}}, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("(+1048480 bytes)"));
  EXPECT_LT(s.error_message().size(), 512u);

  s = Allocate({{"GPU-0\nE1124 forged line\x1b[31m"}}, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr("'GPU-0\\nE1124 forged line\\x1b[31m'"));
  EXPECT_EQ(s.error_message().find('\n'), std::string::npos);
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

// Two GPUs with 4 replicas each, served with every device-list strategy,
// MPS, device specs and the packed policy.
std::vector<Device> SharedDevices() {
  std::vector<Device> out;
  for (int g = 0; g < 2; ++g) {
    for (int k = 0; k < 4; ++k) {
      Device d;
      d.visible_id = "GPU-" + std::to_string(g);
      d.id = d.visible_id + "::" + std::to_string(k);
      d.replica = k;
      d.device_nodes = {"/dev/nvidia" + std::to_string(g)};
      d.gpu_index = g;
      d.memory_bytes = uint64_t{8} << 30;
      out.push_back(d);
    }
  }
  return out;
}

AllocatorOptions SharedOptions() {
  AllocatorOptions o;
  o.pass_device_specs = true;
  o.dev_root = "/nonexistent";
  o.strategies = {
      DeviceListStrategy::kEnvvar, DeviceListStrategy::kVolumeMounts,
      DeviceListStrategy::kCdiAnnotations, DeviceListStrategy::kCdiCri};
  o.sharing = SharingStrategy::kMps;
  o.replicas = 4;
  o.mps_root = "/run/mps";
  return o;
}

class SharedServiceTest : public ServiceTest {
 protected:
  void SetUp() override {
    Serve(std::make_unique<DevicePluginService>(
        shared_, shared_allocator_,
        ServiceOptions{
            .shared_allocation_policy = SharedAllocationPolicy::kPacked,
            .topology = nullptr,
            .resource_name = "nvidia.com/gpu.shared",
            .open_streams = nullptr}));
  }

  DeviceSet shared_{SharedDevices()};
  Allocator shared_allocator_{SharedOptions()};
};

TEST_F(SharedServiceTest, AllocateSendsEveryEdit) {
  v1beta1::AllocateResponse resp;
  ASSERT_TRUE(Allocate({{"GPU-1::2", "GPU-0::0", "GPU-1::3"}}, &resp).ok());
  ASSERT_EQ(resp.container_responses_size(), 1);
  const v1beta1::ContainerAllocateResponse& c = resp.container_responses(0);
  EXPECT_EQ(c.envs().at("NVIDIA_VISIBLE_DEVICES"),
            "/var/run/nvidia-container-devices");
  EXPECT_EQ(c.envs().at("CUDA_MPS_PIPE_DIRECTORY"), "/mps/nvidia.com/gpu/pipe");
  EXPECT_EQ(c.envs().at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "25");
  // Two replicas of GPU 1: two shares of its memory.
  EXPECT_EQ(c.envs().at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=2048M,1=4096M");
  std::vector<std::string> mounts;
  for (const v1beta1::Mount& m : c.mounts()) {
    mounts.push_back(m.host_path() + " -> " + m.container_path());
    EXPECT_FALSE(m.read_only());
  }
  EXPECT_THAT(mounts,
              ::testing::ElementsAre(
                  "/run/mps/nvidia.com/gpu/pipe -> /mps/nvidia.com/gpu/pipe",
                  "/run/mps/shm -> /dev/shm",
                  "/dev/null -> /var/run/nvidia-container-devices/GPU-1",
                  "/dev/null -> /var/run/nvidia-container-devices/GPU-0"));
  ASSERT_EQ(c.devices_size(), 2);
  EXPECT_EQ(c.devices(0).container_path(), "/dev/nvidia1");
  EXPECT_EQ(c.devices(0).host_path(), "/nonexistent/dev/nvidia1");
  EXPECT_EQ(c.devices(0).permissions(), "rw");
  ASSERT_EQ(c.annotations_size(), 1);
  EXPECT_THAT(c.annotations().begin()->first,
              ::testing::StartsWith("cdi.k8s.io/nvidia-device-plugin_"));
  EXPECT_EQ(c.annotations().begin()->second,
            "k8s.device-plugin.nvidia.com/gpu=GPU-1,"
            "k8s.device-plugin.nvidia.com/gpu=GPU-0");
  ASSERT_EQ(c.cdi_devices_size(), 2);
  EXPECT_EQ(c.cdi_devices(0).name(), "k8s.device-plugin.nvidia.com/gpu=GPU-1");
  EXPECT_EQ(c.cdi_devices(1).name(), "k8s.device-plugin.nvidia.com/gpu=GPU-0");
}

TEST_F(SharedServiceTest, PreferredAllocationUsesThePolicy) {
  // Packed: GPU-1 is the more used one (two replicas taken), so both
  // replicas come from it.
  std::vector<std::string> chosen;
  ASSERT_TRUE(Preferred({"GPU-0::0", "GPU-0::1", "GPU-0::2", "GPU-0::3",
                         "GPU-1::2", "GPU-1::3"},
                        {}, 2, &chosen)
                  .ok());
  EXPECT_THAT(chosen, ::testing::ElementsAre("GPU-1::2", "GPU-1::3"));

  // Distributed (the default): one replica on each GPU.
  server_.reset();
  Serve(std::make_unique<DevicePluginService>(shared_, shared_allocator_));
  ASSERT_TRUE(Preferred({"GPU-0::0", "GPU-0::1", "GPU-0::2", "GPU-0::3",
                         "GPU-1::2", "GPU-1::3"},
                        {}, 2, &chosen)
                  .ok());
  EXPECT_THAT(chosen, ::testing::ElementsAre("GPU-0::0", "GPU-1::2"));
}

// GetPreferredAllocation reads the topology on every call: a new one
// applies at once, and none at all means NUMA only.
class TopologyServiceTest : public ServiceTest {
 protected:
  void SetUp() override {
    std::vector<Device> devices = Devices();
    for (Device& d : devices) d.gpu_uuid = d.id;
    gpus_ = std::make_unique<DeviceSet>(devices);
    Serve(std::make_unique<DevicePluginService>(
        *gpus_, allocator_,
        ServiceOptions{
            .shared_allocation_policy = SharedAllocationPolicy::kDistributed,
            .topology = topology_,
            .resource_name = "nvidia.com/gpu",
            .open_streams = nullptr}));
  }

  // Three GPUs with one NVLink between `a` and `b`.
  void Link(int a, int b) {
    Topology t = *Topology::Create(3);
    t.SetNvLinks(a, b, 1);
    topology_->Set(std::make_shared<NodeTopology>(
        t, std::vector<std::string>{"GPU-0", "GPU-1", "GPU-2"}));
  }

  std::unique_ptr<DeviceSet> gpus_;
  std::shared_ptr<SharedTopology> topology_ =
      std::make_shared<SharedTopology>();
};

TEST_F(TopologyServiceTest, UsesTheCurrentTopology) {
  const std::vector<std::string> all = {"GPU-0", "GPU-1", "GPU-2"};
  std::vector<std::string> chosen;
  // No topology yet: NUMA decides (each GPU is alone on its node).
  ASSERT_TRUE(Preferred(all, {}, 2, &chosen).ok());
  EXPECT_THAT(chosen, ::testing::ElementsAre("GPU-0", "GPU-2"));
  Link(1, 2);
  ASSERT_TRUE(Preferred(all, {}, 2, &chosen).ok());
  EXPECT_THAT(chosen, ::testing::ElementsAre("GPU-1", "GPU-2"));
  Link(0, 1);
  ASSERT_TRUE(Preferred(all, {}, 2, &chosen).ok());
  EXPECT_THAT(chosen, ::testing::ElementsAre("GPU-0", "GPU-1"));
}

}  // namespace
}  // namespace gdp
