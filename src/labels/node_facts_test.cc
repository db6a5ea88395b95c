#include "labels/node_facts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "testing/temp_dir.h"
#include "util/fifo_testing.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class NodeFactsTest : public ::testing::Test {
 protected:
  const gdp::testing::TempDir tmp_{"facts"};
  const fs::path dir_ = tmp_.path();
};

TEST_F(NodeFactsTest, MachineType) {
  std::ofstream(dir_ / "product_name") << "  DGX A100 \n";
  EXPECT_EQ(ReadMachineType((dir_ / "product_name").string()), "DGX A100");
  EXPECT_EQ(ReadMachineType((dir_ / "missing").string()), "unknown");
  EXPECT_EQ(ReadMachineType(""), "unknown");
}

TEST_F(NodeFactsTest, AFifoInPlaceOfAFactDoesNotBlock) {
  const std::string fifo = (dir_ / "fifo").string();
  std::string got;
  EXPECT_TRUE(testing::ReturnsWithFifoInPlace(
      fifo, [&] { got = ReadMachineType(fifo); }));
  EXPECT_EQ(got, "unknown");
}

TEST_F(NodeFactsTest, PciClassTable) {
  const fs::path sys = dir_ / "sys";
  struct Case {
    const char* bus_id;
    const char* content;  // nullptr: no file
    absl::StatusCode code;
    uint32_t want;
  } cases[] = {
      {"0000:07:00.0", "0x030200\n", absl::StatusCode::kOk, 0x030200},
      {"0000:08:00.0", "0x030000", absl::StatusCode::kOk, 0x030000},
      {"0000:09:00.0", "junk\n", absl::StatusCode::kInvalidArgument, 0},
      {"0000:0a:00.0", "030200\n", absl::StatusCode::kInvalidArgument, 0},
      {"0000:0b:00.0", nullptr, absl::StatusCode::kNotFound, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.bus_id);
    const fs::path dev = sys / "bus/pci/devices" / c.bus_id;
    fs::create_directories(dev);
    if (c.content != nullptr) std::ofstream(dev / "class") << c.content;
    absl::StatusOr<uint32_t> got = ReadPciClass(sys.string(), c.bus_id);
    EXPECT_EQ(got.status().code(), c.code) << got.status();
    if (got.ok()) {
      EXPECT_EQ(*got, c.want);
    } else {
      EXPECT_THAT(got.status().message(), HasSubstr(c.bus_id));
    }
  }
}

TEST_F(NodeFactsTest, ReadNodeFactsFollowsConfig) {
  NodeGpus node;
  node.gpus.resize(2);
  node.gpus[0].pci_bus_id = "0000:07:00.0";
  node.gpus[1].pci_bus_id = "0000:08:00.0";
  fs::create_directories(dir_ / "sys/bus/pci/devices/0000:07:00.0");
  std::ofstream(dir_ / "sys/bus/pci/devices/0000:07:00.0/class")
      << "0x030000\n";
  std::ofstream(dir_ / "product") << "X\n";
  Config config;
  config.sysfs_root = (dir_ / "sys").string();
  config.gfd.machine_type_file = (dir_ / "product").string();
  NodeFacts f = ReadNodeFacts(node, config, absl::FromUnixSeconds(7));
  EXPECT_EQ(f.machine_type, "X");
  ASSERT_EQ(f.pci_classes.size(), 2u);
  EXPECT_EQ(*f.pci_classes[0], 0x030000u);
  EXPECT_FALSE(f.pci_classes[1].ok());
  EXPECT_EQ(f.timestamp, absl::FromUnixSeconds(7));
  config.gfd.no_timestamp = true;
  EXPECT_FALSE(ReadNodeFacts(node, config, absl::Now()).timestamp.has_value());
}

}  // namespace
}  // namespace gdp
