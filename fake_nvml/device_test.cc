// Per-device queries: strings, PCI information, memory, compute capability
// and MIG mode.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>

#include "fake_nvml/test_client.h"

namespace gdp::fake_nvml::testing {
namespace {

constexpr char kA100Gpu2Uuid[] = "GPU-dc816616-ae36-21f2-b959-e7dd47a4b56b";

class DeviceTest : public FakeNvmlTest {
 protected:
  void SetUp() override {
    FakeNvmlTest::SetUp();
    InitWith("dgx-a100.yaml");
  }
};

TEST_F(DeviceTest, StringGettersCheckTheBufferLength) {
  const struct {
    const char* what;
    decltype(&::nvmlDeviceGetName) get;
    std::string value;
  } kCases[] = {
      {"name", NVML(nvmlDeviceGetName), "NVIDIA A100-SXM4-80GB"},
      {"uuid", NVML(nvmlDeviceGetUUID), kA100Gpu2Uuid},
  };
  for (const auto& c : kCases) {
    char buffer[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    std::memset(buffer, 'x', sizeof(buffer));
    const unsigned exact = c.value.size() + 1;
    EXPECT_EQ(c.get(Device(2), buffer, exact - 1), NVML_ERROR_INSUFFICIENT_SIZE)
        << c.what;
    EXPECT_EQ(buffer[0], 'x') << c.what << ": wrote into a short buffer";
    EXPECT_EQ(c.get(Device(2), buffer, 0), NVML_ERROR_INSUFFICIENT_SIZE);
    EXPECT_EQ(c.get(Device(2), buffer, exact), NVML_SUCCESS) << c.what;
    EXPECT_EQ(std::string(buffer), c.value);
  }
}

TEST_F(DeviceTest, PciInfoV3FillsEverything) {
  nvmlPciInfo_t pci;
  std::memset(&pci, 0xAB, sizeof(pci));
  ASSERT_EQ(NVML(nvmlDeviceGetPciInfo_v3)(Device(6), &pci), NVML_SUCCESS);
  EXPECT_STREQ(pci.busId, "00000000:B7:00.0");
  EXPECT_STREQ(pci.busIdLegacy, "0000:B7:00.0");
  EXPECT_EQ(pci.domain, 0u);
  EXPECT_EQ(pci.bus, 0xB7u);
  EXPECT_EQ(pci.device, 0u);
  EXPECT_EQ(pci.pciDeviceId, 0x20B210DEu);
  EXPECT_EQ(pci.pciSubSystemId, 0x146310DEu);
}

TEST_F(DeviceTest, PciInfoV1AndV2StopAfterSubSystemId) {
  constexpr size_t kEnd =
      offsetof(nvmlPciInfo_t, pciSubSystemId) + sizeof(unsigned);
  for (auto* get :
       {NVML(nvmlDeviceGetPciInfo), NVML(nvmlDeviceGetPciInfo_v2)}) {
    unsigned char bytes[sizeof(nvmlPciInfo_t) + 16];
    std::memset(bytes, 0xAB, sizeof(bytes));
    auto* pci = reinterpret_cast<nvmlPciInfo_t*>(bytes);
    ASSERT_EQ(get(Device(1), pci), NVML_SUCCESS);
    EXPECT_STREQ(pci->busIdLegacy, "0000:0F:00.0");
    EXPECT_EQ(pci->bus, 0x0Fu);
    EXPECT_EQ(pci->pciDeviceId, 0x20B210DEu);
    EXPECT_EQ(pci->pciSubSystemId, 0x146310DEu);
    for (size_t i = kEnd; i < sizeof(bytes); ++i) {
      ASSERT_EQ(bytes[i], 0xAB) << "byte " << i << " was written";
    }
  }
}

TEST_F(DeviceTest, MemoryInfo) {
  nvmlMemory_t memory;
  ASSERT_EQ(NVML(nvmlDeviceGetMemoryInfo)(Device(0), &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.total, 81920ull << 20);
  EXPECT_EQ(memory.used, 0u);
  EXPECT_EQ(memory.free, memory.total);

  nvmlMemory_v2_t v2;
  v2.version = nvmlMemory_v2;
  ASSERT_EQ(NVML(nvmlDeviceGetMemoryInfo_v2)(Device(0), &v2), NVML_SUCCESS);
  EXPECT_EQ(v2.total, 81920ull << 20);
  EXPECT_EQ(v2.free, v2.total);
  for (unsigned version : {0u, 1u, (2u << 24) | 8u, nvmlMemory_v2 + 1}) {
    v2.version = version;
    EXPECT_EQ(NVML(nvmlDeviceGetMemoryInfo_v2)(Device(0), &v2),
              NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        << version;
  }
}

TEST_F(DeviceTest, ComputeCapabilityAndMigMode) {
  int major = 0;
  int minor = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetCudaComputeCapability)(Device(3), &major, &minor),
            NVML_SUCCESS);
  EXPECT_EQ(major, 8);
  EXPECT_EQ(minor, 0);
  unsigned current = 7;
  unsigned pending = 7;
  ASSERT_EQ(NVML(nvmlDeviceGetMigMode)(Device(3), &current, &pending),
            NVML_SUCCESS);
  EXPECT_EQ(current, unsigned{NVML_DEVICE_MIG_DISABLE});
  EXPECT_EQ(pending, unsigned{NVML_DEVICE_MIG_DISABLE});
  unsigned minor_number = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetMinorNumber)(Device(3), &minor_number),
            NVML_SUCCESS);
  EXPECT_EQ(minor_number, 3u);
}

TEST_F(DeviceTest, MigModeFromTheFile) {
  ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  UseMachine(WriteFile("mig.yaml", R"(driver_version: "550.54.15"
cuda_driver_version: 12040
gpus:
  - name: NVIDIA A100-SXM4-40GB
    uuid: GPU-11111111-2222-3333-4444-555555555555
    minor: 0
    bus_id: "0000:07:00.0"
    pci_device_id: 0x20B010DE
    pci_subsystem_id: 0x134F10DE
    memory_mib: 40960
    memory_used_mib: 1024
    compute_capability: "8.0"
    numa_node: 0
    host_bridge: 0
    mig_capable: true
    mig_mode: enabled
    mig_pending_mode: disabled
)"));
  ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
  unsigned current = 7;
  unsigned pending = 7;
  ASSERT_EQ(NVML(nvmlDeviceGetMigMode)(Device(0), &current, &pending),
            NVML_SUCCESS);
  EXPECT_EQ(current, unsigned{NVML_DEVICE_MIG_ENABLE});
  EXPECT_EQ(pending, unsigned{NVML_DEVICE_MIG_DISABLE});
  nvmlMemory_t memory;
  ASSERT_EQ(NVML(nvmlDeviceGetMemoryInfo)(Device(0), &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.used, 1024ull << 20);
  EXPECT_EQ(memory.free, (40960ull - 1024) << 20);
}

}  // namespace
}  // namespace gdp::fake_nvml::testing
