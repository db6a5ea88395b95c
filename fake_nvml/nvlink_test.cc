// NVLink queries: the DGX-1 hybrid cube-mesh, the DGX A100 NVSwitch fabric
// and a GPU without NVLink.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>

#include "fake_nvml/test_client.h"

namespace gdp::fake_nvml::testing {
namespace {

using NvLinkTest = FakeNvmlTest;

TEST_F(NvLinkTest, Dgx1LinkCountsFollowTheHybridCubeMesh) {
  InitWith("dgx1-v100.yaml");
  const std::map<std::pair<unsigned, unsigned>, int> kPairs = {
      {{0, 1}, 1}, {{0, 2}, 1}, {{0, 3}, 2}, {{0, 4}, 2},
      {{1, 2}, 2}, {{1, 3}, 1}, {{1, 5}, 2}, {{2, 3}, 2},
      {{2, 6}, 1}, {{3, 7}, 1}, {{4, 5}, 1}, {{4, 6}, 1},
      {{4, 7}, 2}, {{5, 6}, 2}, {{5, 7}, 1}, {{6, 7}, 2}};
  std::map<std::pair<unsigned, unsigned>, int> seen;
  for (unsigned i = 0; i < 8; ++i) {
    int total = 0;
    for (unsigned link = 0; link < 6; ++link) {
      nvmlEnableState_t state;
      ASSERT_EQ(NVML(nvmlDeviceGetNvLinkState)(Device(i), link, &state),
                NVML_SUCCESS);
      EXPECT_EQ(state, NVML_FEATURE_ENABLED);
      nvmlIntNvLinkDeviceType_t type;
      ASSERT_EQ(
          NVML(nvmlDeviceGetNvLinkRemoteDeviceType)(Device(i), link, &type),
          NVML_SUCCESS);
      EXPECT_EQ(type, NVML_NVLINK_DEVICE_TYPE_GPU);
      nvmlPciInfo_t pci;
      ASSERT_EQ(
          NVML(nvmlDeviceGetNvLinkRemotePciInfo_v2)(Device(i), link, &pci),
          NVML_SUCCESS);
      nvmlDevice_t peer = nullptr;
      ASSERT_EQ(NVML(nvmlDeviceGetHandleByPciBusId_v2)(pci.busId, &peer),
                NVML_SUCCESS);
      unsigned j = 0;
      ASSERT_EQ(NVML(nvmlDeviceGetIndex)(peer, &j), NVML_SUCCESS);
      if (i < j) ++seen[{i, j}];
      ++total;
    }
    EXPECT_EQ(total, 6) << "GPU " << i;
    nvmlEnableState_t state;
    EXPECT_EQ(NVML(nvmlDeviceGetNvLinkState)(Device(i), 6, &state),
              NVML_ERROR_INVALID_ARGUMENT);
  }
  EXPECT_EQ(seen, kPairs);
}

TEST_F(NvLinkTest, DgxA100LinksGoToNvSwitches) {
  InitWith("dgx-a100.yaml");
  for (unsigned i = 0; i < 8; ++i) {
    std::map<std::string, int> per_switch;
    for (unsigned link = 0; link < 12; ++link) {
      nvmlIntNvLinkDeviceType_t type;
      ASSERT_EQ(
          NVML(nvmlDeviceGetNvLinkRemoteDeviceType)(Device(i), link, &type),
          NVML_SUCCESS);
      EXPECT_EQ(type, NVML_NVLINK_DEVICE_TYPE_SWITCH);
      nvmlPciInfo_t pci;
      ASSERT_EQ(
          NVML(nvmlDeviceGetNvLinkRemotePciInfo_v2)(Device(i), link, &pci),
          NVML_SUCCESS);
      EXPECT_EQ(pci.pciDeviceId, 0x1AF110DEu);
      ++per_switch[pci.busId];
    }
    EXPECT_EQ(per_switch.size(), 6u) << "GPU " << i;
    for (const auto& [bus_id, links] : per_switch) {
      EXPECT_EQ(links, 2) << "GPU " << i << " to " << bus_id;
      nvmlDevice_t device = nullptr;
      EXPECT_EQ(NVML(nvmlDeviceGetHandleByPciBusId_v2)(bus_id.c_str(), &device),
                NVML_ERROR_NOT_FOUND);
    }
    nvmlEnableState_t state;
    EXPECT_EQ(NVML(nvmlDeviceGetNvLinkState)(Device(i), 12, &state),
              NVML_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(NVML(nvmlDeviceGetNvLinkState)(Device(i), NVML_NVLINK_MAX_LINKS,
                                             &state),
              NVML_ERROR_INVALID_ARGUMENT);
  }
}

TEST_F(NvLinkTest, T4HasNoNvLink) {
  InitWith("pcie-t4.yaml");
  nvmlEnableState_t state;
  nvmlPciInfo_t pci;
  nvmlIntNvLinkDeviceType_t type;
  EXPECT_EQ(NVML(nvmlDeviceGetNvLinkState)(Device(0), 0, &state),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlDeviceGetNvLinkRemotePciInfo_v2)(Device(0), 0, &pci),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlDeviceGetNvLinkRemoteDeviceType)(Device(1), 0, &type),
            NVML_ERROR_NOT_SUPPORTED);
}

}  // namespace
}  // namespace gdp::fake_nvml::testing
