#include "topology/discover.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "testing/temp_dir.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;

// Loads the fake NVML through a driver root, as on a node.
class DiscoverTopologyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "drv/usr/lib64");
    fs::create_symlink(GDP_FAKE_NVML_LIB,
                       dir_ / "drv/usr/lib64/libnvidia-ml.so.1");
    setenv("FAKE_NVML_CONTROL", (dir_ / "control").c_str(), 1);
  }
  void TearDown() override {
    nvml_.reset();
    unsetenv("FAKE_NVML_CONTROL");
  }

  Topology Discover(const std::string& machine) {
    nvml_.reset();
    setenv("FAKE_NVML_MACHINE",
           (std::string(GDP_MACHINES_DIR) + "/" + machine + ".yaml").c_str(),
           1);
    auto nvml = Nvml::Open((dir_ / "drv").string());
    EXPECT_TRUE(nvml.ok()) << nvml.status();
    nvml_ = *std::move(nvml);
    auto node = DiscoverGpus(*nvml_, "/nonexistent");
    EXPECT_TRUE(node.ok()) << node.status();
    node_ = *std::move(node);
    return DiscoverTopology(*nvml_, node_);
  }

  const gdp::testing::TempDir tmp_{"topo"};
  const fs::path dir_ = tmp_.path();
  std::unique_ptr<Nvml> nvml_;
  NodeGpus node_;
};

TEST_F(DiscoverTopologyTest, Dgx1HybridCubeMesh) {
  Topology t = Discover("dgx1-v100");
  ASSERT_EQ(t.num_gpus(), 8);
  for (int i = 0; i < 8; ++i) {
    int total = 0;
    for (int j = 0; j < 8; ++j) {
      if (i == j) continue;
      EXPECT_EQ(t.Link(i, j).nvlinks, t.Link(j, i).nvlinks);
      EXPECT_EQ(t.Link(i, j).nvswitch_links, 0);
      total += t.Link(i, j).nvlinks;
    }
    EXPECT_EQ(total, 6) << "GPU " << i << ": every V100 link is to a GPU";
    EXPECT_TRUE(t.Usable(i));
  }
  // Each quad is fully connected; the quads meet only across 0-4, 1-5, ...
  for (int i = 0; i < 4; ++i) {
    for (int j = i + 1; j < 4; ++j) {
      EXPECT_GE(t.Link(i, j).nvlinks, 1) << i << "-" << j;
      EXPECT_GE(t.Link(i + 4, j + 4).nvlinks, 1) << i + 4 << "-" << j + 4;
    }
    EXPECT_GE(t.Link(i, i + 4).nvlinks, 1);
  }
}

TEST_F(DiscoverTopologyTest, NvSwitchFabrics) {
  struct Case {
    const char* machine;
    int gpus;
    int links;
  } cases[] = {{"hgx-h100", 8, 18}, {"dgx2-v100", 16, 6}, {"dgx-a100", 8, 12}};
  for (const Case& c : cases) {
    Topology t = Discover(c.machine);
    ASSERT_EQ(t.num_gpus(), c.gpus) << c.machine;
    for (int i = 0; i < c.gpus; ++i) {
      for (int j = 0; j < c.gpus; ++j) {
        if (i == j) continue;
        EXPECT_EQ(t.Link(i, j).nvswitch_links, c.links)
            << c.machine << " " << i << "-" << j;
        EXPECT_EQ(t.Link(i, j).nvlinks, 0) << c.machine;
      }
    }
  }
}

TEST_F(DiscoverTopologyTest, PcieOnlyBoxHasSwitchPairsAndNuma) {
  Topology t = Discover("pcie-4gpu-2switch");
  ASSERT_EQ(t.num_gpus(), 4);
  EXPECT_EQ(t.Link(0, 1).pcie, PcieLevel::kSingle);
  EXPECT_EQ(t.Link(2, 3).pcie, PcieLevel::kSingle);
  EXPECT_EQ(t.Link(0, 2).pcie, PcieLevel::kSystem);
  EXPECT_EQ(t.Link(1, 3).nvlinks, 0);
  EXPECT_GT(t.PairScore(0, 1), t.PairScore(0, 2));
}

TEST_F(DiscoverTopologyTest, LostGpuIsLeftOutOthersStay) {
  Discover("hgx-h100");
  std::ofstream(dir_ / "control", std::ios::app) << "lose 3\n";
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Topology t = DiscoverTopology(*nvml_, node_);
  EXPECT_FALSE(t.Usable(3));
  for (int i : {0, 1, 2, 4, 5, 6, 7}) EXPECT_TRUE(t.Usable(i)) << i;
  EXPECT_EQ(t.Link(0, 1).nvswitch_links, 18);
}

}  // namespace
}  // namespace gdp
