#include "device/gpu.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "device/device.h"
#include "nvml/nvml.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;

TEST(ReadNumaNodeTest, Table) {
  fs::path sys =
      fs::temp_directory_path() / ("gdp-numa-" + std::to_string(getpid()));
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
  fs::remove_all(sys);
}

class DiscoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gdp-disc-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "drv/usr/lib64");
    fs::create_symlink(GDP_FAKE_NVML_LIB,
                       dir_ / "drv/usr/lib64/libnvidia-ml.so.1");
    std::string machine = std::string(GDP_MACHINES_DIR) + "/dgx-a100.yaml";
    setenv("FAKE_NVML_MACHINE", machine.c_str(), 1);
    setenv("FAKE_NVML_CONTROL", (dir_ / "control").c_str(), 1);
    std::string cmd = std::string(GDP_FAKE_NVML_TOOL) + " rootfs --machine " +
                      machine + " --out " + (dir_ / "root").string();
    ASSERT_EQ(system(cmd.c_str()), 0);
    auto nvml = Nvml::Open((dir_ / "drv").string());
    ASSERT_TRUE(nvml.ok()) << nvml.status();
    nvml_ = *std::move(nvml);
  }
  void TearDown() override {
    nvml_.reset();
    unsetenv("FAKE_NVML_CONTROL");
    fs::remove_all(dir_);
  }

  fs::path dir_;
  std::unique_ptr<Nvml> nvml_;
};

TEST_F(DiscoveryTest, DescribesEveryGpu) {
  auto node = DiscoverGpus(*nvml_, (dir_ / "root/sys").string());
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
    EXPECT_EQ(g.numa_node, i < 4 ? 0 : 1);
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

TEST_F(DiscoveryTest, LostGpuIsLeftOutAndTheOthersServed) {
  std::ofstream(dir_ / "control", std::ios::app) << "lose 5\n";
  absl::StatusOr<NodeGpus> node;
  for (int i = 0; i < 200; ++i) {
    node = DiscoverGpus(*nvml_, (dir_ / "root/sys").string());
    if (node.ok() && !node->unusable.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->gpus.size(), 7u);
  ASSERT_EQ(node->unusable.size(), 1u);
  EXPECT_THAT(std::string(node->unusable[0].message()),
              ::testing::StartsWith("GPU 5: "));
  EXPECT_EQ(NvmlCode(node->unusable[0]), NVML_ERROR_GPU_IS_LOST);
}

}  // namespace
}  // namespace gdp
