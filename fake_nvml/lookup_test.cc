// Device lookup and argument checking.
#include <gtest/gtest.h>

#include <cstdint>

#include "fake_nvml/test_client.h"

namespace gdp::fake_nvml::testing {
namespace {

constexpr char kA100Gpu2Uuid[] = "GPU-dc816616-ae36-21f2-b959-e7dd47a4b56b";

class LookupTest : public FakeNvmlTest {
 protected:
  void SetUp() override {
    FakeNvmlTest::SetUp();
    InitWith("dgx-a100.yaml");
  }
};

unsigned IndexOf(nvmlDevice_t device) {
  unsigned index = 999;
  EXPECT_EQ(NVML(nvmlDeviceGetIndex)(device, &index), NVML_SUCCESS);
  return index;
}

TEST_F(LookupTest, ByIndex) {
  nvmlDevice_t device = nullptr;
  EXPECT_EQ(NVML(nvmlDeviceGetHandleByIndex)(7, &device), NVML_SUCCESS);
  EXPECT_EQ(IndexOf(device), 7u);
  EXPECT_EQ(Device(7), device);  // stable within a session
  EXPECT_EQ(NVML(nvmlDeviceGetHandleByIndex_v2)(8, &device),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetHandleByIndex_v2)(0, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(LookupTest, ByUuid) {
  nvmlDevice_t device = nullptr;
  ASSERT_EQ(NVML(nvmlDeviceGetHandleByUUID)(kA100Gpu2Uuid, &device),
            NVML_SUCCESS);
  EXPECT_EQ(IndexOf(device), 2u);
  EXPECT_EQ(NVML(nvmlDeviceGetHandleByUUID)(
                "GPU-00000000-0000-0000-0000-000000000000", &device),
            NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(NVML(nvmlDeviceGetHandleByUUID)(nullptr, &device),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetHandleByUUID)(kA100Gpu2Uuid, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(LookupTest, ByPciBusIdAcceptsBothFormsInAnyCase) {
  const struct {
    const char* bus_id;
    nvmlReturn_t result;
    unsigned index;
  } kCases[] = {
      {"00000000:B7:00.0", NVML_SUCCESS, 6},
      {"0000:B7:00.0", NVML_SUCCESS, 6},
      {"0000:b7:00.0", NVML_SUCCESS, 6},
      {"00000000:bd:00.0", NVML_SUCCESS, 7},
      {"07:00.0", NVML_SUCCESS, 0},
      {"0000:B8:00.0", NVML_ERROR_NOT_FOUND, 0},
      {"0001:B7:00.0", NVML_ERROR_NOT_FOUND, 0},
      {"0000:B7:00.1", NVML_ERROR_NOT_FOUND, 0},
      {"0000:C1:00.0", NVML_ERROR_NOT_FOUND, 0},  // an NVSwitch
      {"not a bus id", NVML_ERROR_INVALID_ARGUMENT, 0},
      {"", NVML_ERROR_INVALID_ARGUMENT, 0},
  };
  for (const auto& c : kCases) {
    for (auto* lookup : {NVML(nvmlDeviceGetHandleByPciBusId),
                         NVML(nvmlDeviceGetHandleByPciBusId_v2)}) {
      nvmlDevice_t device = nullptr;
      EXPECT_EQ(lookup(c.bus_id, &device), c.result) << c.bus_id;
      if (c.result == NVML_SUCCESS) {
        EXPECT_EQ(IndexOf(device), c.index) << c.bus_id;
      }
    }
  }
}

TEST_F(LookupTest, BadHandlesAreInvalidArguments) {
  char garbage_storage[8];
  const nvmlDevice_t kBad[] = {
      nullptr, reinterpret_cast<nvmlDevice_t>(garbage_storage),
      reinterpret_cast<nvmlDevice_t>(uintptr_t{0x1234})};
  char text[96];
  unsigned value = 0;
  int major = 0;
  int minor = 0;
  nvmlPciInfo_t pci;
  nvmlMemory_t memory;
  nvmlGpuTopologyLevel_t level;
  nvmlEnableState_t state;
  unsigned long long events = 0;
  for (nvmlDevice_t bad : kBad) {
    EXPECT_EQ(NVML(nvmlDeviceGetName)(bad, text, sizeof(text)),
              NVML_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(NVML(nvmlDeviceGetUUID)(bad, text, sizeof(text)),
              NVML_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(NVML(nvmlDeviceGetMinorNumber)(bad, &value),
              NVML_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(NVML(nvmlDeviceGetIndex)(bad, &value),
              NVML_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(NVML(nvmlDeviceGetPciInfo_v3)(bad, &pci),
              NVML_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(NVML(nvmlDeviceGetMemoryInfo)(bad, &memory),
              NVML_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(NVML(nvmlDeviceGetCudaComputeCapability)(bad, &major, &minor),
              NVML_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(NVML(nvmlDeviceGetMigMode)(bad, &value, &value),
              NVML_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(NVML(nvmlDeviceGetTopologyCommonAncestor)(bad, Device(0), &level),
              NVML_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(NVML(nvmlDeviceGetTopologyCommonAncestor)(Device(0), bad, &level),
              NVML_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(NVML(nvmlDeviceGetNvLinkState)(bad, 0, &state),
              NVML_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(NVML(nvmlDeviceGetSupportedEventTypes)(bad, &events),
              NVML_ERROR_INVALID_ARGUMENT);
  }
}

TEST_F(LookupTest, NullOutputsAreInvalidArguments) {
  const nvmlDevice_t device = Device(0);
  int major = 0;
  unsigned value = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetName)(device, nullptr, 64),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetUUID)(device, nullptr, 96),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetMinorNumber)(device, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetIndex)(device, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetPciInfo)(device, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetMemoryInfo)(device, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetMemoryInfo_v2)(device, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetCudaComputeCapability)(device, &major, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetMigMode)(device, &value, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(
      NVML(nvmlDeviceGetTopologyCommonAncestor)(device, Device(1), nullptr),
      NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetSupportedEventTypes)(device, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace gdp::fake_nvml::testing
