#include "labels/labels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gdp {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Key;
using ::testing::Not;
using ::testing::Pair;

constexpr uint64_t kMiB = uint64_t{1} << 20;

GpuInfo Gpu(unsigned index, const std::string& name, uint64_t mib, int major,
            int minor) {
  GpuInfo g;
  g.index = index;
  g.uuid = "GPU-" + std::to_string(index);
  g.name = name;
  g.memory_bytes = mib * kMiB;
  g.pci_bus_id = "0000:0" + std::to_string(index) + ":00.0";
  g.cc_major = major;
  g.cc_minor = minor;
  return g;
}

MigInfo Mig(unsigned index, const std::string& profile, uint64_t mib,
            unsigned gi_slices) {
  MigInfo m;
  m.index = index;
  m.profile = profile;
  m.memory_bytes = mib * kMiB;
  m.gi_slices = gi_slices;
  m.ci_slices = gi_slices;
  m.multiprocessors = 16 * gi_slices;
  m.copy_engines = gi_slices;
  m.decoders = gi_slices;
  m.jpegs = 1;
  m.ofas = 0;
  return m;
}

NodeGpus T4s(int n) {
  NodeGpus node;
  node.driver_version = "550.54.15";
  node.cuda_driver_version = 12040;
  for (int i = 0; i < n; ++i)
    node.gpus.push_back(Gpu(i, "Tesla T4", 15360, 7, 5));
  return node;
}

NodeFacts Facts(const NodeGpus& node) {
  NodeFacts f;
  f.machine_type = "PowerEdge R740 (x)";
  f.pci_classes.assign(node.gpus.size(), 0x030200u);
  return f;
}

Labels Compute(const NodeGpus& node, const Config& c) {
  absl::StatusOr<Labels> l = ComputeLabels(node, c, Facts(node));
  EXPECT_TRUE(l.ok()) << l.status();
  return l.ok() ? *l : Labels{};
}

TEST(LabelsTest, SanitiseAsGfd) {
  struct Case {
    const char* in;
    const char* want;
  } cases[] = {
      {"Tesla T4", "Tesla-T4"},
      {"NVIDIA A100-SXM4-80GB", "NVIDIA-A100-SXM4-80GB"},
      {"  NVIDIA  H100 80GB HBM3 ", "NVIDIA-H100-80GB-HBM3"},
      {"PowerEdge R740 (x)", "PowerEdge-R740-x"},
      {"a/b:c_d.e", "abc_d.e"},
      {"", ""},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(SanitiseLabelValue(c.in), c.want) << c.in;
  }
}

TEST(LabelsTest, FamilyFromComputeCapability) {
  struct Case {
    int major, minor;
    const char* want;
  } cases[] = {
      {3, 7, "kepler"},     {5, 2, "maxwell"},    {6, 0, "pascal"},
      {7, 0, "volta"},      {7, 2, "volta"},      {7, 5, "turing"},
      {8, 0, "ampere"},     {8, 6, "ampere"},     {8, 9, "ada-lovelace"},
      {9, 0, "hopper"},     {10, 0, "blackwell"}, {12, 0, "blackwell"},
      {11, 0, "undefined"}, {4, 0, "undefined"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(GpuFamily(c.major, c.minor), c.want) << c.major << "." << c.minor;
  }
}

TEST(LabelsTest, ModeFromPciClasses) {
  using Classes = std::vector<absl::StatusOr<uint32_t>>;
  struct Case {
    Classes classes;
    const char* want;
  } cases[] = {
      {{0x030200u, 0x030200u}, "compute"},
      {{0x030000u}, "graphics"},
      {{0x030000u, 0x030200u}, "unknown"},
      {{0x030200u, absl::NotFoundError("x")}, "unknown"},
      {{0x068000u}, "unknown"},
      {{}, "unknown"},
  };
  for (const Case& c : cases) EXPECT_EQ(GpuMode(c.classes), c.want);
}

// The labels of two T4s without sharing, checked against GFD by hand.
TEST(LabelsTest, FullGpusWithoutSharing) {
  NodeGpus node = T4s(2);
  NodeFacts facts = Facts(node);
  facts.timestamp = absl::FromUnixSeconds(1700000000);
  absl::StatusOr<Labels> l = ComputeLabels(node, Config(), facts);
  ASSERT_TRUE(l.ok()) << l.status();
  Labels want = {
      {"nvidia.com/cuda.driver-version.full", "550.54.15"},
      {"nvidia.com/cuda.driver-version.major", "550"},
      {"nvidia.com/cuda.driver-version.minor", "54"},
      {"nvidia.com/cuda.driver-version.revision", "15"},
      {"nvidia.com/cuda.driver.major", "550"},
      {"nvidia.com/cuda.driver.minor", "54"},
      {"nvidia.com/cuda.driver.rev", "15"},
      {"nvidia.com/cuda.runtime-version.full", "12.4"},
      {"nvidia.com/cuda.runtime-version.major", "12"},
      {"nvidia.com/cuda.runtime-version.minor", "4"},
      {"nvidia.com/cuda.runtime.major", "12"},
      {"nvidia.com/cuda.runtime.minor", "4"},
      {"nvidia.com/gfd.timestamp", "1700000000"},
      {"nvidia.com/gpu.compute.major", "7"},
      {"nvidia.com/gpu.compute.minor", "5"},
      {"nvidia.com/gpu.count", "2"},
      {"nvidia.com/gpu.family", "turing"},
      {"nvidia.com/gpu.machine", "PowerEdge-R740-x"},
      {"nvidia.com/gpu.memory", "15360"},
      {"nvidia.com/gpu.mode", "compute"},
      {"nvidia.com/gpu.product", "Tesla-T4"},
      {"nvidia.com/gpu.replicas", "1"},
      {"nvidia.com/gpu.sharing-strategy", "none"},
      {"nvidia.com/mig.capable", "false"},
      {"nvidia.com/mps.capable", "false"},
  };
  EXPECT_EQ(*l, want);
}

TEST(LabelsTest, OperatorConditionLabelsOnlyWhenTrue) {
  NodeGpus node = T4s(2);
  NodeFacts facts = Facts(node);
  absl::StatusOr<Labels> l = ComputeLabels(node, Config(), facts);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->count("nvidia.com/gpu.pcie-degraded"), 0u);
  EXPECT_EQ(l->count("nvidia.com/gpu.throttled"), 0u);
  facts.pcie_degraded = true;
  facts.throttled = true;
  l = ComputeLabels(node, Config(), facts);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->at("nvidia.com/gpu.pcie-degraded"), "true");
  EXPECT_EQ(l->at("nvidia.com/gpu.throttled"), "true");
  // Without GPUs there is nothing to say.
  l = ComputeLabels(NodeGpus(), Config(), facts);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->count("nvidia.com/gpu.throttled"), 0u);
}

TEST(LabelsTest, DriverVersionForms) {
  NodeGpus node = T4s(1);
  node.driver_version = "535.104";
  Labels l = Compute(node, Config());
  EXPECT_EQ(l["nvidia.com/cuda.driver-version.revision"], "");
  EXPECT_EQ(l["nvidia.com/cuda.driver.rev"], "");
  EXPECT_EQ(l["nvidia.com/cuda.driver-version.full"], "535.104");
  node.cuda_driver_version = 11080;
  EXPECT_EQ(Compute(node, Config())["nvidia.com/cuda.runtime-version.full"],
            "11.8");
  for (const char* bad : {"550", "1.2.3.4", ""}) {
    node.driver_version = bad;
    absl::StatusOr<Labels> l = ComputeLabels(node, Config(), Facts(node));
    EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(LabelsTest, NoGpusOnlyTimestamp) {
  NodeGpus node;
  NodeFacts facts;
  facts.timestamp = absl::FromUnixSeconds(42);
  absl::StatusOr<Labels> l = ComputeLabels(node, Config(), facts);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(*l, (Labels{{"nvidia.com/gfd.timestamp", "42"}}));
  facts.timestamp.reset();
  EXPECT_TRUE(ComputeLabels(node, Config(), facts)->empty());
}

Sharing TimeSlicing(int replicas, const std::string& rename = "",
                    bool by_default = false,
                    const std::string& name = "nvidia.com/gpu") {
  Sharing s;
  s.strategy = SharingStrategy::kTimeSlicing;
  s.rename_by_default = by_default;
  s.resources.push_back({name, rename, {}, replicas});
  return s;
}

TEST(LabelsTest, SharingTable) {
  struct Case {
    const char* name;
    Sharing sharing;
    const char* product;
    const char* replicas;
    const char* strategy;
  } cases[] = {
      {"none", Sharing(), "Tesla-T4", "1", "none"},
      {"time-slicing", TimeSlicing(4), "Tesla-T4-SHARED", "4", "time-slicing"},
      {"renamed", TimeSlicing(4, "nvidia.com/t4"), "Tesla-T4", "4",
       "time-slicing"},
      {"rename by default", TimeSlicing(4, "", true), "Tesla-T4", "4",
       "time-slicing"},
      {"another resource", TimeSlicing(4, "", false, "nvidia.com/mig-1g.5gb"),
       "Tesla-T4", "1", "none"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Config config;
    config.sharing = c.sharing;
    Labels l = Compute(T4s(2), config);
    EXPECT_EQ(l["nvidia.com/gpu.product"], c.product);
    EXPECT_EQ(l["nvidia.com/gpu.replicas"], c.replicas);
    EXPECT_EQ(l["nvidia.com/gpu.sharing-strategy"], c.strategy);
    EXPECT_EQ(l["nvidia.com/gpu.count"], "2");
    EXPECT_EQ(l["nvidia.com/mps.capable"], "false");
  }
}

TEST(LabelsTest, MpsCapableOnlyWithMpsAndWithoutMig) {
  Config config;
  config.sharing = TimeSlicing(2);
  config.sharing.strategy = SharingStrategy::kMps;
  NodeGpus node = T4s(1);
  Labels l = Compute(node, config);
  EXPECT_EQ(l["nvidia.com/mps.capable"], "true");
  EXPECT_EQ(l["nvidia.com/gpu.sharing-strategy"], "mps");
  EXPECT_EQ(l["nvidia.com/gpu.product"], "Tesla-T4-SHARED");

  node.gpus[0].mig_capable = node.gpus[0].mig_enabled = true;
  absl::StatusOr<Labels> refused = ComputeLabels(node, config, Facts(node));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("GPU 0 has MIG enabled"));
}

NodeGpus H100s(int n, bool mig) {
  NodeGpus node;
  node.driver_version = "550.54.15";
  node.cuda_driver_version = 12040;
  for (int i = 0; i < n; ++i) {
    GpuInfo g = Gpu(i, "NVIDIA H100 80GB HBM3", 81559, 9, 0);
    g.mig_capable = true;
    g.mig_enabled = mig;
    node.gpus.push_back(g);
  }
  return node;
}

TEST(LabelsTest, MigSingle) {
  NodeGpus node = H100s(2, true);
  for (GpuInfo& g : node.gpus) {
    g.migs = {Mig(0, "1g.10gb", 9984, 1), Mig(1, "1g.10gb", 9984, 1)};
  }
  Config config;
  config.mig_strategy = MigStrategy::kSingle;
  Labels l = Compute(node, config);
  EXPECT_EQ(l["nvidia.com/mig.strategy"], "single");
  EXPECT_EQ(l["nvidia.com/mig.capable"], "true");
  EXPECT_EQ(l["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb");
  EXPECT_EQ(l["nvidia.com/gpu.count"], "4");
  EXPECT_EQ(l["nvidia.com/gpu.replicas"], "1");
  EXPECT_EQ(l["nvidia.com/gpu.memory"], "9984");
  EXPECT_EQ(l["nvidia.com/gpu.multiprocessors"], "16");
  EXPECT_EQ(l["nvidia.com/gpu.slices.gi"], "1");
  EXPECT_EQ(l["nvidia.com/gpu.slices.ci"], "1");
  EXPECT_EQ(l["nvidia.com/gpu.engines.copy"], "1");
  EXPECT_EQ(l["nvidia.com/gpu.engines.ofa"], "0");
  // From the full GPU labeller.
  EXPECT_EQ(l["nvidia.com/gpu.family"], "hopper");

  config.sharing = TimeSlicing(3);
  l = Compute(node, config);
  EXPECT_EQ(l["nvidia.com/gpu.product"],
            "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb-SHARED");
  EXPECT_EQ(l["nvidia.com/gpu.replicas"], "3");
  EXPECT_EQ(l["nvidia.com/gpu.sharing-strategy"], "time-slicing");
}

TEST(LabelsTest, MigSingleInvalid) {
  struct Case {
    const char* name;
    std::function<void(NodeGpus&)> change;
  } cases[] = {
      {"a GPU without MIG devices",
       [](NodeGpus& n) { n.gpus[1].migs.clear(); }},
      {"one GPU with MIG disabled",
       [](NodeGpus& n) {
         n.gpus[1].mig_enabled = false;
         n.gpus[1].migs.clear();
       }},
      {"two profiles",
       [](NodeGpus& n) { n.gpus[1].migs[0] = Mig(0, "3g.40gb", 40192, 3); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    NodeGpus node = H100s(2, true);
    for (GpuInfo& g : node.gpus) g.migs = {Mig(0, "1g.10gb", 9984, 1)};
    c.change(node);
    Config config;
    config.mig_strategy = MigStrategy::kSingle;
    Labels l = Compute(node, config);
    EXPECT_EQ(l["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3-MIG-INVALID");
    EXPECT_EQ(l["nvidia.com/gpu.count"], "0");
    EXPECT_EQ(l["nvidia.com/gpu.replicas"], "0");
    EXPECT_EQ(l["nvidia.com/gpu.sharing-strategy"], "");
    EXPECT_EQ(l["nvidia.com/gpu.memory"], "0");
  }
}

TEST(LabelsTest, MigMixed) {
  NodeGpus node = H100s(2, false);
  node.gpus[0].mig_enabled = true;
  node.gpus[0].migs = {Mig(0, "3g.40gb", 40192, 3), Mig(1, "1g.10gb", 9984, 1),
                       Mig(2, "1g.10gb", 9984, 1),
                       Mig(3, "1g.20gb+me", 19968, 1)};
  Config config;
  config.mig_strategy = MigStrategy::kMixed;
  config.sharing = TimeSlicing(2, "", false, "nvidia.com/mig-1g.10gb");
  Labels l = Compute(node, config);
  EXPECT_EQ(l["nvidia.com/mig.strategy"], "mixed");
  EXPECT_EQ(l["nvidia.com/mig-3g.40gb.count"], "1");
  EXPECT_EQ(l["nvidia.com/mig-3g.40gb.product"],
            "NVIDIA-H100-80GB-HBM3-MIG-3g.40gb");
  EXPECT_EQ(l["nvidia.com/mig-3g.40gb.replicas"], "1");
  EXPECT_EQ(l["nvidia.com/mig-3g.40gb.memory"], "40192");
  EXPECT_EQ(l["nvidia.com/mig-3g.40gb.slices.gi"], "3");
  EXPECT_EQ(l["nvidia.com/mig-1g.10gb.count"], "2");
  EXPECT_EQ(l["nvidia.com/mig-1g.10gb.product"],
            "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb-SHARED");
  EXPECT_EQ(l["nvidia.com/mig-1g.10gb.replicas"], "2");
  EXPECT_EQ(l["nvidia.com/mig-1g.10gb.sharing-strategy"], "time-slicing");
  // '+' in a profile name becomes '.'.
  EXPECT_EQ(l["nvidia.com/mig-1g.20gb.me.product"],
            "NVIDIA-H100-80GB-HBM3-MIG-1g.20gb.me");
  // The full GPU (MIG disabled) gives nvidia.com/gpu.*, counting both GPUs
  // of the model as GFD does.
  EXPECT_EQ(l["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(l["nvidia.com/gpu.count"], "2");
  EXPECT_EQ(l["nvidia.com/gpu.replicas"], "1");
}

// Under none, a GPU with MIG enabled is labelled without sharing.
TEST(LabelsTest, MigEnabledGpuUnderNone) {
  NodeGpus node = H100s(1, true);
  Config config;
  config.sharing = TimeSlicing(4);
  Labels l = Compute(node, config);
  EXPECT_EQ(l["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(l["nvidia.com/gpu.replicas"], "0");
  EXPECT_EQ(l["nvidia.com/gpu.sharing-strategy"], "none");
  EXPECT_THAT(l, Not(Contains(Key("nvidia.com/mig.strategy"))));
}

TEST(LabelsTest, SeveralModelsTheMostCommonWins) {
  NodeGpus node = T4s(1);
  node.gpus.push_back(Gpu(1, "NVIDIA L40S", 46068, 8, 9));
  node.gpus.push_back(Gpu(2, "NVIDIA L40S", 46068, 8, 9));
  Labels l = Compute(node, Config());
  EXPECT_EQ(l["nvidia.com/gpu.product"], "NVIDIA-L40S");
  EXPECT_EQ(l["nvidia.com/gpu.count"], "2");
  EXPECT_EQ(l["nvidia.com/gpu.family"], "ada-lovelace");
  EXPECT_EQ(l["nvidia.com/gpu.memory"], "46068");
  node.gpus.pop_back();  // one each: the lowest index wins
  l = Compute(node, Config());
  EXPECT_EQ(l["nvidia.com/gpu.product"], "Tesla-T4");
  EXPECT_EQ(l["nvidia.com/gpu.count"], "1");
  EXPECT_EQ(l["nvidia.com/gpu.family"], "turing");
}

TEST(LabelsTest, MissingPciClassesMakeModeUnknown) {
  NodeGpus node = T4s(2);
  NodeFacts facts = Facts(node);
  facts.pci_classes.pop_back();
  EXPECT_THAT(*ComputeLabels(node, Config(), facts),
              Contains(Pair("nvidia.com/gpu.mode", "unknown")));
}

}  // namespace
}  // namespace gdp
