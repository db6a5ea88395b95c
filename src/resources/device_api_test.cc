#include "resources/device_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace gdp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

GpuInfo Gpu(unsigned index) {
  GpuInfo g;
  g.index = index;
  g.uuid = absl::StrCat("GPU-", index);
  g.minor = index;
  return g;
}

MigInfo Mig(unsigned index, unsigned gi) {
  MigInfo m;
  m.index = index;
  m.uuid = absl::StrCat("MIG-", gi);
  m.gi = gi;
  return m;
}

// GPUs 0-3; GPU 3 MIG-enabled with MIG devices 3:0 (gi 7) and 3:1 (gi 8).
NodeGpus Node() {
  NodeGpus n;
  n.driver_version = "550.54.15";
  n.cuda_driver_version = 12040;
  for (unsigned i = 0; i < 4; ++i) n.gpus.push_back(Gpu(i));
  n.gpus[3].mig_enabled = true;
  n.gpus[3].migs = {Mig(0, 7), Mig(1, 8)};
  return n;
}

std::vector<std::string> Uuids(const NodeGpus& n) {
  std::vector<std::string> out;
  for (const GpuInfo& g : n.gpus) {
    std::string s = g.uuid;
    if (g.mig_enabled) {
      s += "[";
      for (const MigInfo& m : g.migs) s += m.uuid + " ";
      s += "]";
    }
    out.push_back(s);
  }
  return out;
}

Config WithApi(DeviceApi api, std::optional<SharedDevices> devices) {
  Config c;
  c.device_api = api;
  c.dra.devices = std::move(devices);
  c.mig_strategy = MigStrategy::kMixed;
  return c;
}

SharedDevices List(std::vector<std::string> refs) {
  SharedDevices d;
  d.kind = SharedDevices::Kind::kList;
  d.list = std::move(refs);
  return d;
}

TEST(SplitDeviceApisTest, DevicePluginKeepsEverything) {
  absl::StatusOr<DeviceApiSplit> s =
      SplitDeviceApis(Node(), WithApi(DeviceApi::kDevicePlugin, List({"0"})));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->device_plugin.gpus.size(), 4u);
  EXPECT_THAT(s->dra.gpus, IsEmpty());
  EXPECT_EQ(s->dra.driver_version, "550.54.15");
}

TEST(SplitDeviceApisTest, SplitsByReference) {
  struct Case {
    const char* name;
    DeviceApi api;
    std::optional<SharedDevices> devices;
    std::vector<std::string> device_plugin;
    std::vector<std::string> dra;
  };
  SharedDevices two;
  two.kind = SharedDevices::Kind::kCount;
  two.count = 2;
  const Case cases[] = {
      {"dra, all by default",
       DeviceApi::kDra,
       std::nullopt,
       {},
       {"GPU-0", "GPU-1", "GPU-2", "GPU-3[MIG-7 MIG-8 ]"}},
      {"dra, a list leaves the rest unserved",
       DeviceApi::kDra,
       List({"1", "GPU-2"}),
       {},
       {"GPU-1", "GPU-2"}},
      {"both, by index and UUID",
       DeviceApi::kBoth,
       List({"0", "GPU-2"}),
       {"GPU-1", "GPU-3[MIG-7 MIG-8 ]"},
       {"GPU-0", "GPU-2"}},
      {"both, the first N",
       DeviceApi::kBoth,
       two,
       {"GPU-2", "GPU-3[MIG-7 MIG-8 ]"},
       {"GPU-0", "GPU-1"}},
      {"both, one MIG device by index",
       DeviceApi::kBoth,
       List({"3:1"}),
       {"GPU-0", "GPU-1", "GPU-2", "GPU-3[MIG-7 ]"},
       {"GPU-3[MIG-8 ]"}},
      {"both, one MIG device by UUID, an unknown reference skipped",
       DeviceApi::kBoth,
       List({"MIG-7", "GPU-9", "17"}),
       {"GPU-0", "GPU-1", "GPU-2", "GPU-3[MIG-8 ]"},
       {"GPU-3[MIG-7 ]"}},
      {"both, the whole MIG GPU and one of its MIG devices",
       DeviceApi::kBoth,
       List({"3:0", "3"}),
       {"GPU-0", "GPU-1", "GPU-2"},
       {"GPU-3[MIG-7 MIG-8 ]"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<DeviceApiSplit> s =
        SplitDeviceApis(Node(), WithApi(c.api, c.devices));
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(Uuids(s->device_plugin), c.device_plugin);
    EXPECT_EQ(Uuids(s->dra), c.dra);
  }
}

TEST(SplitDeviceApisTest, RefusesAUnitBothWouldOffer) {
  // MIG strategy none: the device plugin offers GPU 3 whole.
  Config c = WithApi(DeviceApi::kBoth, List({"3:1"}));
  c.mig_strategy = MigStrategy::kNone;
  absl::StatusOr<DeviceApiSplit> s = SplitDeviceApis(Node(), c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("GPU 3 (GPU-3)"));
  EXPECT_THAT(s.status().message(), HasSubstr("MIG strategy none"));

  // Sharing names a GPU DRA serves, or the GPU of a MIG device it serves.
  for (const char* ref : {"2", "GPU-2", "3"}) {
    SCOPED_TRACE(ref);
    Config shared = WithApi(DeviceApi::kBoth, List({"2", "3:0"}));
    shared.sharing.strategy = SharingStrategy::kTimeSlicing;
    SharedResource r;
    r.name = "nvidia.com/gpu";
    r.replicas = 2;
    r.devices = List({"0", ref});
    shared.sharing.resources.push_back(r);
    s = SplitDeviceApis(Node(), shared);
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(s.status().message(),
                HasSubstr("sharing.timeSlicing.resources[0].devices[1]"));
    EXPECT_THAT(s.status().message(), HasSubstr("which DRA serves"));
  }
  // A MIG device the device plugin keeps may be shared.
  Config ok = WithApi(DeviceApi::kBoth, List({"3:0"}));
  ok.sharing.strategy = SharingStrategy::kTimeSlicing;
  SharedResource r;
  r.name = "nvidia.com/mig-1g.10gb";
  r.replicas = 2;
  r.devices = List({"3:1"});
  ok.sharing.resources.push_back(r);
  EXPECT_TRUE(SplitDeviceApis(Node(), ok).ok());
}

TEST(SplitDeviceApisTest, DynamicMigGpuIsDrasAlone) {
  struct Case {
    const char* name;
    bool dynamic_mig;
    DeviceApi api;
    std::optional<SharedDevices> devices;
    // Empty: refused, naming GPU 3 and the gate.
    std::optional<std::vector<std::string>> device_plugin, dra;
  };
  const std::vector<std::string> none;
  const Case cases[] = {
      {"one MIG device of a MIG GPU, both APIs", true, DeviceApi::kBoth,
       List({"3:1"}), std::nullopt, std::nullopt},
      {"one MIG device by UUID, DRA only", true, DeviceApi::kDra,
       List({"MIG-7"}), std::nullopt, std::nullopt},
      {"every MIG device one by one is still not the GPU", true,
       DeviceApi::kBoth, List({"3:0", "3:1"}), std::nullopt, std::nullopt},
      {"the whole MIG GPU", true, DeviceApi::kBoth, List({"3"}),
       std::vector<std::string>{"GPU-0", "GPU-1", "GPU-2"},
       std::vector<std::string>{"GPU-3[MIG-7 MIG-8 ]"}},
      {"the whole MIG GPU and one of its MIG devices", true, DeviceApi::kBoth,
       List({"3:0", "GPU-3"}),
       std::vector<std::string>{"GPU-0", "GPU-1", "GPU-2"},
       std::vector<std::string>{"GPU-3[MIG-7 MIG-8 ]"}},
      {"the MIG GPU left to the device plugin", true, DeviceApi::kBoth,
       List({"0", "1"}),
       std::vector<std::string>{"GPU-2", "GPU-3[MIG-7 MIG-8 ]"},
       std::vector<std::string>{"GPU-0", "GPU-1"}},
      {"every GPU to DRA by default", true, DeviceApi::kBoth, std::nullopt,
       none,
       std::vector<std::string>{"GPU-0", "GPU-1", "GPU-2",
                                "GPU-3[MIG-7 MIG-8 ]"}},
      {"without the gate a MIG device may go alone", false, DeviceApi::kBoth,
       List({"3:1"}),
       std::vector<std::string>{"GPU-0", "GPU-1", "GPU-2", "GPU-3[MIG-7 ]"},
       std::vector<std::string>{"GPU-3[MIG-8 ]"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Config config = WithApi(c.api, c.devices);
    config.feature_gates.dynamic_mig = c.dynamic_mig;
    absl::StatusOr<DeviceApiSplit> s = SplitDeviceApis(Node(), config);
    if (!c.dra.has_value()) {
      ASSERT_FALSE(s.ok());
      EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(s.status().message(), HasSubstr("of GPU 3 (GPU-3)"));
      EXPECT_THAT(s.status().message(), HasSubstr("DynamicMIG"));
      EXPECT_THAT(s.status().message(), HasSubstr("dra.devices"));
      continue;
    }
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(Uuids(s->device_plugin), *c.device_plugin);
    EXPECT_EQ(Uuids(s->dra), *c.dra);
  }
}

TEST(SplitDeviceApisTest, UnusableStayWithTheDevicePlugin) {
  NodeGpus n = Node();
  n.unusable.push_back(LeftOut{.gpu = 9,
                               .mig = std::nullopt,
                               .error = absl::UnavailableError("GPU 9: lost")});
  absl::StatusOr<DeviceApiSplit> s =
      SplitDeviceApis(n, WithApi(DeviceApi::kBoth, List({"0"})));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->device_plugin.unusable.size(), 1u);
  EXPECT_THAT(s->dra.unusable, IsEmpty());
  EXPECT_THAT(Uuids(s->dra), ElementsAre("GPU-0"));
}

}  // namespace
}  // namespace gdp
