// Product brand and architecture: machine file fields, their defaults, and
// what MIG device handles answer.
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "fake_nvml/test_client.h"

namespace gdp::fake_nvml::testing {
namespace {

using IdentityTest = FakeNvmlTest;

// A one-line GPU entry with index `i`, compute capability `cc` and `extra`
// fields.
std::string GpuEntry(int i, const std::string& cc, const std::string& extra) {
  return absl::StrCat(
      "  - {name: Some GPU, uuid: GPU-", absl::Dec(i, absl::kZeroPad8),
      "-0000-0000-0000-000000000000, minor: ", i,
      ", bus_id: \"0000:", absl::Hex(i + 1, absl::kZeroPad2),
      ":00.0\", pci_device_id: 0x20B010DE, pci_subsystem_id: 0x134F10DE, "
      "memory_mib: 1024, compute_capability: \"",
      cc, "\", numa_node: 0, host_bridge: 0", extra, "}\n");
}

TEST_F(IdentityTest, ArchitectureFollowsComputeCapabilityUnlessGiven) {
  const struct {
    const char* cc;
    const char* extra;
    nvmlDeviceArchitecture_t want;
  } kCases[] = {
      {"3.7", "", NVML_DEVICE_ARCH_KEPLER},
      {"5.2", "", NVML_DEVICE_ARCH_MAXWELL},
      {"6.0", "", NVML_DEVICE_ARCH_PASCAL},
      {"7.0", "", NVML_DEVICE_ARCH_VOLTA},
      {"7.2", "", NVML_DEVICE_ARCH_VOLTA},
      {"7.5", "", NVML_DEVICE_ARCH_TURING},
      {"8.0", "", NVML_DEVICE_ARCH_AMPERE},
      {"8.6", "", NVML_DEVICE_ARCH_AMPERE},
      {"8.7", "", NVML_DEVICE_ARCH_AMPERE},
      {"8.9", "", NVML_DEVICE_ARCH_ADA},
      {"9.0", "", NVML_DEVICE_ARCH_HOPPER},
      {"10.0", "", NVML_DEVICE_ARCH_BLACKWELL},
      {"12.0", "", NVML_DEVICE_ARCH_BLACKWELL},
      {"2.1", "", NVML_DEVICE_ARCH_UNKNOWN},
      {"7.1", "", NVML_DEVICE_ARCH_UNKNOWN},
      {"8.8", "", NVML_DEVICE_ARCH_UNKNOWN},
      {"11.0", "", NVML_DEVICE_ARCH_UNKNOWN},
      {"8.7", ", architecture: orin", NVML_DEVICE_ARCH_T23X},
      {"9.0", ", architecture: unknown", NVML_DEVICE_ARCH_UNKNOWN},
      {"8.0", ", architecture: blackwell", NVML_DEVICE_ARCH_BLACKWELL},
  };
  std::string yaml =
      "driver_version: \"550.54.15\"\ncuda_driver_version: 12040\ngpus:\n";
  int i = 0;
  for (const auto& c : kCases) yaml += GpuEntry(i++, c.cc, c.extra);
  UseMachine(WriteFile("machine.yaml", yaml));
  ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
  i = 0;
  for (const auto& c : kCases) {
    nvmlDeviceArchitecture_t arch = 0;
    ASSERT_EQ(NVML(nvmlDeviceGetArchitecture)(Device(i), &arch), NVML_SUCCESS);
    EXPECT_EQ(arch, c.want) << c.cc << c.extra;
    nvmlBrandType_t brand = NVML_BRAND_UNKNOWN;
    ASSERT_EQ(NVML(nvmlDeviceGetBrand)(Device(i), &brand), NVML_SUCCESS);
    EXPECT_EQ(brand, NVML_BRAND_NVIDIA) << "the default";
    ++i;
  }
}

TEST_F(IdentityTest, EveryBrandName) {
  const struct {
    const char* name;
    nvmlBrandType_t want;
  } kCases[] = {
      {"unknown", NVML_BRAND_UNKNOWN},
      {"quadro", NVML_BRAND_QUADRO},
      {"tesla", NVML_BRAND_TESLA},
      {"nvs", NVML_BRAND_NVS},
      {"grid", NVML_BRAND_GRID},
      {"geforce", NVML_BRAND_GEFORCE},
      {"titan", NVML_BRAND_TITAN},
      {"nvidia_vapps", NVML_BRAND_NVIDIA_VAPPS},
      {"nvidia_vpc", NVML_BRAND_NVIDIA_VPC},
      {"nvidia_vcs", NVML_BRAND_NVIDIA_VCS},
      {"nvidia_vws", NVML_BRAND_NVIDIA_VWS},
      {"nvidia_cloud_gaming", NVML_BRAND_NVIDIA_CLOUD_GAMING},
      {"quadro_rtx", NVML_BRAND_QUADRO_RTX},
      {"nvidia_rtx", NVML_BRAND_NVIDIA_RTX},
      {"nvidia", NVML_BRAND_NVIDIA},
      {"geforce_rtx", NVML_BRAND_GEFORCE_RTX},
      {"titan_rtx", NVML_BRAND_TITAN_RTX},
  };
  std::string yaml =
      "driver_version: \"550.54.15\"\ncuda_driver_version: 12040\ngpus:\n";
  int i = 0;
  for (const auto& c : kCases) {
    yaml += GpuEntry(i++, "8.0", absl::StrCat(", brand: ", c.name));
  }
  UseMachine(WriteFile("machine.yaml", yaml));
  ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
  i = 0;
  for (const auto& c : kCases) {
    nvmlBrandType_t brand = NVML_BRAND_COUNT;
    ASSERT_EQ(NVML(nvmlDeviceGetBrand)(Device(i++), &brand), NVML_SUCCESS);
    EXPECT_EQ(brand, c.want) << c.name;
  }
}

TEST_F(IdentityTest, NullOutputAndBadHandles) {
  InitWith("dgx-a100.yaml");
  EXPECT_EQ(NVML(nvmlDeviceGetBrand)(Device(0), nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetArchitecture)(Device(0), nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  nvmlBrandType_t brand;
  nvmlDeviceArchitecture_t arch;
  EXPECT_EQ(NVML(nvmlDeviceGetBrand)(nullptr, &brand),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetArchitecture)(nullptr, &arch),
            NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetBrand)(nullptr, &brand),
            NVML_ERROR_UNINITIALIZED);
}

TEST_F(IdentityTest, LostGpuIsLost) {
  UseControl();
  InitWith("pcie-t4.yaml");
  const nvmlDevice_t gpu = Device(1);
  Control("lose 1");
  nvmlBrandType_t brand;
  ASSERT_TRUE(Eventually([&] {
    return NVML(nvmlDeviceGetBrand)(gpu, &brand) == NVML_ERROR_GPU_IS_LOST;
  }));
  nvmlDeviceArchitecture_t arch;
  EXPECT_EQ(NVML(nvmlDeviceGetArchitecture)(gpu, &arch),
            NVML_ERROR_GPU_IS_LOST);
  ASSERT_EQ(NVML(nvmlDeviceGetBrand)(Device(0), &brand), NVML_SUCCESS);
  EXPECT_EQ(brand, NVML_BRAND_TESLA);
}

TEST_F(IdentityTest, MigDevicesAnswerForTheirGpu) {
  InitWith("h100-mig.yaml");
  for (unsigned j = 0; j < 4; ++j) {
    nvmlDevice_t mig = nullptr;
    ASSERT_EQ(NVML(nvmlDeviceGetMigDeviceHandleByIndex)(Device(0), j, &mig),
              NVML_SUCCESS);
    nvmlBrandType_t brand = NVML_BRAND_UNKNOWN;
    ASSERT_EQ(NVML(nvmlDeviceGetBrand)(mig, &brand), NVML_SUCCESS);
    EXPECT_EQ(brand, NVML_BRAND_NVIDIA) << j;
    nvmlDeviceArchitecture_t arch = 0;
    ASSERT_EQ(NVML(nvmlDeviceGetArchitecture)(mig, &arch), NVML_SUCCESS);
    EXPECT_EQ(arch, NVML_DEVICE_ARCH_HOPPER) << j;
  }
}

}  // namespace
}  // namespace gdp::fake_nvml::testing
