// NVLink queries: the DGX-1 hybrid cube-mesh, the NVSwitch fabrics of the
// DGX A100, DGX-2 and HGX H100, GPUs without NVLink, argument errors,
// inactive links, lost GPUs, failing link calls.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

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

// Every link of one GPU, read through all three NVLink calls.
struct LinkReport {
  unsigned links = 0;
  std::map<std::string, int> per_peer;  // peer bus id -> links
  std::set<nvmlIntNvLinkDeviceType_t> types;
  std::vector<int> per_switch_in_order;  // links per switch, by first link
};

LinkReport ReadLinks(nvmlDevice_t device) {
  LinkReport report;
  std::string last;
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t state;
    if (NVML(nvmlDeviceGetNvLinkState)(device, link, &state) != NVML_SUCCESS) {
      break;
    }
    EXPECT_EQ(state, NVML_FEATURE_ENABLED) << "link " << link;
    nvmlIntNvLinkDeviceType_t type;
    EXPECT_EQ(NVML(nvmlDeviceGetNvLinkRemoteDeviceType)(device, link, &type),
              NVML_SUCCESS);
    report.types.insert(type);
    nvmlPciInfo_t pci;
    EXPECT_EQ(NVML(nvmlDeviceGetNvLinkRemotePciInfo_v2)(device, link, &pci),
              NVML_SUCCESS);
    ++report.per_peer[pci.busId];
    if (type == NVML_NVLINK_DEVICE_TYPE_SWITCH) {
      if (pci.busId != last) report.per_switch_in_order.push_back(0);
      ++report.per_switch_in_order.back();
      last = pci.busId;
    }
    ++report.links;
  }
  return report;
}

TEST_F(NvLinkTest, NvSwitchMachines) {
  const struct {
    const char* file;
    unsigned gpus;
    unsigned switch_pci_device_id;
    std::vector<int> per_switch;  // links to each switch, in link order
    // GPUs whose links reach the same switches (one set per baseboard).
    std::vector<std::vector<unsigned>> boards;
  } kCases[] = {
      {"dgx-a100.yaml",
       8,
       0x1AF110DE,
       {2, 2, 2, 2, 2, 2},
       {{0, 1, 2, 3, 4, 5, 6, 7}}},
      {"hgx-h100.yaml",
       8,
       0x22A310DE,
       {5, 4, 4, 5},
       {{0, 1, 2, 3, 4, 5, 6, 7}}},
      {"h100-mig.yaml", 2, 0x22A310DE, {5, 4, 4, 5}, {{0, 1}}},
      {"dgx2-v100.yaml",
       16,
       0x1AC110DE,
       {1, 1, 1, 1, 1, 1},
       {{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}}},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.file);
    InitWith(c.file);
    std::set<std::string> all_switches;
    for (const std::vector<unsigned>& board : c.boards) {
      std::set<std::string> board_switches;
      for (unsigned i : board) {
        const LinkReport report = ReadLinks(Device(i));
        EXPECT_EQ(
            report.types,
            std::set<nvmlIntNvLinkDeviceType_t>{NVML_NVLINK_DEVICE_TYPE_SWITCH})
            << "GPU " << i;
        EXPECT_EQ(report.per_switch_in_order, c.per_switch) << "GPU " << i;
        std::set<std::string> switches;
        for (const auto& [bus_id, links] : report.per_peer) {
          switches.insert(bus_id);
          nvmlDevice_t device = nullptr;
          EXPECT_EQ(
              NVML(nvmlDeviceGetHandleByPciBusId_v2)(bus_id.c_str(), &device),
              NVML_ERROR_NOT_FOUND)
              << bus_id << " is a switch, not a GPU";
        }
        if (board_switches.empty()) board_switches = switches;
        EXPECT_EQ(switches, board_switches) << "GPU " << i;
        nvmlPciInfo_t pci;
        ASSERT_EQ(NVML(nvmlDeviceGetNvLinkRemotePciInfo_v2)(Device(i), 0, &pci),
                  NVML_SUCCESS);
        EXPECT_EQ(pci.pciDeviceId, c.switch_pci_device_id);
        EXPECT_EQ(pci.pciSubSystemId, 0u);
      }
      for (const std::string& s : board_switches) {
        EXPECT_TRUE(all_switches.insert(s).second)
            << s << " is on two baseboards";
      }
    }
    ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  }
}

TEST_F(NvLinkTest, PcieMachinesHaveNoNvLink) {
  for (const char* file : {"pcie-t4.yaml", "pcie-4gpu-2switch.yaml"}) {
    SCOPED_TRACE(file);
    InitWith(file);
    unsigned count = 0;
    ASSERT_EQ(NVML(nvmlDeviceGetCount_v2)(&count), NVML_SUCCESS);
    for (unsigned i = 0; i < count; ++i) {
      nvmlEnableState_t state;
      EXPECT_EQ(NVML(nvmlDeviceGetNvLinkState)(Device(i), 0, &state),
                NVML_ERROR_NOT_SUPPORTED);
    }
    ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  }
}

// The documented codes of the three NVLink calls, by link index and output
// pointer: NOT_SUPPORTED without NVLink, INVALID_ARGUMENT for a link past the
// GPU's last or a null output.
TEST_F(NvLinkTest, ArgumentErrors) {
  const struct {
    const char* file;
    unsigned link;
    bool null_output;
    nvmlReturn_t want;
  } kCases[] = {
      {"dgx1-v100.yaml", 0, false, NVML_SUCCESS},
      {"dgx1-v100.yaml", 5, false, NVML_SUCCESS},
      {"dgx1-v100.yaml", 6, false, NVML_ERROR_INVALID_ARGUMENT},
      {"dgx1-v100.yaml", NVML_NVLINK_MAX_LINKS, false,
       NVML_ERROR_INVALID_ARGUMENT},
      {"dgx1-v100.yaml", 0xFFFFFFFFu, false, NVML_ERROR_INVALID_ARGUMENT},
      {"dgx1-v100.yaml", 0, true, NVML_ERROR_INVALID_ARGUMENT},
      {"hgx-h100.yaml", 17, false, NVML_SUCCESS},
      {"hgx-h100.yaml", NVML_NVLINK_MAX_LINKS, false,
       NVML_ERROR_INVALID_ARGUMENT},
      {"hgx-h100.yaml", 17, true, NVML_ERROR_INVALID_ARGUMENT},
      {"dgx2-v100.yaml", 5, false, NVML_SUCCESS},
      {"dgx2-v100.yaml", 6, false, NVML_ERROR_INVALID_ARGUMENT},
      {"pcie-4gpu-2switch.yaml", 0, false, NVML_ERROR_NOT_SUPPORTED},
      {"pcie-4gpu-2switch.yaml", NVML_NVLINK_MAX_LINKS, false,
       NVML_ERROR_NOT_SUPPORTED},
      {"pcie-4gpu-2switch.yaml", 0, true, NVML_ERROR_NOT_SUPPORTED},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(::testing::Message() << c.file << " link " << c.link
                                      << (c.null_output ? " null" : ""));
    InitWith(c.file);
    nvmlEnableState_t state;
    nvmlPciInfo_t pci;
    nvmlIntNvLinkDeviceType_t type;
    EXPECT_EQ(NVML(nvmlDeviceGetNvLinkState)(Device(0), c.link,
                                             c.null_output ? nullptr : &state),
              c.want);
    EXPECT_EQ(NVML(nvmlDeviceGetNvLinkRemotePciInfo_v2)(
                  Device(0), c.link, c.null_output ? nullptr : &pci),
              c.want);
    EXPECT_EQ(NVML(nvmlDeviceGetNvLinkRemoteDeviceType)(
                  Device(0), c.link, c.null_output ? nullptr : &type),
              c.want);
    ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  }
}

// An inactive link still reports its state (disabled) and what it is wired
// to; a client must check the state before counting it.
TEST_F(NvLinkTest, InactiveLinkKeepsItsPeer) {
  std::string yaml =
      "driver_version: \"550.54.15\"\ncuda_driver_version: 12040\n"
      "nvswitches: [{bus_id: \"0000:C1:00.0\", pci_device_id: 0x1AF110DE}]\n"
      "gpus:\n";
  const char* kLinks[] = {
      "[{peer_gpu: 1, state: inactive}, {peer_gpu: 1}, {peer_switch: 0, "
      "state: inactive}]",
      "[{peer_gpu: 0, state: inactive}, {peer_gpu: 0}]"};
  for (int i = 0; i < 2; ++i) {
    yaml += "  - {name: NVIDIA A100-SXM4-80GB, uuid: GPU-0000000" +
            std::to_string(i) +
            "-0000-0000-0000-000000000000, minor: " + std::to_string(i) +
            ", bus_id: \"0" + std::to_string(i + 1) +
            ":00.0\", pci_device_id: 0x20B210DE, pci_subsystem_id: "
            "0x146310DE, memory_mib: 81920, compute_capability: \"8.0\", "
            "numa_node: 0, host_bridge: 0, nvlinks: " +
            kLinks[i] + "}\n";
  }
  UseMachine(WriteFile("inactive.yaml", yaml));
  ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
  const struct {
    unsigned link;
    nvmlEnableState_t state;
    nvmlIntNvLinkDeviceType_t type;
    const char* bus_id;
  } kCases[] = {
      {0, NVML_FEATURE_DISABLED, NVML_NVLINK_DEVICE_TYPE_GPU,
       "00000000:02:00.0"},
      {1, NVML_FEATURE_ENABLED, NVML_NVLINK_DEVICE_TYPE_GPU,
       "00000000:02:00.0"},
      {2, NVML_FEATURE_DISABLED, NVML_NVLINK_DEVICE_TYPE_SWITCH,
       "00000000:C1:00.0"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(::testing::Message() << "link " << c.link);
    nvmlEnableState_t state;
    ASSERT_EQ(NVML(nvmlDeviceGetNvLinkState)(Device(0), c.link, &state),
              NVML_SUCCESS);
    EXPECT_EQ(state, c.state);
    nvmlIntNvLinkDeviceType_t type;
    ASSERT_EQ(
        NVML(nvmlDeviceGetNvLinkRemoteDeviceType)(Device(0), c.link, &type),
        NVML_SUCCESS);
    EXPECT_EQ(type, c.type);
    nvmlPciInfo_t pci;
    ASSERT_EQ(
        NVML(nvmlDeviceGetNvLinkRemotePciInfo_v2)(Device(0), c.link, &pci),
        NVML_SUCCESS);
    EXPECT_STREQ(pci.busId, c.bus_id);
  }
}

// A lost GPU answers GPU_IS_LOST on its own links; its peers still report
// their links to it (the answer comes from their side).
TEST_F(NvLinkTest, LostGpu) {
  UseControl();
  InitWith("dgx1-v100.yaml");
  const nvmlDevice_t gpu1 = Device(1);
  Control("lose 1");
  ASSERT_TRUE(Eventually([&] {
    nvmlEnableState_t state;
    return NVML(nvmlDeviceGetNvLinkState)(gpu1, 0, &state) ==
           NVML_ERROR_GPU_IS_LOST;
  }));
  nvmlPciInfo_t pci;
  nvmlIntNvLinkDeviceType_t type;
  EXPECT_EQ(NVML(nvmlDeviceGetNvLinkRemotePciInfo_v2)(gpu1, 0, &pci),
            NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(NVML(nvmlDeviceGetNvLinkRemoteDeviceType)(gpu1, 0, &type),
            NVML_ERROR_GPU_IS_LOST);
  // GPU 0's link 0 goes to GPU 1.
  ASSERT_EQ(NVML(nvmlDeviceGetNvLinkRemotePciInfo_v2)(Device(0), 0, &pci),
            NVML_SUCCESS);
  EXPECT_STREQ(pci.busId, "00000000:07:00.0");
  EXPECT_EQ(NVML(nvmlDeviceGetNvLinkRemoteDeviceType)(Device(0), 0, &type),
            NVML_SUCCESS);
  EXPECT_EQ(type, NVML_NVLINK_DEVICE_TYPE_GPU);
}

// fail-nvlink fails the link calls of one GPU only, until recover; the
// GPU's other calls and the other GPUs' links keep working.
TEST_F(NvLinkTest, FailNvLinkUntilRecover) {
  UseControl();
  InitWith("dgx1-v100.yaml");
  const nvmlDevice_t gpu3 = Device(3);
  Control("fail-nvlink 3 999");
  nvmlEnableState_t state;
  ASSERT_TRUE(Eventually([&] {
    return NVML(nvmlDeviceGetNvLinkState)(gpu3, 0, &state) ==
           NVML_ERROR_UNKNOWN;
  }));
  nvmlPciInfo_t pci;
  nvmlIntNvLinkDeviceType_t type;
  EXPECT_EQ(NVML(nvmlDeviceGetNvLinkRemotePciInfo_v2)(gpu3, 0, &pci),
            NVML_ERROR_UNKNOWN);
  EXPECT_EQ(NVML(nvmlDeviceGetNvLinkRemoteDeviceType)(gpu3, 0, &type),
            NVML_ERROR_UNKNOWN);
  EXPECT_EQ(NVML(nvmlDeviceGetPciInfo_v3)(gpu3, &pci), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetNvLinkState)(Device(2), 0, &state), NVML_SUCCESS);
  Control("recover");
  EXPECT_TRUE(Eventually([&] {
    return NVML(nvmlDeviceGetNvLinkState)(gpu3, 0, &state) == NVML_SUCCESS;
  }));
}

}  // namespace
}  // namespace gdp::fake_nvml::testing
