#include "dra/inventory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "topology/topology_testing.h"

namespace gdp::dra {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

GpuInfo Gpu(unsigned index) {
  GpuInfo g;
  g.index = index;
  g.uuid = absl::StrCat("GPU-", index);
  g.name = "NVIDIA A100-SXM4-80GB";
  g.brand = "Nvidia";
  g.architecture = "Ampere";
  g.minor = index + 4;
  g.memory_bytes = 80ull << 30;
  g.pci_bus_id = absl::StrCat("0000:0", index, ":00.0");
  g.pcie_root = index < 2 ? "pci0000:00" : "pci0000:01";
  g.numa_node = index < 2 ? 0 : -1;
  g.cc_major = 8;
  return g;
}

NodeGpus Node(int n) {
  NodeGpus node;
  node.driver_version = "535.104.05";
  node.cuda_driver_version = 12020;
  for (int i = 0; i < n; ++i) node.gpus.push_back(Gpu(i));
  return node;
}

MigInfo Mig(unsigned index, unsigned gi, unsigned ci, const char* profile,
            unsigned profile_id, unsigned start, unsigned size) {
  MigInfo m;
  m.index = index;
  m.uuid = absl::StrCat("MIG-", gi, "-", ci);
  m.profile = profile;
  m.gi = gi;
  m.ci = ci;
  m.gi_profile_id = profile_id;
  m.placement_start = start;
  m.placement_size = size;
  m.gi_slices = size;
  m.ci_slices = size;
  m.memory_bytes = 10ull << 30;
  m.multiprocessors = 16;
  m.copy_engines = 1;
  m.jpegs = 1;
  return m;
}

std::vector<std::string> Names(const std::vector<DraDevice>& devices) {
  std::vector<std::string> out;
  for (const DraDevice& d : devices) out.push_back(d.name);
  return out;
}

TEST(SemanticVersionTest, Table) {
  struct Case {
    const char* in;
    const char* out;  // nullptr: refused
  } cases[] = {
      {"550.54.15", "550.54.15"},
      {"535.104.05", "535.104.5"},
      {"12.4", "12.4.0"},
      {"8", "8.0.0"},
      {"0.0.0", "0.0.0"},
      {"1.2.3.4", nullptr},
      {"", nullptr},
      {"550.54.15a", nullptr},
      {"1..2", nullptr},
      {"-1.2", nullptr},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.in);
    absl::StatusOr<std::string> v = SemanticVersion(c.in);
    if (c.out == nullptr) {
      EXPECT_FALSE(v.ok());
    } else {
      ASSERT_TRUE(v.ok()) << v.status();
      EXPECT_EQ(*v, c.out);
    }
  }
}

TEST(DeviceNameTest, NvidiaNames) {
  EXPECT_EQ(GpuDeviceName(Gpu(3)), "gpu-7");
  GpuInfo g = Gpu(0);
  struct Case {
    MigInfo mig;
    const char* name;
  } cases[] = {
      {Mig(0, 9, 0, "1g.10gb", 19, 3, 1), "gpu-4-mig-1g10gb-19-3"},
      {Mig(0, 9, 0, "1g.10gb+me", 20, 6, 1), "gpu-4-mig-1g10gb-me-20-6"},
      {Mig(0, 2, 0, "3g.40gb", 9, 4, 4), "gpu-4-mig-3g40gb-9-4"},
      {Mig(0, 1, 0, "4g.40gb", 5, 0, 4), "gpu-4-mig-4g40gb-5-0"},
  };
  for (const Case& c : cases) EXPECT_EQ(MigDeviceName(g, c.mig), c.name);
  // A compute instance smaller than its GPU instance: one of several.
  MigInfo part = Mig(0, 2, 1, "1c.3g.40gb", 9, 4, 4);
  part.ci_slices = 1;
  part.gi_slices = 3;
  EXPECT_EQ(MigDeviceName(g, part), "gpu-4-mig-1c3g40gb-9-4-ci1");
}

TEST(BuildInventoryTest, GpuAttributesAsNvidiaPublishesThem) {
  absl::StatusOr<std::vector<DraDevice>> inv =
      BuildInventory(Node(3), nullptr, nullptr, {});
  ASSERT_TRUE(inv.ok()) << inv.status();
  EXPECT_THAT(Names(*inv), ElementsAre("gpu-4", "gpu-5", "gpu-6"));
  const DraDevice& d = (*inv)[0];
  EXPECT_EQ(d.attributes.at("type"), AttributeValue::String("gpu"));
  EXPECT_EQ(d.attributes.at("uuid"), AttributeValue::String("GPU-0"));
  EXPECT_EQ(d.attributes.at("productName"),
            AttributeValue::String("NVIDIA A100-SXM4-80GB"));
  EXPECT_EQ(d.attributes.at("brand"), AttributeValue::String("Nvidia"));
  EXPECT_EQ(d.attributes.at("architecture"), AttributeValue::String("Ampere"));
  EXPECT_EQ(d.attributes.at("cudaComputeCapability"),
            AttributeValue::Version("8.0.0"));
  EXPECT_EQ(d.attributes.at("driverVersion"),
            AttributeValue::Version("535.104.5"));
  EXPECT_EQ(d.attributes.at("cudaDriverVersion"),
            AttributeValue::Version("12.2.0"));
  EXPECT_EQ(d.attributes.at("resource.kubernetes.io/pciBusID"),
            AttributeValue::String("0000:00:00.0"));
  EXPECT_EQ(d.attributes.at("resource.kubernetes.io/pcieRoot"),
            AttributeValue::String("pci0000:00"));
  EXPECT_EQ(d.attributes.at("resource.kubernetes.io/numaNode"),
            AttributeValue::Int(0));
  EXPECT_FALSE(d.attributes.contains("gpu.nvidia.com/nvlinkDomain"));
  EXPECT_THAT(d.capacity, ElementsAre(Pair("memory", 80ull << 30)));
  EXPECT_EQ(d.device.id, "gpu-4");
  EXPECT_EQ(d.device.visible_id, "GPU-0");
  EXPECT_EQ(d.device.gpu_uuid, "GPU-0");
  EXPECT_THAT(d.device.device_nodes, ElementsAre("/dev/nvidia4"));
  // NUMA node unknown: no attribute.
  EXPECT_FALSE(
      (*inv)[2].attributes.contains("resource.kubernetes.io/numaNode"));
}

TEST(BuildInventoryTest, NvLinkDomains) {
  // GPUs 0-3 of a 4-GPU PCIe machine (no NVLink), then NVLink 0-1 only.
  NodeGpus node = Node(4);
  std::vector<std::string> uuids = {"GPU-0", "GPU-1", "GPU-2", "GPU-3"};
  NodeTopology pcie(Pcie4(), uuids);
  absl::StatusOr<std::vector<DraDevice>> inv =
      BuildInventory(node, &pcie, nullptr, {});
  ASSERT_TRUE(inv.ok());
  for (const DraDevice& d : *inv) {
    EXPECT_FALSE(d.attributes.contains("gpu.nvidia.com/nvlinkDomain"));
  }
  Topology t = Pcie4();
  t.SetNvLinks(0, 1, 4);
  t.SetNvLinks(2, 3, 2);
  t.SetUsable(3, false);
  NodeTopology linked(t, uuids);
  InventoryOptions x;
  x.driver_name = "x.example.com";
  inv = BuildInventory(node, &linked, nullptr, x);
  ASSERT_TRUE(inv.ok());
  const std::string key = "x.example.com/nvlinkDomain";
  EXPECT_EQ((*inv)[0].attributes.at(key), AttributeValue::String("GPU-0"));
  EXPECT_EQ((*inv)[1].attributes.at(key), AttributeValue::String("GPU-0"));
  // GPU 3 is unusable, so GPU 2 is alone: no domain.
  EXPECT_FALSE((*inv)[2].attributes.contains(key));
  EXPECT_FALSE((*inv)[3].attributes.contains(key));

  // One NVSwitch fabric: every GPU in one domain.
  NodeGpus eight = Node(8);
  std::vector<std::string> all;
  for (const GpuInfo& g : eight.gpus) all.push_back(g.uuid);
  NodeTopology fabric(HgxH100(), all);
  inv = BuildInventory(eight, &fabric, nullptr, {});
  ASSERT_TRUE(inv.ok());
  for (const DraDevice& d : *inv) {
    EXPECT_EQ(d.attributes.at("gpu.nvidia.com/nvlinkDomain"),
              AttributeValue::String("GPU-0"));
  }
}

TEST(BuildInventoryTest, MigDevices) {
  NodeGpus node = Node(2);
  node.gpus[0].mig_enabled = true;
  node.gpus[0].migs = {Mig(0, 2, 0, "3g.40gb", 9, 4, 4),
                       Mig(1, 9, 0, "1g.10gb", 19, 0, 1)};
  node.gpus[1].mig_enabled = true;  // no MIG devices: nothing published
  absl::StatusOr<MigCaps> caps = MigCaps::Parse(
      "gpu4/gi2/access 30\ngpu4/gi2/ci0/access 31\ngpu4/gi9/access 90\n"
      "gpu4/gi9/ci0/access 91\n",
      "mig-minors");
  ASSERT_TRUE(caps.ok()) << caps.status();
  absl::StatusOr<std::vector<DraDevice>> inv =
      BuildInventory(node, nullptr, &*caps, {});
  ASSERT_TRUE(inv.ok()) << inv.status();
  EXPECT_THAT(Names(*inv),
              ElementsAre("gpu-4-mig-3g40gb-9-4", "gpu-4-mig-1g10gb-19-0"));
  const DraDevice& d = (*inv)[0];
  EXPECT_EQ(d.attributes.at("type"), AttributeValue::String("mig"));
  EXPECT_EQ(d.attributes.at("uuid"), AttributeValue::String("MIG-2-0"));
  EXPECT_EQ(d.attributes.at("parentUUID"), AttributeValue::String("GPU-0"));
  EXPECT_EQ(d.attributes.at("profile"), AttributeValue::String("3g.40gb"));
  EXPECT_EQ(d.attributes.at("productName"),
            AttributeValue::String("NVIDIA A100-SXM4-80GB"));
  EXPECT_TRUE(d.attributes.contains("resource.kubernetes.io/pcieRoot"));
  EXPECT_THAT(d.capacity,
              ElementsAre(Pair("copyEngines", 1), Pair("decoders", 0),
                          Pair("encoders", 0), Pair("jpegEngines", 1),
                          Pair("memory", 10ull << 30), Pair("memorySlice4", 1),
                          Pair("memorySlice5", 1), Pair("memorySlice6", 1),
                          Pair("memorySlice7", 1), Pair("multiprocessors", 16),
                          Pair("ofaEngines", 0)));
  EXPECT_THAT(d.device.device_nodes,
              ElementsAre("/dev/nvidia4", "/dev/nvidia-caps/nvidia-cap30",
                          "/dev/nvidia-caps/nvidia-cap31"));
  EXPECT_EQ(d.device.mig_gi, 2);
  EXPECT_EQ(d.device.mig_ci, 0);
  EXPECT_EQ(d.device.visible_id, "MIG-2-0");
  // At most 32 attributes and capacities together.
  for (const DraDevice& x : *inv) {
    EXPECT_LE(x.attributes.size() + x.capacity.size(), 32u) << x.name;
  }

  // Without the capability minors a MIG device cannot be built.
  absl::StatusOr<std::vector<DraDevice>> none =
      BuildInventory(node, nullptr, nullptr, {});
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<MigCaps> partial =
      MigCaps::Parse("gpu4/gi2/access 30\n", "mig-minors");
  ASSERT_TRUE(partial.ok());
  none = BuildInventory(node, nullptr, &*partial, {});
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(), HasSubstr("MIG-2-0"));
}

// An H100 80GB's MIG profiles as NVML reports them (the fake's h100-mig
// machine): name, GPU instance profile ID, memory MiB, SMs, copy engines,
// decoders, JPEG, OFA, placement size and starts.
std::vector<MigProfilePlacements> H100Profiles() {
  const struct {
    const char* name;
    unsigned id;
    uint64_t mib;
    unsigned sms, copy, dec, jpeg, ofa, size;
    std::vector<unsigned> starts;
  } rows[] = {
      {"1g.10gb", 19, 9984, 16, 1, 1, 1, 0, 1, {0, 1, 2, 3, 4, 5, 6}},
      {"2g.20gb", 14, 20096, 32, 2, 2, 2, 0, 2, {0, 2, 4}},
      {"3g.40gb", 9, 40448, 60, 3, 3, 3, 0, 4, {0, 4}},
      {"4g.40gb", 5, 40448, 64, 4, 4, 4, 0, 4, {0}},
      {"7g.80gb", 0, 81152, 132, 8, 7, 7, 1, 8, {0}},
      {"1g.10gb+me", 20, 9984, 16, 1, 1, 1, 1, 1, {0, 1, 2, 3, 4, 5, 6}},
      {"1g.20gb", 15, 20096, 26, 1, 1, 1, 0, 2, {0, 2, 4, 6}},
  };
  std::vector<MigProfilePlacements> out;
  for (const auto& r : rows) {
    MigProfilePlacements p;
    p.name = r.name;
    p.profile_id = r.id;
    p.memory_mib = r.mib;
    p.multiprocessors = r.sms;
    p.copy_engines = r.copy;
    p.decoders = r.dec;
    p.jpegs = r.jpeg;
    p.ofas = r.ofa;
    for (unsigned start : r.starts) p.placements.push_back({start, r.size});
    out.push_back(p);
  }
  return out;
}

// `n` H100s in MIG mode with their profiles read (DynamicMIG).
NodeGpus H100Node(int n) {
  NodeGpus node = Node(n);
  for (GpuInfo& g : node.gpus) {
    g.name = "NVIDIA H100 80GB HBM3";
    g.architecture = "Hopper";
    g.cc_major = 9;
    g.mig_capable = g.mig_enabled = true;
    g.mig_profiles = H100Profiles();
  }
  return node;
}

InventoryOptions DynamicMig() {
  InventoryOptions o;
  o.dynamic_mig = true;
  return o;
}

TEST(BuildInventoryTest, DynamicMigAsNvidiasPartitionableDevices) {
  absl::StatusOr<std::vector<DraDevice>> inv =
      BuildInventory(H100Node(2), nullptr, nullptr, DynamicMig());
  ASSERT_TRUE(inv.ok()) << inv.status();
  // Per GPU: 25 placements (7 + 3 + 2 + 1 + 1 + 7 + 4); no whole GPU, which
  // would need MIG mode off.
  ASSERT_EQ(inv->size(), 50u);
  std::vector<std::string> names = Names(*inv);
  EXPECT_THAT(std::vector<std::string>(names.begin(), names.begin() + 9),
              ElementsAre("gpu-4-mig-1g10gb-19-0", "gpu-4-mig-1g10gb-19-1",
                          "gpu-4-mig-1g10gb-19-2", "gpu-4-mig-1g10gb-19-3",
                          "gpu-4-mig-1g10gb-19-4", "gpu-4-mig-1g10gb-19-5",
                          "gpu-4-mig-1g10gb-19-6", "gpu-4-mig-1g10gb-me-20-0",
                          "gpu-4-mig-1g10gb-me-20-1"));
  EXPECT_TRUE(std::is_sorted(names.begin(), names.begin() + 25));
  EXPECT_EQ(names[24], "gpu-4-mig-7g80gb-0-0");
  EXPECT_EQ(names[25], "gpu-5-mig-1g10gb-19-0");
  EXPECT_THAT(names, ::testing::Not(::testing::Contains("gpu-4")));
  EXPECT_THAT(names, ::testing::Contains("gpu-4-mig-1g10gb-me-20-6"));
  EXPECT_THAT(names, ::testing::Contains("gpu-5-mig-7g80gb-0-0"));

  // The counter set, brought by each GPU's first device only.
  const CounterSet want_set{"gpu-4-counter-set",
                            {{"copy-engines", 8},
                             {"decoders", 7},
                             {"encoders", 0},
                             {"jpeg-engines", 7},
                             {"memory", 81152ull << 20},
                             {"memory-slice-0", 1},
                             {"memory-slice-1", 1},
                             {"memory-slice-2", 1},
                             {"memory-slice-3", 1},
                             {"memory-slice-4", 1},
                             {"memory-slice-5", 1},
                             {"memory-slice-6", 1},
                             {"memory-slice-7", 1},
                             {"multiprocessors", 132},
                             {"ofa-engines", 1}}};
  ASSERT_TRUE((*inv)[0].shared_counters.has_value());
  EXPECT_EQ(*(*inv)[0].shared_counters, want_set);
  ASSERT_TRUE((*inv)[25].shared_counters.has_value());
  EXPECT_EQ((*inv)[25].shared_counters->name, "gpu-5-counter-set");
  for (size_t i = 0; i < inv->size(); ++i) {
    if (i != 0 && i != 25) {
      EXPECT_FALSE((*inv)[i].shared_counters.has_value()) << names[i];
    }
  }

  // The 7g placement is the whole GPU: all of the counter set.
  const DraDevice& all = (*inv)[24];
  EXPECT_EQ(all.attributes.at("profile"), AttributeValue::String("7g.80gb"));
  EXPECT_THAT(
      all.consumes_counters,
      ElementsAre(CounterConsumption{"gpu-4-counter-set", want_set.counters}));

  // A placement: NVIDIA's MIG attributes without a UUID (nothing made
  // yet), its profile's capacities (no memorySlice capacities), consuming
  // them and its memory slices.
  const DraDevice* p = nullptr;
  for (const DraDevice& d : *inv) {
    if (d.name == "gpu-4-mig-3g40gb-9-4") p = &d;
  }
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->attributes.at("type"), AttributeValue::String("mig"));
  EXPECT_FALSE(p->attributes.contains("uuid"));
  EXPECT_EQ(p->attributes.at("parentUUID"), AttributeValue::String("GPU-0"));
  EXPECT_EQ(p->attributes.at("profile"), AttributeValue::String("3g.40gb"));
  EXPECT_EQ(p->attributes.at("productName"),
            AttributeValue::String("NVIDIA H100 80GB HBM3"));
  EXPECT_EQ(p->attributes.at("driverVersion"),
            AttributeValue::Version("535.104.5"));
  EXPECT_EQ(p->attributes.at("resource.kubernetes.io/pciBusID"),
            AttributeValue::String("0000:00:00.0"));
  EXPECT_EQ(p->attributes.at("resource.kubernetes.io/numaNode"),
            AttributeValue::Int(0));
  EXPECT_EQ(p->attributes.at("gpu.nvidia.com/memoryLimits"),
            AttributeValue::String("none"));
  EXPECT_FALSE(p->attributes.contains("gpu.nvidia.com/nvlinkDomain"));
  EXPECT_THAT(p->capacity,
              ElementsAre(Pair("copyEngines", 3), Pair("decoders", 3),
                          Pair("encoders", 0), Pair("jpegEngines", 3),
                          Pair("memory", 40448ull << 20),
                          Pair("multiprocessors", 60), Pair("ofaEngines", 0)));
  EXPECT_THAT(p->consumes_counters,
              ElementsAre(CounterConsumption{"gpu-4-counter-set",
                                             {{"copy-engines", 3},
                                              {"decoders", 3},
                                              {"encoders", 0},
                                              {"jpeg-engines", 3},
                                              {"memory", 40448ull << 20},
                                              {"memory-slice-4", 1},
                                              {"memory-slice-5", 1},
                                              {"memory-slice-6", 1},
                                              {"memory-slice-7", 1},
                                              {"multiprocessors", 60},
                                              {"ofa-engines", 0}}}));
  // Health: the GPU's, whichever instance fails (mig_gi -1); no nodes
  // until the instance is made at prepare.
  EXPECT_EQ(p->device.id, p->name);
  EXPECT_EQ(p->device.gpu_uuid, "GPU-0");
  EXPECT_EQ(p->device.mig_gi, -1);
  EXPECT_THAT(p->device.device_nodes, IsEmpty());
  EXPECT_EQ(p->device.memory_bytes, 40448ull << 20);

  // Within the API's limits: 32 attributes and capacities, 32 counters a
  // set and a consumption, one consumption each.
  for (const DraDevice& d : *inv) {
    SCOPED_TRACE(d.name);
    EXPECT_LE(d.attributes.size() + d.capacity.size(), 32u);
    ASSERT_EQ(d.consumes_counters.size(), 1u);
    EXPECT_LE(d.consumes_counters[0].counters.size(), kMaxCountersPerSet);
    for (const auto& [counter, value] : d.consumes_counters[0].counters) {
      EXPECT_TRUE(want_set.counters.contains(counter)) << counter;
      EXPECT_LE(value, want_set.counters.at(counter)) << counter;
    }
  }
}

TEST(BuildInventoryTest, DynamicMigWhichGpus) {
  struct Case {
    const char* what;
    std::function<void(NodeGpus&, InventoryOptions&)> edit;
    std::vector<std::string> first;  // names of GPU 0's first devices
    size_t size;
  } cases[] = {
      // Partitions only (the first brings the counter set): no whole GPU,
      // which NVIDIA's offers on Hopper by turning MIG mode off.
      {"Hopper: partitions only",
       [](NodeGpus&, InventoryOptions&) {},
       {"gpu-4-mig-1g10gb-19-0", "gpu-4-mig-1g10gb-19-1"},
       25},
      {"Ampere: partitions only",
       [](NodeGpus& n, InventoryOptions&) { n.gpus[0].cc_major = 8; },
       {"gpu-4-mig-1g10gb-19-0", "gpu-4-mig-1g10gb-19-1"},
       25},
      // Without the gate the profiles change nothing (MIG enabled, no MIG
      // devices: nothing published).
      {"gate off",
       [](NodeGpus&, InventoryOptions& o) { o.dynamic_mig = false; },
       {},
       0},
      // A GPU without profiles (MIG off, or not read) is a plain GPU.
      {"no profiles",
       [](NodeGpus& n, InventoryOptions&) {
         n.gpus[0].mig_profiles.clear();
         n.gpus[0].mig_enabled = false;
       },
       {"gpu-4"},
       1},
      // More memory slices than a counter set may hold: as without the
      // gate.
      {"too many counters",
       [](NodeGpus& n, InventoryOptions&) {
         n.gpus[0].mig_profiles[4].placements = {{0, 26}};
       },
       {},
       0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    NodeGpus node = H100Node(1);
    InventoryOptions o = DynamicMig();
    c.edit(node, o);
    absl::StatusOr<std::vector<DraDevice>> inv =
        BuildInventory(node, nullptr, nullptr, o);
    ASSERT_TRUE(inv.ok()) << inv.status();
    EXPECT_EQ(inv->size(), c.size);
    std::vector<std::string> names = Names(*inv);
    names.resize(std::min(names.size(), c.first.size()));
    EXPECT_EQ(names, c.first);
    if (!inv->empty() && o.dynamic_mig && !node.gpus[0].mig_profiles.empty()) {
      EXPECT_TRUE(inv->front().shared_counters.has_value());
    }
  }
}

TEST(DeviceNameTest, PlacementsAndCounters) {
  GpuInfo g = Gpu(1);
  EXPECT_EQ(MigPlacementName(g, "1g.10gb", 19, 3), "gpu-5-mig-1g10gb-19-3");
  EXPECT_EQ(MigPlacementName(g, "1g.10gb+me", 20, 0),
            "gpu-5-mig-1g10gb-me-20-0");
  EXPECT_EQ(MigPlacementName(g, "1g.12gb+gfx", 32, 2),
            "gpu-5-mig-1g12gb-gfx-32-2");
  EXPECT_EQ(CounterSetName(g), "gpu-5-counter-set");
  EXPECT_EQ(MemorySliceCounter(7), "memory-slice-7");
}

InventoryOptions Shares(ConsumableShares::Mode mode, int count = 0,
                        bool enforceable = true) {
  InventoryOptions o;
  o.shares.mode = mode;
  o.shares.count = count;
  o.nvml_has_memory_limits = enforceable;
  o.cgroup2_mount = "/sys/fs/cgroup";
  return o;
}

// An R615 node: the limits can be enforced.
NodeGpus Node615(int n) {
  NodeGpus node = Node(n);
  node.driver_version = "615.10";
  return node;
}

constexpr uint64_t kMi = 1ull << 20;

TEST(BuildInventoryTest, MemoryLimitsAttributeOnEveryDevice) {
  absl::StatusOr<std::vector<DraDevice>> inv =
      BuildInventory(Node615(1), nullptr, nullptr, Shares({}));
  ASSERT_TRUE(inv.ok());
  const DraDevice& d = (*inv)[0];
  EXPECT_EQ(d.attributes.at("gpu.nvidia.com/memoryLimits"),
            AttributeValue::String("enforced"));
  EXPECT_TRUE(d.memory_limits.enforced);
  // Whole, as without shares: no consumable shape.
  EXPECT_FALSE(d.allow_multiple_allocations);
  EXPECT_THAT(d.request_policies, IsEmpty());
  EXPECT_THAT(d.capacity, ElementsAre(Pair("memory", 80ull << 30)));

  inv = BuildInventory(Node(1), nullptr, nullptr, {});  // driver 535
  ASSERT_TRUE(inv.ok());
  EXPECT_EQ((*inv)[0].attributes.at("gpu.nvidia.com/memoryLimits"),
            AttributeValue::String("none"));
  EXPECT_EQ((*inv)[0].memory_limits.reason,
            "NVML has no memory-limit calls (nvmlDeviceSetMemoryLimits_v1; "
            "driver 535.104.05, R615 needed)");
}

// NVIDIA's consumable_shares.go, mode by mode.
TEST(BuildInventoryTest, ConsumableSharesAsNvidias) {
  using Mode = ConsumableShares::Mode;
  NodeGpus node = Node615(1);
  node.gpus[0].memory_bytes = (80ull << 30) + 12345;  // not 1Mi-aligned
  const uint64_t max = 80ull << 30;

  absl::StatusOr<std::vector<DraDevice>> inv =
      BuildInventory(node, nullptr, nullptr, Shares(Mode::kMemory));
  ASSERT_TRUE(inv.ok());
  EXPECT_TRUE((*inv)[0].allow_multiple_allocations);
  EXPECT_THAT((*inv)[0].capacity, ElementsAre(Pair("memory", max)));
  EXPECT_THAT((*inv)[0].request_policies,
              ElementsAre(Pair("memory", RequestPolicy{.default_value = max,
                                                       .min = kMi,
                                                       .max = max,
                                                       .step = kMi})));

  inv = BuildInventory(node, nullptr, nullptr, Shares(Mode::kUnlimited));
  ASSERT_TRUE(inv.ok());
  EXPECT_TRUE((*inv)[0].allow_multiple_allocations);
  EXPECT_THAT((*inv)[0].request_policies,
              ElementsAre(Pair(
                  "memory",
                  RequestPolicy{
                      .default_value = 0, .min = 0, .max = max, .step = kMi})));

  inv = BuildInventory(node, nullptr, nullptr, Shares(Mode::kCount, 4));
  ASSERT_TRUE(inv.ok());
  EXPECT_THAT((*inv)[0].capacity,
              ElementsAre(Pair("memory", max), Pair("shares", 4)));
  EXPECT_THAT(
      (*inv)[0].request_policies,
      ElementsAre(
          Pair("memory",
               RequestPolicy{
                   .default_value = 0, .min = 0, .max = max, .step = kMi}),
          Pair("shares",
               RequestPolicy{
                   .default_value = 1, .min = 1, .max = 4, .step = 1})));
}

TEST(BuildInventoryTest, UnenforceableGpusStayWholeUnlessAllowed) {
  using Mode = ConsumableShares::Mode;
  InventoryOptions o = Shares(Mode::kMemory, 0, /*enforceable=*/false);
  absl::StatusOr<std::vector<DraDevice>> inv =
      BuildInventory(Node(2), nullptr, nullptr, o);
  ASSERT_TRUE(inv.ok());
  for (const DraDevice& d : *inv) {
    EXPECT_FALSE(d.allow_multiple_allocations) << d.name;
    EXPECT_THAT(d.request_policies, IsEmpty());
    EXPECT_EQ(d.attributes.at("gpu.nvidia.com/memoryLimits"),
              AttributeValue::String("none"));
    EXPECT_FALSE(d.memory_limits.enforced);
  }
  o.unenforced = UnenforcedShares::kAllow;  // as NVIDIA's driver
  inv = BuildInventory(Node(2), nullptr, nullptr, o);
  ASSERT_TRUE(inv.ok());
  for (const DraDevice& d : *inv) {
    EXPECT_TRUE(d.allow_multiple_allocations) << d.name;
    EXPECT_EQ(d.attributes.at("gpu.nvidia.com/memoryLimits"),
              AttributeValue::String("none"));
  }
  // No cgroup v2: the same refusal.
  o = Shares(Mode::kMemory);
  o.cgroup2_mount.reset();
  inv = BuildInventory(Node615(1), nullptr, nullptr, o);
  ASSERT_TRUE(inv.ok());
  EXPECT_FALSE((*inv)[0].allow_multiple_allocations);
  EXPECT_THAT((*inv)[0].memory_limits.reason, HasSubstr("cgroup v2"));
}

// NVIDIA gives MIG devices the shape too; the driver never limits them, so
// by default they stay whole here.
TEST(BuildInventoryTest, MigDevicesNeverEnforce) {
  NodeGpus node = Node615(2);
  node.gpus[0].mig_enabled = true;
  node.gpus[0].migs = {Mig(0, 9, 0, "1g.10gb", 19, 0, 1)};
  absl::StatusOr<MigCaps> caps = MigCaps::Parse(
      "gpu4/gi9/access 90\ngpu4/gi9/ci0/access 91\n", "mig-minors");
  ASSERT_TRUE(caps.ok());
  InventoryOptions o = Shares(ConsumableShares::Mode::kMemory);
  absl::StatusOr<std::vector<DraDevice>> inv =
      BuildInventory(node, nullptr, &*caps, o);
  ASSERT_TRUE(inv.ok()) << inv.status();
  ASSERT_THAT(Names(*inv), ElementsAre("gpu-4-mig-1g10gb-19-0", "gpu-5"));
  const DraDevice& mig = (*inv)[0];
  EXPECT_FALSE(mig.allow_multiple_allocations);
  EXPECT_EQ(mig.attributes.at("gpu.nvidia.com/memoryLimits"),
            AttributeValue::String("none"));
  EXPECT_EQ(mig.memory_limits.reason,
            "GPU 0 is in MIG mode: the driver limits the memory of whole "
            "GPUs only");
  EXPECT_TRUE((*inv)[1].allow_multiple_allocations);  // GPU 1, no MIG

  o.unenforced = UnenforcedShares::kAllow;
  inv = BuildInventory(node, nullptr, &*caps, o);
  ASSERT_TRUE(inv.ok());
  EXPECT_TRUE((*inv)[0].allow_multiple_allocations);
  EXPECT_EQ((*inv)[0].request_policies.at("memory").max, 10ull << 30);
  EXPECT_LE((*inv)[0].attributes.size() + (*inv)[0].capacity.size(), 32u);
}

TEST(ApplyConsumableSharesTest, TooLittleMemoryStaysWhole) {
  DraDevice d;
  d.capacity["memory"] = 2 * kMi - 1;  // min 1Mi + a step would exceed it
  ApplyConsumableShares({ConsumableShares::Mode::kMemory, 0}, &d);
  EXPECT_FALSE(d.allow_multiple_allocations);
  DraDevice no_memory;
  ApplyConsumableShares({ConsumableShares::Mode::kCount, 3}, &no_memory);
  EXPECT_FALSE(no_memory.allow_multiple_allocations);
  EXPECT_THAT(no_memory.capacity, IsEmpty());
}

TEST(BuildInventoryTest, EmptyNode) {
  absl::StatusOr<std::vector<DraDevice>> inv =
      BuildInventory(Node(0), nullptr, nullptr, {});
  ASSERT_TRUE(inv.ok());
  EXPECT_THAT(*inv, IsEmpty());
}

}  // namespace
}  // namespace gdp::dra
