// The shipped machine files load and match the facts of their systems:
// devices and PCIe topology (NVLink wiring: nvlink_test.cc).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "fake_nvml/test_client.h"

namespace gdp::fake_nvml::testing {
namespace {

using MachinesTest = FakeNvmlTest;

unsigned LinkCount(nvmlDevice_t device) {
  unsigned links = 0;
  nvmlEnableState_t state;
  while (NVML(nvmlDeviceGetNvLinkState)(device, links, &state) ==
         NVML_SUCCESS) {
    ++links;
  }
  return links;
}

TEST_F(MachinesTest, EveryShippedMachineMatchesItsSystem) {
  // SBE, DBE, PState, XID, Clock, PowerSourceChange; MigConfigChange.
  constexpr unsigned long long kR550 = 0x9F;
  constexpr unsigned long long kR550Mig = 0x19F;
  // nvmlEventTypeAll, as an H100 reported it with driver 580.159.04.
  constexpr unsigned long long kAllEvents = 0xFF9F;
  const struct {
    const char* file;
    unsigned count;
    const char* name;
    unsigned long long memory_mib;
    unsigned pci_device_id;
    int cc_major;
    int cc_minor;
    bool mig;
    unsigned nvlinks;
    nvmlBrandType_t brand;
    nvmlDeviceArchitecture_t architecture;
    // nvmlDeviceGetSupportedEventTypes: every type the driver knows
    // (R550: up to MigConfigChange, for MIG-capable GPUs only; R565 on:
    // nvmlEventTypeAll).
    unsigned long long events;
  } kMachines[] = {
      {"dgx-a100.yaml", 8, "NVIDIA A100-SXM4-80GB", 81920, 0x20B210DE, 8, 0,
       true, 12, NVML_BRAND_NVIDIA, NVML_DEVICE_ARCH_AMPERE, kR550Mig},
      {"dgx1-v100.yaml", 8, "Tesla V100-SXM2-32GB", 32768, 0x1DB510DE, 7, 0,
       false, 6, NVML_BRAND_TESLA, NVML_DEVICE_ARCH_VOLTA, kR550},
      {"pcie-t4.yaml", 2, "Tesla T4", 15360, 0x1EB810DE, 7, 5, false, 0,
       NVML_BRAND_TESLA, NVML_DEVICE_ARCH_TURING, kR550},
      {"h100-mig.yaml", 2, "NVIDIA H100 80GB HBM3", 81559, 0x233010DE, 9, 0,
       true, 18, NVML_BRAND_NVIDIA, NVML_DEVICE_ARCH_HOPPER, kR550Mig},
      {"hgx-h100.yaml", 8, "NVIDIA H100 80GB HBM3", 81559, 0x233010DE, 9, 0,
       true, 18, NVML_BRAND_NVIDIA, NVML_DEVICE_ARCH_HOPPER, kR550Mig},
      {"hgx-h100-r615.yaml", 8, "NVIDIA H100 80GB HBM3", 81559, 0x233010DE, 9,
       0, true, 18, NVML_BRAND_NVIDIA, NVML_DEVICE_ARCH_HOPPER, kAllEvents},
      {"dgx2-v100.yaml", 16, "Tesla V100-SXM3-32GB", 32768, 0x1DB810DE, 7, 0,
       false, 6, NVML_BRAND_TESLA, NVML_DEVICE_ARCH_VOLTA, kR550},
      {"pcie-4gpu-2switch.yaml", 4, "NVIDIA L40S", 46068, 0x26B910DE, 8, 9,
       false, 0, NVML_BRAND_NVIDIA, NVML_DEVICE_ARCH_ADA, kR550},
      {"h100-vm-580.yaml", 1, "NVIDIA H100 80GB HBM3", 81559, 0x233010DE, 9, 0,
       true, 0, NVML_BRAND_NVIDIA, NVML_DEVICE_ARCH_HOPPER, kAllEvents},
  };
  for (const auto& m : kMachines) {
    SCOPED_TRACE(m.file);
    InitWith(m.file);
    unsigned count = 0;
    ASSERT_EQ(NVML(nvmlDeviceGetCount_v2)(&count), NVML_SUCCESS);
    ASSERT_EQ(count, m.count);
    std::set<std::string> uuids;
    for (unsigned i = 0; i < count; ++i) {
      const nvmlDevice_t device = Device(i);
      char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
      ASSERT_EQ(NVML(nvmlDeviceGetName)(device, text, sizeof(text)),
                NVML_SUCCESS);
      EXPECT_STREQ(text, m.name);
      ASSERT_EQ(NVML(nvmlDeviceGetUUID)(device, text, sizeof(text)),
                NVML_SUCCESS);
      uuids.insert(text);
      nvmlMemory_t memory;
      ASSERT_EQ(NVML(nvmlDeviceGetMemoryInfo)(device, &memory), NVML_SUCCESS);
      EXPECT_EQ(memory.total, m.memory_mib << 20);
      nvmlPciInfo_t pci;
      ASSERT_EQ(NVML(nvmlDeviceGetPciInfo_v3)(device, &pci), NVML_SUCCESS);
      EXPECT_EQ(pci.pciDeviceId, m.pci_device_id);
      int major = 0;
      int minor = 0;
      ASSERT_EQ(
          NVML(nvmlDeviceGetCudaComputeCapability)(device, &major, &minor),
          NVML_SUCCESS);
      EXPECT_EQ(major, m.cc_major);
      EXPECT_EQ(minor, m.cc_minor);
      nvmlBrandType_t brand = NVML_BRAND_COUNT;
      ASSERT_EQ(NVML(nvmlDeviceGetBrand)(device, &brand), NVML_SUCCESS);
      EXPECT_EQ(brand, m.brand);
      nvmlDeviceArchitecture_t architecture = 0;
      ASSERT_EQ(NVML(nvmlDeviceGetArchitecture)(device, &architecture),
                NVML_SUCCESS);
      EXPECT_EQ(architecture, m.architecture);
      unsigned current = 0;
      unsigned pending = 0;
      EXPECT_EQ(NVML(nvmlDeviceGetMigMode)(device, &current, &pending),
                m.mig ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED);
      EXPECT_EQ(LinkCount(device), m.nvlinks);
      unsigned long long events = 0;
      ASSERT_EQ(NVML(nvmlDeviceGetSupportedEventTypes)(device, &events),
                NVML_SUCCESS);
      EXPECT_EQ(events, m.events);
    }
    EXPECT_EQ(uuids.size(), count) << "UUIDs are not distinct";
    ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  }
}

TEST_F(MachinesTest, DgxA100BusIdsAndNumaNodes) {
  InitWith("dgx-a100.yaml");
  const char* kBusIds[] = {"00000000:07:00.0", "00000000:0F:00.0",
                           "00000000:47:00.0", "00000000:4E:00.0",
                           "00000000:87:00.0", "00000000:90:00.0",
                           "00000000:B7:00.0", "00000000:BD:00.0"};
  for (unsigned i = 0; i < 8; ++i) {
    nvmlPciInfo_t pci;
    ASSERT_EQ(NVML(nvmlDeviceGetPciInfo_v3)(Device(i), &pci), NVML_SUCCESS);
    EXPECT_STREQ(pci.busId, kBusIds[i]);
  }
}

TEST_F(MachinesTest, TopologyLevels) {
  const struct {
    const char* file;
    unsigned a;
    unsigned b;
    nvmlGpuTopologyLevel_t level;
  } kCases[] = {
      {"dgx-a100.yaml", 0, 1, NVML_TOPOLOGY_SINGLE},
      {"dgx-a100.yaml", 6, 7, NVML_TOPOLOGY_SINGLE},
      {"dgx-a100.yaml", 0, 2, NVML_TOPOLOGY_NODE},
      {"dgx-a100.yaml", 5, 6, NVML_TOPOLOGY_NODE},
      {"dgx-a100.yaml", 0, 4, NVML_TOPOLOGY_SYSTEM},
      {"dgx1-v100.yaml", 2, 3, NVML_TOPOLOGY_SINGLE},
      {"dgx1-v100.yaml", 0, 3, NVML_TOPOLOGY_HOSTBRIDGE},
      {"dgx1-v100.yaml", 3, 4, NVML_TOPOLOGY_SYSTEM},
      {"pcie-t4.yaml", 0, 1, NVML_TOPOLOGY_SYSTEM},
      {"h100-mig.yaml", 0, 1, NVML_TOPOLOGY_NODE},
      {"hgx-h100.yaml", 0, 1, NVML_TOPOLOGY_SINGLE},
      {"hgx-h100.yaml", 6, 7, NVML_TOPOLOGY_SINGLE},
      {"hgx-h100.yaml", 1, 2, NVML_TOPOLOGY_NODE},
      {"hgx-h100.yaml", 4, 6, NVML_TOPOLOGY_NODE},
      {"hgx-h100.yaml", 3, 4, NVML_TOPOLOGY_SYSTEM},
      {"dgx2-v100.yaml", 0, 1, NVML_TOPOLOGY_SINGLE},
      {"dgx2-v100.yaml", 14, 15, NVML_TOPOLOGY_SINGLE},
      {"dgx2-v100.yaml", 0, 2, NVML_TOPOLOGY_MULTIPLE},
      {"dgx2-v100.yaml", 9, 11, NVML_TOPOLOGY_MULTIPLE},
      {"dgx2-v100.yaml", 3, 4, NVML_TOPOLOGY_NODE},
      {"dgx2-v100.yaml", 8, 15, NVML_TOPOLOGY_NODE},
      {"dgx2-v100.yaml", 7, 8, NVML_TOPOLOGY_SYSTEM},
      {"dgx2-v100.yaml", 0, 15, NVML_TOPOLOGY_SYSTEM},
      {"pcie-4gpu-2switch.yaml", 0, 1, NVML_TOPOLOGY_SINGLE},
      {"pcie-4gpu-2switch.yaml", 2, 3, NVML_TOPOLOGY_SINGLE},
      {"pcie-4gpu-2switch.yaml", 0, 2, NVML_TOPOLOGY_SYSTEM},
      {"pcie-4gpu-2switch.yaml", 1, 3, NVML_TOPOLOGY_SYSTEM},
  };
  for (const auto& c : kCases) {
    InitWith(c.file);
    nvmlGpuTopologyLevel_t level;
    EXPECT_EQ(NVML(nvmlDeviceGetTopologyCommonAncestor)(Device(c.a),
                                                        Device(c.b), &level),
              NVML_SUCCESS);
    EXPECT_EQ(level, c.level) << c.file << " " << c.a << "-" << c.b;
    EXPECT_EQ(NVML(nvmlDeviceGetTopologyCommonAncestor)(Device(c.b),
                                                        Device(c.a), &level),
              NVML_SUCCESS);
    EXPECT_EQ(level, c.level) << c.file << " " << c.b << "-" << c.a;
    EXPECT_EQ(NVML(nvmlDeviceGetTopologyCommonAncestor)(Device(c.a),
                                                        Device(c.a), &level),
              NVML_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  }
}

TEST_F(MachinesTest, BoardsAndNestedSwitches) {
  std::string yaml =
      "driver_version: \"550.54.15\"\ncuda_driver_version: 12040\ngpus:\n";
  // GPU 0-1: one board; 2 and 3 below switches 1/2 and 1/3 (MULTIPLE).
  const char* kPlacement[] = {"board: 7, pcie_switches: [1, 2]",
                              "board: 7, pcie_switches: [1, 2]",
                              "pcie_switches: [1, 2]", "pcie_switches: [1, 3]"};
  for (int i = 0; i < 4; ++i) {
    yaml += "  - {name: Tesla K80, uuid: GPU-0000000" + std::to_string(i) +
            "-0000-0000-0000-000000000000, minor: " + std::to_string(i) +
            ", bus_id: \"0" + std::to_string(i) +
            ":00.0\", pci_device_id: 0x102D10DE, pci_subsystem_id: 0x106C10DE,"
            " memory_mib: 12288, compute_capability: \"3.7\", numa_node: 0,"
            " host_bridge: 0, " +
            kPlacement[i] + "}\n";
  }
  UseMachine(WriteFile("k80.yaml", yaml));
  ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
  const struct {
    unsigned a;
    unsigned b;
    nvmlGpuTopologyLevel_t level;
  } kCases[] = {{0, 1, NVML_TOPOLOGY_INTERNAL},
                {0, 2, NVML_TOPOLOGY_SINGLE},
                {2, 3, NVML_TOPOLOGY_MULTIPLE},
                {1, 3, NVML_TOPOLOGY_MULTIPLE}};
  for (const auto& c : kCases) {
    nvmlGpuTopologyLevel_t level;
    ASSERT_EQ(NVML(nvmlDeviceGetTopologyCommonAncestor)(Device(c.a),
                                                        Device(c.b), &level),
              NVML_SUCCESS);
    EXPECT_EQ(level, c.level) << c.a << "-" << c.b;
  }
}

}  // namespace
}  // namespace gdp::fake_nvml::testing
