#include "device/gpu.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "device/device.h"
#include "nvml/nvml.h"
#include "testing/temp_dir.h"
#include "util/fifo_testing.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;

TEST(ReadNumaNodeTest, AFifoDoesNotBlock) {
  const gdp::testing::TempDir tmp("numa-fifo");
  const fs::path sys = tmp.path();
  const fs::path dir = sys / "bus/pci/devices/0000:07:00.0";
  fs::create_directories(dir);
  int node = 7;
  EXPECT_TRUE(testing::ReturnsWithFifoInPlace(
      (dir / "numa_node").string(),
      [&] { node = ReadNumaNode(sys.string(), "0000:07:00.0"); }));
  EXPECT_EQ(node, -1);
}

TEST(ReadNumaNodeTest, Table) {
  const gdp::testing::TempDir tmp("numa");
  const fs::path sys = tmp.path();
  struct Case {
    const char* bus_id;
    const char* content;  // nullptr: no file
    int want;
  } cases[] = {
      {"0000:07:00.0", "1\n", 1},    {"0000:0f:00.0", "0", 0},
      {"0000:47:00.0", "-1\n", -1},  {"0000:4e:00.0", "junk", -1},
      {"0000:87:00.0", nullptr, -1},
  };
  for (const Case& c : cases) {
    fs::path dir = sys / "bus/pci/devices" / c.bus_id;
    fs::create_directories(dir);
    if (c.content != nullptr) std::ofstream(dir / "numa_node") << c.content;
    EXPECT_EQ(ReadNumaNode(sys.string(), c.bus_id), c.want) << c.bus_id;
  }
}

class DiscoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "drv/usr/lib64");
    Start(std::string(GDP_MACHINES_DIR) + "/dgx-a100.yaml");
  }
  void TearDown() override {
    nvml_.reset();
    unsetenv("FAKE_NVML_CONTROL");
  }

  // (Re)opens NVML from `library` on machine file `machine`, with a fixture
  // root for it under root/.
  void Start(const std::string& machine,
             const std::string& library = GDP_FAKE_NVML_LIB) {
    nvml_.reset();
    fs::remove(dir_ / "drv/usr/lib64/libnvidia-ml.so.1");
    fs::create_symlink(library, dir_ / "drv/usr/lib64/libnvidia-ml.so.1");
    setenv("FAKE_NVML_MACHINE", machine.c_str(), 1);
    setenv("FAKE_NVML_CONTROL", (dir_ / "control").c_str(), 1);
    std::string cmd = std::string(GDP_FAKE_NVML_TOOL) + " rootfs --machine " +
                      machine + " --out " + (dir_ / "root").string();
    ASSERT_EQ(system(cmd.c_str()), 0);
    auto nvml = Nvml::Open((dir_ / "drv").string());
    ASSERT_TRUE(nvml.ok()) << nvml.status();
    nvml_ = *std::move(nvml);
  }

  absl::StatusOr<NodeGpus> Discover() {
    return DiscoverGpus(*nvml_, (dir_ / "root/sys").string());
  }

  // Appends `command` to the fake's control file, then discovers until the
  // fault shows (a GPU or MIG device left out) or a second has passed.
  absl::StatusOr<NodeGpus> DiscoverAfterFault(const std::string& command) {
    std::ofstream(dir_ / "control", std::ios::app) << command << "\n";
    absl::StatusOr<NodeGpus> node;
    for (int i = 0; i < 200; ++i) {
      node = Discover();
      if (node.ok() && !node->unusable.empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return node;
  }

  const gdp::testing::TempDir tmp_{"disc"};
  const fs::path dir_ = tmp_.path();
  std::unique_ptr<Nvml> nvml_;
};

TEST_F(DiscoveryTest, DescribesEveryGpu) {
  auto node = Discover();
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->driver_version, "550.54.15");
  EXPECT_EQ(node->cuda_driver_version, 12040);
  ASSERT_EQ(node->gpus.size(), 8u);
  EXPECT_TRUE(node->unusable.empty());
  const char* buses[] = {"0000:07:00.0", "0000:0f:00.0", "0000:47:00.0",
                         "0000:4e:00.0", "0000:87:00.0", "0000:90:00.0",
                         "0000:b7:00.0", "0000:bd:00.0"};
  for (unsigned i = 0; i < 8; ++i) {
    const GpuInfo& g = node->gpus[i];
    EXPECT_EQ(g.index, i);
    EXPECT_EQ(g.minor, i);
    EXPECT_EQ(g.name, "NVIDIA A100-SXM4-80GB");
    EXPECT_EQ(g.pci_bus_id, buses[i]);
    EXPECT_EQ(g.numa_node, i < 4 ? 0 : 1);  // through the sysfs link
    EXPECT_EQ(g.pcie_root, "pci0000:0" + std::to_string(i / 2));
    EXPECT_EQ(g.brand, "Nvidia");
    EXPECT_EQ(g.architecture, "Ampere");
    EXPECT_EQ(g.memory_bytes, 81920ull << 20);
    EXPECT_EQ(g.cc_major, 8);
    EXPECT_TRUE(g.mig_capable);
    EXPECT_FALSE(g.mig_enabled);
  }

  std::vector<Device> by_uuid = GpuDevices(*node, DeviceIdStrategy::kUuid);
  EXPECT_EQ(by_uuid[3].id, node->gpus[3].uuid);
  EXPECT_EQ(by_uuid[3].device_nodes, std::vector<std::string>{"/dev/nvidia3"});
  EXPECT_EQ(by_uuid[5].numa_node, 1);
  EXPECT_EQ(GpuDevices(*node, DeviceIdStrategy::kIndex)[3].id, "3");
}

TEST_F(DiscoveryTest, BrandArchitectureAndPcieRootOfShippedMachines) {
  const struct {
    const char* machine;
    const char* brand;
    const char* architecture;
    std::vector<std::string> pcie_roots;  // by GPU index
  } kMachines[] = {
      {"dgx1-v100",
       "Tesla",
       "Volta",
       {"pci0000:00", "pci0000:00", "pci0000:00", "pci0000:00", "pci0000:01",
        "pci0000:01", "pci0000:01", "pci0000:01"}},
      {"pcie-t4", "Tesla", "Turing", {"pci0000:00", "pci0000:01"}},
      {"h100-mig", "Nvidia", "Hopper", {"pci0000:00", "pci0000:01"}},
      {"pcie-4gpu-2switch",
       "Nvidia",
       "Ada Lovelace",
       {"pci0000:00", "pci0000:00", "pci0000:01", "pci0000:01"}},
  };
  for (const auto& m : kMachines) {
    SCOPED_TRACE(m.machine);
    fs::remove_all(dir_ / "root");
    Start(std::string(GDP_MACHINES_DIR) + "/" + m.machine + ".yaml");
    auto node = Discover();
    ASSERT_TRUE(node.ok()) << node.status();
    ASSERT_EQ(node->gpus.size(), m.pcie_roots.size());
    for (const GpuInfo& g : node->gpus) {
      EXPECT_EQ(g.brand, m.brand) << g.index;
      EXPECT_EQ(g.architecture, m.architecture) << g.index;
      EXPECT_EQ(g.pcie_root, m.pcie_roots[g.index]) << g.index;
    }
  }
}

TEST_F(DiscoveryTest, NoPcieRootWithoutTheSysfsLink) {
  // A sysfs with plain directories (no links), as older fixtures had.
  const fs::path sys = dir_ / "plain-sys";
  fs::create_directories(sys / "bus/pci/devices/0000:07:00.0");
  std::ofstream(sys / "bus/pci/devices/0000:07:00.0/numa_node") << "1\n";
  auto node = DiscoverGpus(*nvml_, sys.string());
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->gpus[0].numa_node, 1);
  EXPECT_EQ(node->gpus[0].pcie_root, "");
  EXPECT_EQ(node->gpus[1].numa_node, -1);
  EXPECT_EQ(node->gpus[1].pcie_root, "");
}

TEST_F(DiscoveryTest, KnownGpusKeepTheirPlacementUnread) {
  auto first = Discover();
  ASSERT_TRUE(first.ok()) << first.status();
  // What an earlier discovery found, changed for two GPUs, so that whether
  // sysfs was read shows.
  NodeGpus known = *first;
  known.gpus[0].numa_node = 7;
  known.gpus[0].pcie_root = "pci0000:77";
  known.gpus[1].numa_node = 7;
  known.gpus[1].pci_bus_id = "0000:99:00.0";  // moved: read again
  known.gpus[2].uuid = "GPU-another";         // replaced: read again
  known.gpus[2].numa_node = 7;
  auto again = DiscoverGpus(*nvml_, (dir_ / "root/sys").string(), &known);
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->gpus.size(), 8u);
  EXPECT_EQ(again->gpus[0].numa_node, 7);
  EXPECT_EQ(again->gpus[0].pcie_root, "pci0000:77");
  EXPECT_EQ(again->gpus[1].numa_node, 0);
  EXPECT_EQ(again->gpus[1].pcie_root, "pci0000:00");
  EXPECT_EQ(again->gpus[2].numa_node, 0);
  EXPECT_EQ(again->gpus[2].pcie_root, "pci0000:01");
  for (unsigned i = 3; i < 8; ++i) {
    EXPECT_EQ(again->gpus[i].numa_node, first->gpus[i].numa_node) << i;
    EXPECT_EQ(again->gpus[i].pcie_root, first->gpus[i].pcie_root) << i;
  }
}

TEST(BrandNameTest, Table) {
  const struct {
    nvmlBrandType_t brand;
    const char* want;
  } kCases[] = {
      {NVML_BRAND_UNKNOWN, "Unknown"},
      {NVML_BRAND_QUADRO, "Quadro"},
      {NVML_BRAND_TESLA, "Tesla"},
      {NVML_BRAND_NVS, "NVS"},
      {NVML_BRAND_GRID, "Grid"},
      {NVML_BRAND_GEFORCE, "GeForce"},
      {NVML_BRAND_TITAN, "Titan"},
      {NVML_BRAND_NVIDIA_VAPPS, "NvidiaVApps"},
      {NVML_BRAND_NVIDIA_VPC, "NvidiaVPC"},
      {NVML_BRAND_NVIDIA_VCS, "NvidiaVCS"},
      {NVML_BRAND_NVIDIA_VWS, "NvidiaVWS"},
      {NVML_BRAND_NVIDIA_CLOUD_GAMING, "NvidiaCloudGaming"},
      {NVML_BRAND_QUADRO_RTX, "QuadroRTX"},
      {NVML_BRAND_NVIDIA_RTX, "NvidiaRTX"},
      {NVML_BRAND_NVIDIA, "Nvidia"},
      {NVML_BRAND_GEFORCE_RTX, "GeForceRTX"},
      {NVML_BRAND_TITAN_RTX, "TitanRTX"},
      {NVML_BRAND_COUNT, "Unknown"},
      {static_cast<nvmlBrandType_t>(30), "Unknown"},
  };
  for (const auto& c : kCases) {
    EXPECT_EQ(BrandName(c.brand), c.want) << static_cast<int>(c.brand);
  }
}

TEST(ArchitectureNameTest, Table) {
  const struct {
    nvmlDeviceArchitecture_t architecture;
    const char* want;
  } kCases[] = {
      {NVML_DEVICE_ARCH_KEPLER, "Kepler"},
      {NVML_DEVICE_ARCH_MAXWELL, "Maxwell"},
      {NVML_DEVICE_ARCH_PASCAL, "Pascal"},
      {NVML_DEVICE_ARCH_VOLTA, "Volta"},
      {NVML_DEVICE_ARCH_TURING, "Turing"},
      {NVML_DEVICE_ARCH_AMPERE, "Ampere"},
      {NVML_DEVICE_ARCH_ADA, "Ada Lovelace"},
      {NVML_DEVICE_ARCH_HOPPER, "Hopper"},
      {NVML_DEVICE_ARCH_BLACKWELL, "Blackwell"},
      {NVML_DEVICE_ARCH_T23X, "Orin"},
      {NVML_DEVICE_ARCH_UNKNOWN, "Unknown"},
      {0, "Unknown"},
      {12, "Unknown"},
  };
  for (const auto& c : kCases) {
    EXPECT_EQ(ArchitectureName(c.architecture), c.want) << c.architecture;
  }
}

TEST_F(DiscoveryTest, LostGpuIsLeftOutAndTheOthersServed) {
  absl::StatusOr<NodeGpus> node = DiscoverAfterFault("lose 5");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->gpus.size(), 7u);
  ASSERT_EQ(node->unusable.size(), 1u);
  EXPECT_THAT(std::string(node->unusable[0].error.message()),
              ::testing::StartsWith("GPU 5: "));
  EXPECT_EQ(node->unusable[0].gpu, 5u);
  EXPECT_FALSE(node->unusable[0].mig.has_value());
  EXPECT_EQ(NvmlCode(node->unusable[0].error), NVML_ERROR_GPU_IS_LOST);
}

TEST(MigProfileNameTest, Table) {
  constexpr uint64_t kMiB = 1 << 20;
  const struct {
    unsigned gi, ci;
    uint64_t gpu_mib, mig_mib;
    const char* suffix;
    const char* want;
  } kCases[] = {
      // H100 80GB HBM3 (81559 MiB).
      {1, 1, 81559, 9984, "", "1g.10gb"},
      {1, 1, 81559, 9984, "+me", "1g.10gb+me"},
      {1, 1, 81559, 20096, "", "1g.20gb"},
      {2, 2, 81559, 20096, "", "2g.20gb"},
      {3, 3, 81559, 40448, "", "3g.40gb"},
      {4, 4, 81559, 40448, "", "4g.40gb"},
      {7, 7, 81559, 81152, "", "7g.80gb"},
      {3, 1, 81559, 40448, "", "1c.3g.40gb"},
      {7, 4, 81559, 81152, "", "4c.7g.80gb"},
      // A100-SXM4-40GB (40960 MiB) and A100-SXM4-80GB (81920 MiB).
      {1, 1, 40960, 4864, "", "1g.5gb"},
      {1, 1, 40960, 9856, "", "1g.10gb"},
      {3, 2, 40960, 19968, "", "2c.3g.20gb"},
      {7, 7, 40960, 40192, "", "7g.40gb"},
      {1, 1, 81920, 9728, "", "1g.10gb"},
      {2, 2, 81920, 19968, "", "2g.20gb"},
      {7, 7, 81920, 80896, "", "7g.80gb"},
      {1, 1, 81920, 9728, "-me", "1g.10gb-me"},
  };
  for (const auto& c : kCases) {
    EXPECT_EQ(MigProfileName(c.gi, c.ci, c.gpu_mib * kMiB, c.mig_mib, c.suffix),
              c.want)
        << c.gi << " " << c.ci << " " << c.gpu_mib << " " << c.mig_mib;
  }
}

TEST(MigProfileSuffixTest, Table) {
  const struct {
    unsigned profile;
    const char* want;
  } kCases[] = {
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE, ""},
      {NVML_GPU_INSTANCE_PROFILE_7_SLICE, ""},
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, ""},
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, "+me"},
      {NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1, "+me"},
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME, "+me.all"},
      {NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME, "-me"},
      {NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX, "+gfx"},
  };
  for (const auto& c : kCases) {
    EXPECT_EQ(MigProfileSuffix(c.profile), c.want) << c.profile;
  }
}

TEST_F(DiscoveryTest, DescribesMigDevices) {
  Start(std::string(GDP_MACHINES_DIR) + "/h100-mig.yaml");
  auto node = Discover();
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_TRUE(node->unusable.empty());
  ASSERT_EQ(node->gpus.size(), 2u);
  const GpuInfo& gpu = node->gpus[0];
  EXPECT_EQ(gpu.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpu.memory_bytes, 81559ull << 20);
  EXPECT_TRUE(gpu.mig_capable);
  EXPECT_TRUE(gpu.mig_enabled);
  const struct {
    const char* profile;
    unsigned gi;
    uint64_t memory_mib;
    unsigned slices, sms, copy, decoders, jpegs;
    unsigned profile_id, placement_start, placement_size;
  } kMigs[] = {
      {"3g.40gb", 2, 40448, 3, 60, 3, 3, 3, 9, 4, 4},
      {"2g.20gb", 3, 20096, 2, 32, 2, 2, 2, 14, 0, 2},
      {"1g.10gb", 9, 9984, 1, 16, 1, 1, 1, 19, 2, 1},
      {"1g.10gb", 10, 9984, 1, 16, 1, 1, 1, 19, 3, 1},
  };
  ASSERT_EQ(gpu.migs.size(), 4u);
  std::set<std::string> uuids;
  for (unsigned j = 0; j < 4; ++j) {
    SCOPED_TRACE(j);
    const MigInfo& m = gpu.migs[j];
    const auto& want = kMigs[j];
    EXPECT_EQ(m.index, j);
    EXPECT_EQ(m.profile, want.profile);
    EXPECT_EQ(m.gi, want.gi);
    EXPECT_EQ(m.ci, 0u);
    EXPECT_EQ(m.gi_profile_id, want.profile_id);
    EXPECT_EQ(m.placement_start, want.placement_start);
    EXPECT_EQ(m.placement_size, want.placement_size);
    EXPECT_THAT(m.uuid, ::testing::StartsWith("MIG-"));
    EXPECT_EQ(m.uuid.size(), 40u);
    uuids.insert(m.uuid);
    EXPECT_EQ(m.memory_bytes, want.memory_mib << 20);
    EXPECT_EQ(m.gi_slices, want.slices);
    EXPECT_EQ(m.ci_slices, want.slices);
    EXPECT_EQ(m.multiprocessors, want.sms);
    EXPECT_EQ(m.copy_engines, want.copy);
    EXPECT_EQ(m.decoders, want.decoders);
    EXPECT_EQ(m.encoders, 0u);
    EXPECT_EQ(m.jpegs, want.jpegs);
    EXPECT_EQ(m.ofas, 0u);
  }
  EXPECT_EQ(uuids.size(), 4u);
  // The UUIDs are NVML's: each finds the MIG device's own handle.
  for (const MigInfo& m : gpu.migs) {
    auto mig = nvml_->MigDeviceByIndex(*nvml_->DeviceByIndex(0), m.index);
    ASSERT_TRUE(mig.ok()) << mig.status();
    EXPECT_EQ(*nvml_->Uuid(*mig), m.uuid);
  }
  EXPECT_TRUE(node->gpus[1].mig_capable);
  EXPECT_FALSE(node->gpus[1].mig_enabled);
  EXPECT_TRUE(node->gpus[1].migs.empty());
}

TEST_F(DiscoveryTest, NamesComputeInstancesAndMediaExtensions) {
  const std::string machine = (dir_ / "sub.yaml").string();
  std::ofstream(machine) << R"(driver_version: "550.54.15"
cuda_driver_version: 12040
gpus:
  - name: NVIDIA A100-SXM4-40GB
    uuid: GPU-11111111-2222-3333-4444-555555555555
    minor: 0
    bus_id: "0000:07:00.0"
    pci_device_id: 0x20B010DE
    pci_subsystem_id: 0x134F10DE
    memory_mib: 40960
    compute_capability: "8.0"
    numa_node: 0
    host_bridge: 0
    mig_capable: true
    mig_mode: enabled
    gpu_instances:
      - profile: 3g.20gb
        compute_instances: [{profile: 1c.3g.20gb}, {profile: 2c.3g.20gb}]
      - profile: 1g.5gb+me
)";
  Start(machine);
  auto node = Discover();
  ASSERT_TRUE(node.ok()) << node.status();
  ASSERT_EQ(node->gpus.size(), 1u);
  const std::vector<MigInfo>& migs = node->gpus[0].migs;
  ASSERT_EQ(migs.size(), 3u);
  const struct {
    const char* profile;
    unsigned gi, ci, gi_slices, ci_slices, sms;
    unsigned profile_id, placement_start, placement_size;
  } kWant[] = {{"1c.3g.20gb", 1, 0, 3, 1, 14, 9, 0, 4},
               {"2c.3g.20gb", 1, 1, 3, 2, 28, 9, 0, 4},
               {"1g.5gb+me", 11, 0, 1, 1, 14, 20, 4, 1}};
  for (unsigned j = 0; j < 3; ++j) {
    EXPECT_EQ(migs[j].gi_profile_id, kWant[j].profile_id) << j;
    EXPECT_EQ(migs[j].placement_start, kWant[j].placement_start) << j;
    EXPECT_EQ(migs[j].placement_size, kWant[j].placement_size) << j;
    EXPECT_EQ(migs[j].profile, kWant[j].profile) << j;
    EXPECT_EQ(migs[j].gi, kWant[j].gi) << j;
    EXPECT_EQ(migs[j].ci, kWant[j].ci) << j;
    EXPECT_EQ(migs[j].gi_slices, kWant[j].gi_slices) << j;
    EXPECT_EQ(migs[j].ci_slices, kWant[j].ci_slices) << j;
    EXPECT_EQ(migs[j].multiprocessors, kWant[j].sms) << j;
  }
  EXPECT_EQ(migs[0].memory_bytes, 19968ull << 20) << "the GPU instance's";
}

TEST_F(DiscoveryTest, MigDeviceNvmlCannotDescribeIsLeftOut) {
  Start(std::string(GDP_MACHINES_DIR) + "/h100-mig.yaml");
  absl::StatusOr<NodeGpus> node = DiscoverAfterFault("fail-mig 0 1 999");
  ASSERT_TRUE(node.ok()) << node.status();
  ASSERT_EQ(node->unusable.size(), 1u);
  EXPECT_THAT(std::string(node->unusable[0].error.message()),
              ::testing::StartsWith("GPU 0 MIG 1: nvmlDeviceGetUUID: "));
  EXPECT_EQ(node->unusable[0].gpu, 0u);
  EXPECT_EQ(node->unusable[0].mig, std::optional<unsigned>(1));
  EXPECT_EQ(NvmlCode(node->unusable[0].error), NVML_ERROR_UNKNOWN);
  ASSERT_EQ(node->gpus.size(), 2u);
  std::vector<unsigned> indexes;
  for (const MigInfo& m : node->gpus[0].migs) indexes.push_back(m.index);
  EXPECT_EQ(indexes, (std::vector<unsigned>{0, 2, 3}));
}

TEST_F(DiscoveryTest, LostMigGpuIsLeftOut) {
  Start(std::string(GDP_MACHINES_DIR) + "/h100-mig.yaml");
  absl::StatusOr<NodeGpus> node = DiscoverAfterFault("lose 0");
  ASSERT_TRUE(node.ok()) << node.status();
  ASSERT_EQ(node->unusable.size(), 1u);
  EXPECT_THAT(std::string(node->unusable[0].error.message()),
              ::testing::StartsWith("GPU 0: "));
  ASSERT_EQ(node->gpus.size(), 1u);
  EXPECT_EQ(node->gpus[0].index, 1u);
}

TEST_F(DiscoveryTest, DriverWithoutMigReportsNoMig) {
  Start(std::string(GDP_MACHINES_DIR) + "/h100-mig.yaml",
        GDP_FAKE_NVML_PRE_MIG_LIB);
  auto node = Discover();
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_TRUE(node->unusable.empty());
  ASSERT_EQ(node->gpus.size(), 2u);
  for (const GpuInfo& g : node->gpus) {
    EXPECT_FALSE(g.mig_capable);
    EXPECT_FALSE(g.mig_enabled);
    EXPECT_TRUE(g.migs.empty());
    // nvmlDeviceGetBrand predates MIG; nvmlDeviceGetArchitecture does not.
    EXPECT_EQ(g.brand, "Nvidia");
    EXPECT_EQ(g.architecture, "Unknown");
  }
}

}  // namespace
}  // namespace gdp
