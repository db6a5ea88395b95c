#include "device/pci_root.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "testing/temp_dir.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;

class PcieRootTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sys_ = dir_ / "sys";
    fs::create_directories(sys_ / "bus/pci/devices");
    fs::create_directories(sys_ / "devices");
  }

  // Makes directory sys/devices/<path> (when `path` is not empty) and the
  // link sys/bus/pci/devices/<bus_id> -> `target`.
  void Link(const std::string& bus_id, const std::string& path,
            const std::string& target) {
    if (!path.empty()) fs::create_directories(sys_ / "devices" / path);
    fs::create_directory_symlink(target, sys_ / "bus/pci/devices" / bus_id);
  }

  const gdp::testing::TempDir tmp_{"pcie-root"};
  const fs::path dir_ = tmp_.path();
  fs::path sys_;
};

TEST_F(PcieRootTest, Table) {
  const std::string kernel =
      "pci0000:00/0000:00:01.0/0000:01:00.0/"
      "0000:02:08.0/0000:07:00.0";
  // The kernel's relative links.
  Link("0000:07:00.0", kernel, "../../../devices/" + kernel);
  Link("0000:47:00.0", "pci0000:40/0000:40:01.1/0000:47:00.0",
       "../../../devices/pci0000:40/0000:40:01.1/0000:47:00.0");
  Link("10000:01:00.0", "pci10000:00/10000:00:02.0/10000:01:00.0",
       "../../../devices/pci10000:00/10000:00:02.0/10000:01:00.0");
  // An absolute link resolves as well.
  Link("0000:87:00.0", "pci0000:80/0000:80:01.0/0000:87:00.0",
       (sys_ / "devices/pci0000:80/0000:80:01.0/0000:87:00.0").string());
  // Not below a root bus, or not below sys/devices at all.
  Link("0000:0a:00.0", "platform/soc/0000:0a:00.0",
       "../../../devices/platform/soc/0000:0a:00.0");
  fs::create_directories(dir_ / "elsewhere/pci0000:00/0000:0b:00.0");
  Link("0000:0b:00.0", "", "../../../../elsewhere/pci0000:00/0000:0b:00.0");
  // The root bus itself is not a device below it.
  Link("0000:0c:00.0", "pci0000:0c", "../../../devices/pci0000:0c");
  // Dangling.
  Link("0000:0d:00.0", "", "../../../devices/pci0000:00/0000:0d:00.0");
  // A plain directory, as older fixtures wrote them.
  fs::create_directories(sys_ / "bus/pci/devices/0000:0e:00.0");
  std::ofstream(sys_ / "bus/pci/devices/0000:0e:00.0/numa_node") << "0\n";

  const struct {
    const char* bus_id;
    const char* want;
  } kCases[] = {
      {"0000:07:00.0", "pci0000:00"},
      {"0000:47:00.0", "pci0000:40"},
      {"10000:01:00.0", "pci10000:00"},
      {"0000:87:00.0", "pci0000:80"},
      {"0000:0a:00.0", ""},
      {"0000:0b:00.0", ""},
      {"0000:0c:00.0", ""},
      {"0000:0d:00.0", ""},
      {"0000:0e:00.0", ""},
      {"0000:0f:00.0", ""},  // missing
  };
  for (const auto& c : kCases) {
    EXPECT_EQ(ReadPcieRoot(sys_.string(), c.bus_id), c.want) << c.bus_id;
  }
}

TEST_F(PcieRootTest, SysfsRootMayBeALinkOrRelative) {
  const std::string path = "pci0000:3a/0000:3a:00.0/0000:3b:00.0";
  Link("0000:3b:00.0", path, "../../../devices/" + path);
  fs::create_directory_symlink(sys_, dir_ / "sys-link");
  EXPECT_EQ(ReadPcieRoot((dir_ / "sys-link").string(), "0000:3b:00.0"),
            "pci0000:3a");
  const fs::path cwd = fs::current_path();
  fs::current_path(dir_);
  EXPECT_EQ(ReadPcieRoot("sys", "0000:3b:00.0"), "pci0000:3a");
  fs::current_path(cwd);
}

TEST_F(PcieRootTest, MissingSysfsIsEmpty) {
  EXPECT_EQ(ReadPcieRoot((dir_ / "nothing").string(), "0000:07:00.0"), "");
}

}  // namespace
}  // namespace gdp
