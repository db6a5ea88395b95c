#include "resources/resources.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "absl/strings/str_cat.h"

namespace gdp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

GpuInfo Gpu(unsigned index, std::string name = "NVIDIA H100 80GB HBM3") {
  GpuInfo g;
  g.index = index;
  g.uuid = absl::StrCat("GPU-", index);
  g.name = std::move(name);
  g.minor = index + 10;
  g.memory_bytes = 80ull << 30;
  g.numa_node = static_cast<int>(index % 2);
  g.cc_major = 9;
  return g;
}

MigInfo Mig(unsigned index, std::string profile, unsigned gi, unsigned ci) {
  MigInfo m;
  m.index = index;
  m.uuid = absl::StrCat("MIG-", gi, "-", ci);
  m.profile = std::move(profile);
  m.gi = gi;
  m.ci = ci;
  m.memory_bytes = 10ull << 30;
  return m;
}

// GPU 0: MIG with 3g.40gb, 1g.10gb, 1g.10gb; GPU 1: no MIG.
NodeGpus MixedNode() {
  NodeGpus n;
  n.gpus = {Gpu(0), Gpu(1)};
  n.gpus[0].mig_enabled = true;
  n.gpus[0].migs = {Mig(0, "3g.40gb", 2, 0), Mig(1, "1g.10gb", 9, 0),
                    Mig(2, "1g.10gb", 10, 0)};
  return n;
}

// mig-minors text for GPU minor 10, GPU instances 2, 9, 10 (compute
// instance 0 each), leaving out the line named `skip`.
std::string MinorsText(const std::string& skip = "") {
  std::string text = "config 1\nmonitor 2\n";
  for (int gi : {2, 9, 10}) {
    std::string a = absl::StrCat("gpu10/gi", gi, "/access");
    std::string b = absl::StrCat("gpu10/gi", gi, "/ci0/access");
    if (a != skip) absl::StrAppend(&text, a, " ", 100 + gi, "\n");
    if (b != skip) absl::StrAppend(&text, b, " ", 200 + gi, "\n");
  }
  return text;
}

MigCaps Caps(const std::string& text = MinorsText()) {
  auto caps = MigCaps::Parse(text, "mig-minors");
  EXPECT_TRUE(caps.ok()) << caps.status();
  return *std::move(caps);
}

SharedResource Shared(std::string name, int replicas, std::string rename = "",
                      SharedDevices devices = {}) {
  SharedResource r;
  r.name = std::move(name);
  r.rename = std::move(rename);
  r.devices = std::move(devices);
  r.replicas = replicas;
  return r;
}

std::vector<std::string> Names(const std::vector<Resource>& rs) {
  std::vector<std::string> out;
  for (const Resource& r : rs) out.push_back(r.name);
  return out;
}

std::vector<std::string> Ids(const Resource& r) {
  std::vector<std::string> out;
  for (const Device& d : r.devices) out.push_back(d.id);
  return out;
}

TEST(ResourcesTest, WholeGpusByUuidAndIndex) {
  NodeGpus node;
  node.gpus = {Gpu(0), Gpu(1)};
  Config c;
  auto rs = BuildResources(node, c, nullptr);
  ASSERT_TRUE(rs.ok()) << rs.status();
  ASSERT_THAT(Names(*rs), ElementsAre("nvidia.com/gpu"));
  EXPECT_EQ((*rs)[0].socket_name, "nvidia-gpu.sock");
  EXPECT_THAT(Ids((*rs)[0]), ElementsAre("GPU-0", "GPU-1"));
  const Device& d = (*rs)[0].devices[1];
  EXPECT_THAT(d.device_nodes, ElementsAre("/dev/nvidia11"));
  EXPECT_EQ(d.numa_node, 1);
  EXPECT_EQ(d.gpu_uuid, "GPU-1");
  EXPECT_EQ(d.replica, -1);

  c.device_id_strategy = DeviceIdStrategy::kIndex;
  rs = BuildResources(node, c, nullptr);
  ASSERT_TRUE(rs.ok());
  EXPECT_THAT(Ids((*rs)[0]), ElementsAre("0", "1"));
}

TEST(ResourcesTest, MigNoneAdvertisesWholeGpus) {
  auto rs = BuildResources(MixedNode(), Config{}, nullptr);
  ASSERT_TRUE(rs.ok());
  ASSERT_THAT(Names(*rs), ElementsAre("nvidia.com/gpu"));
  EXPECT_THAT(Ids((*rs)[0]), ElementsAre("GPU-0", "GPU-1"));
}

TEST(ResourcesTest, MigMixedOneResourcePerProfile) {
  Config c;
  c.mig_strategy = MigStrategy::kMixed;
  MigCaps caps = Caps();
  auto rs = BuildResources(MixedNode(), c, &caps);
  ASSERT_TRUE(rs.ok()) << rs.status();
  ASSERT_THAT(Names(*rs),
              ElementsAre("nvidia.com/gpu", "nvidia.com/mig-1g.10gb",
                          "nvidia.com/mig-3g.40gb"));
  EXPECT_THAT(Ids((*rs)[0]), ElementsAre("GPU-1"));
  EXPECT_THAT(Ids((*rs)[1]), ElementsAre("MIG-9-0", "MIG-10-0"));
  EXPECT_EQ((*rs)[1].socket_name, "nvidia-mig-1g.10gb.sock");
  const Device& d = (*rs)[2].devices[0];
  EXPECT_THAT(d.device_nodes,
              ElementsAre("/dev/nvidia10", "/dev/nvidia-caps/nvidia-cap102",
                          "/dev/nvidia-caps/nvidia-cap202"));
  EXPECT_EQ(d.mig_gi, 2);
  EXPECT_EQ(d.mig_ci, 0);
  EXPECT_EQ(d.gpu_uuid, "GPU-0");

  c.device_id_strategy = DeviceIdStrategy::kIndex;
  rs = BuildResources(MixedNode(), c, &caps);
  ASSERT_TRUE(rs.ok());
  EXPECT_THAT(Ids((*rs)[1]), ElementsAre("0:1", "0:2"));
  EXPECT_EQ((*rs)[1].devices[0].visible_id, "0:1");
}

TEST(ResourcesTest, MigSingle) {
  NodeGpus node = MixedNode();
  node.gpus[1].mig_enabled = true;
  node.gpus[0].migs = {Mig(0, "1g.10gb", 9, 0)};
  node.gpus[1].migs = {Mig(0, "1g.10gb", 9, 0)};
  node.gpus[1].migs[0].uuid = "MIG-other";
  MigCaps caps =
      Caps(MinorsText() + "gpu11/gi9/access 300\ngpu11/gi9/ci0/access 301\n");
  Config c;
  c.mig_strategy = MigStrategy::kSingle;
  auto rs = BuildResources(node, c, &caps);
  ASSERT_TRUE(rs.ok()) << rs.status();
  ASSERT_THAT(Names(*rs), ElementsAre("nvidia.com/gpu"));
  EXPECT_THAT(Ids((*rs)[0]), ElementsAre("MIG-9-0", "MIG-other"));

  NodeGpus plain;
  plain.gpus = {Gpu(0)};
  rs = BuildResources(plain, c, nullptr);
  ASSERT_TRUE(rs.ok()) << "no MIG GPU: whole GPUs";
  EXPECT_THAT(Ids((*rs)[0]), ElementsAre("GPU-0"));
}

TEST(ResourcesTest, Refusals) {
  struct Case {
    std::string name;
    std::function<void(NodeGpus&, Config&, std::string&)> mutate;
    std::string message;
  } cases[] = {
      {"single with a non-MIG GPU",
       [](NodeGpus&, Config& c, std::string&) {
         c.mig_strategy = MigStrategy::kSingle;
       },
       "GPU 1 (GPU-1) has MIG disabled"},
      {"single with two profiles",
       [](NodeGpus& n, Config& c, std::string&) {
         c.mig_strategy = MigStrategy::kSingle;
         n.gpus.pop_back();
       },
       "several profiles (1g.10gb, 3g.40gb)"},
      {"single with an empty MIG GPU",
       [](NodeGpus& n, Config& c, std::string&) {
         c.mig_strategy = MigStrategy::kSingle;
         n.gpus.pop_back();
         n.gpus[0].migs.clear();
       },
       "has MIG enabled but no MIG devices"},
      {"missing capability minor",
       [](NodeGpus&, Config& c, std::string& m) {
         c.mig_strategy = MigStrategy::kMixed;
         m = MinorsText("gpu10/gi9/ci0/access");
       },
       "MIG device MIG-9-0"},
      {"MPS on MIG",
       [](NodeGpus&, Config& c, std::string&) {
         c.mig_strategy = MigStrategy::kMixed;
         c.sharing.strategy = SharingStrategy::kMps;
         c.sharing.resources = {Shared("nvidia.com/mig-1g.10gb", 2)};
       },
       "MPS sharing is not supported on MIG devices"},
      {"MPS over 16 below compute 7.5",
       [](NodeGpus& n, Config& c, std::string&) {
         n.gpus[1].cc_major = 7;
         n.gpus[1].cc_minor = 0;
         c.sharing.strategy = SharingStrategy::kMps;
         c.sharing.resources = {Shared("nvidia.com/gpu", 17)};
       },
       "at most 16 clients"},
      {"MPS over 48",
       [](NodeGpus&, Config& c, std::string&) {
         c.sharing.strategy = SharingStrategy::kMps;
         c.sharing.resources = {Shared("nvidia.com/gpu", 49)};
       },
       "at most 48 clients"},
      {"rename onto an existing resource",
       [](NodeGpus&, Config& c, std::string&) {
         c.mig_strategy = MigStrategy::kMixed;
         c.sharing.strategy = SharingStrategy::kTimeSlicing;
         c.sharing.resources = {
             Shared("nvidia.com/gpu", 2, "nvidia.com/mig-1g.10gb")};
       },
       "already a resource"},
  };
  for (const Case& tc : cases) {
    NodeGpus node = MixedNode();
    Config c;
    std::string minors = MinorsText();
    tc.mutate(node, c, minors);
    MigCaps caps = Caps(minors);
    auto rs = BuildResources(node, c, &caps);
    ASSERT_FALSE(rs.ok()) << tc.name;
    EXPECT_THAT(std::string(rs.status().message()), HasSubstr(tc.message))
        << tc.name;
  }
}

TEST(ResourcesTest, TimeSlicing) {
  NodeGpus node;
  node.gpus = {Gpu(0), Gpu(1)};
  struct Case {
    std::string name;
    Sharing sharing;
    std::vector<std::string> names;
    std::vector<std::vector<std::string>> ids;
  } cases[] = {
      {"all, same name",
       {SharingStrategy::kTimeSlicing,
        false,
        false,
        {Shared("nvidia.com/gpu", 2)}},
       {"nvidia.com/gpu"},
       {{"GPU-0::0", "GPU-0::1", "GPU-1::0", "GPU-1::1"}}},
      {"renameByDefault",
       {SharingStrategy::kTimeSlicing,
        true,
        false,
        {Shared("nvidia.com/gpu", 2)}},
       {"nvidia.com/gpu.shared"},
       {{"GPU-0::0", "GPU-0::1", "GPU-1::0", "GPU-1::1"}}},
      {"rename, one GPU by index",
       {SharingStrategy::kTimeSlicing,
        false,
        false,
        {Shared("nvidia.com/gpu", 3, "nvidia.com/shared-gpu",
                {SharedDevices::Kind::kList, 0, {"1"}})}},
       {"nvidia.com/gpu", "nvidia.com/shared-gpu"},
       {{"GPU-0"}, {"GPU-1::0", "GPU-1::1", "GPU-1::2"}}},
      {"first N, same name keeps the rest whole",
       {SharingStrategy::kTimeSlicing,
        false,
        false,
        {Shared("nvidia.com/gpu", 2, "",
                {SharedDevices::Kind::kCount, 1, {}})}},
       {"nvidia.com/gpu"},
       {{"GPU-1", "GPU-0::0", "GPU-0::1"}}},
      {"by UUID; unknown refs ignored",
       {SharingStrategy::kTimeSlicing,
        false,
        false,
        {Shared("nvidia.com/gpu", 2, "",
                {SharedDevices::Kind::kList, 0, {"GPU-1", "GPU-9"}})}},
       {"nvidia.com/gpu"},
       {{"GPU-0", "GPU-1::0", "GPU-1::1"}}},
      {"resource absent on this node",
       {SharingStrategy::kTimeSlicing,
        false,
        false,
        {Shared("nvidia.com/mig-1g.10gb", 2)}},
       {"nvidia.com/gpu"},
       {{"GPU-0", "GPU-1"}}},
  };
  for (const Case& tc : cases) {
    Config c;
    c.sharing = tc.sharing;
    auto rs = BuildResources(node, c, nullptr);
    ASSERT_TRUE(rs.ok()) << tc.name << ": " << rs.status();
    EXPECT_EQ(Names(*rs), tc.names) << tc.name;
    for (size_t i = 0; i < rs->size() && i < tc.ids.size(); ++i) {
      EXPECT_EQ(Ids((*rs)[i]), tc.ids[i]) << tc.name;
    }
  }
}

TEST(ResourcesTest, ReplicasCarryTheirUnitAndSharing) {
  NodeGpus node;
  node.gpus = {Gpu(0)};
  Config c;
  c.sharing = {
      SharingStrategy::kMps, false, true, {Shared("nvidia.com/gpu", 4)}};
  auto rs = BuildResources(node, c, nullptr);
  ASSERT_TRUE(rs.ok()) << rs.status();
  const Resource& r = (*rs)[0];
  EXPECT_EQ(r.sharing, SharingStrategy::kMps);
  EXPECT_EQ(r.replicas, 4);
  EXPECT_TRUE(r.fail_requests_greater_than_one);
  ASSERT_EQ(r.devices.size(), 4u);
  EXPECT_EQ(r.devices[3].visible_id, "GPU-0");
  EXPECT_EQ(r.devices[3].replica, 3);
  EXPECT_THAT(r.devices[3].device_nodes, ElementsAre("/dev/nvidia10"));
}

TEST(ResourcesTest, NamePatterns) {
  NodeGpus node;
  node.gpus = {Gpu(0, "Tesla T4"), Gpu(1, "NVIDIA A100-SXM4-40GB")};
  Config c;
  c.gpu_resources = {{"*A100*", "nvidia.com/a100"}};
  auto rs = BuildResources(node, c, nullptr);
  ASSERT_TRUE(rs.ok());
  ASSERT_THAT(Names(*rs), ElementsAre("nvidia.com/a100"));
  EXPECT_THAT(Ids((*rs)[0]), ElementsAre("GPU-1"));
  EXPECT_EQ((*rs)[0].socket_name, "nvidia-a100.sock");

  c.gpu_resources.push_back({"*", "nvidia.com/other"});
  rs = BuildResources(node, c, nullptr);
  ASSERT_TRUE(rs.ok());
  EXPECT_THAT(Names(*rs), ElementsAre("nvidia.com/a100", "nvidia.com/other"));

  Config mixed;
  mixed.mig_strategy = MigStrategy::kMixed;
  mixed.mig_resources = {{"1g.*", "nvidia.com/small-mig"}};
  MigCaps caps = Caps();
  rs = BuildResources(MixedNode(), mixed, &caps);
  ASSERT_TRUE(rs.ok());
  EXPECT_THAT(Names(*rs),
              ElementsAre("nvidia.com/gpu", "nvidia.com/small-mig"));
}

// memoryPerReplica: carried by the resource; replicas x share must fit
// each shared GPU; MIG devices cannot be limited.
TEST(ResourcesTest, MemoryPerReplica) {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  NodeGpus node = MixedNode();
  node.gpus[1].memory_bytes = 80 * kGiB + (uint64_t{1} << 20);
  Config c;
  c.mig_strategy = MigStrategy::kMixed;
  c.device_list_strategies = {DeviceListStrategy::kCdiCri};
  c.sharing.strategy = SharingStrategy::kTimeSlicing;
  c.sharing.resources = {Shared("nvidia.com/gpu", 4)};
  c.sharing.resources[0].memory_per_replica = 20 * kGiB;  // 4 x 20 = 80
  MigCaps caps = Caps();
  auto rs = BuildResources(node, c, &caps);
  ASSERT_TRUE(rs.ok()) << rs.status();
  const Resource* gpu = nullptr;
  for (const Resource& r : *rs) {
    if (r.name == "nvidia.com/gpu") gpu = &r;
  }
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->memory_per_replica, 20 * kGiB);
  EXPECT_EQ(gpu->devices.size(), 4u);
  Resource other = *gpu;
  other.memory_per_replica = 10 * kGiB;
  EXPECT_FALSE(gpu->SameDefinition(other));

  c.sharing.resources[0].memory_per_replica = 20 * kGiB + (1 << 20);
  rs = BuildResources(node, c, &caps);
  ASSERT_FALSE(rs.ok());
  EXPECT_EQ(rs.status().message(),
            "sharing: nvidia.com/gpu: memoryPerReplica 20481 MiB times 4 "
            "replicas does not fit GPU 1 (GPU-1, 81921 MiB; at most 20480 "
            "MiB per replica)");

  c.sharing.resources = {Shared("nvidia.com/mig-1g.10gb", 2)};
  c.sharing.resources[0].memory_per_replica = kGiB;
  rs = BuildResources(node, c, &caps);
  ASSERT_FALSE(rs.ok());
  EXPECT_THAT(rs.status().message(),
              HasSubstr("nvidia.com/mig-1g.10gb: memoryPerReplica cannot be "
                        "enforced on MIG device MIG-9-0"));
}

TEST(ResourcesTest, SameDefinitionIgnoresHealth) {
  NodeGpus node;
  node.gpus = {Gpu(0)};
  auto a = BuildResources(node, Config{}, nullptr);
  auto b = BuildResources(node, Config{}, nullptr);
  ASSERT_TRUE(a.ok() && b.ok());
  (*b)[0].devices[0].health = Health::kUnhealthy;
  EXPECT_TRUE((*a)[0].SameDefinition((*b)[0]));
  (*b)[0].devices[0].numa_node = 5;
  EXPECT_FALSE((*a)[0].SameDefinition((*b)[0]));
}

}  // namespace
}  // namespace gdp
