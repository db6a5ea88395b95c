// The fake-nvml tool: rootfs fixture and command line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "fake_nvml/test_client.h"

namespace gdp::fake_nvml::testing {
namespace {

using ::testing::HasSubstr;

using RootfsTest = FakeNvmlTest;

// Runs the tool with `args`; returns its exit status, output in *output.
int RunTool(const std::string& args, const std::string& dir,
            std::string* output) {
  const std::string out_file = dir + "/tool.out";
  const int status = std::system(
      (std::string(FAKE_NVML_TOOL) + " " + args + " >" + out_file + " 2>&1")
          .c_str());
  std::ostringstream text;
  text << std::ifstream(out_file).rdbuf();
  *output = text.str();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ostringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

// Where sys/bus/pci/devices/<bus_id> under `root` links to, with the
// "../../../devices/" the kernel's relative links start with removed; ""
// when it is not such a link.
std::string DevicePath(const std::filesystem::path& root,
                       const std::string& bus_id) {
  const std::filesystem::path link = root / "sys/bus/pci/devices" / bus_id;
  if (!std::filesystem::is_symlink(link)) return "";
  std::string target = std::filesystem::read_symlink(link).string();
  const std::string prefix = "../../../devices/";
  if (target.compare(0, prefix.size(), prefix) != 0) return "";
  return target.substr(prefix.size());
}

// The first `n` components of a path.
std::string Prefix(const std::string& path, int n) {
  size_t end = 0;
  for (int i = 0; i < n && end != std::string::npos; ++i) {
    end = path.find('/', end == 0 ? 0 : end + 1);
  }
  return path.substr(0, end);
}

TEST_F(RootfsTest, WritesSysfsAndDevNodes) {
  const std::filesystem::path root = dir_ + "/root";
  std::string output;
  ASSERT_EQ(
      RunTool("rootfs --device-nodes files --machine " +
                  ShippedMachine("dgx-a100.yaml") + " --out " + root.string(),
              dir_, &output),
      0)
      << output;
  const char* kBusIds[] = {"0000:07:00.0", "0000:0f:00.0", "0000:47:00.0",
                           "0000:4e:00.0", "0000:87:00.0", "0000:90:00.0",
                           "0000:b7:00.0", "0000:bd:00.0"};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(ReadFile(root / "sys/bus/pci/devices" / kBusIds[i] / "numa_node"),
              i < 4 ? "0\n" : "1\n")
        << kBusIds[i];
    EXPECT_EQ(ReadFile(root / "sys/bus/pci/devices" / kBusIds[i] / "class"),
              "0x030200\n")
        << kBusIds[i];
    const auto node = root / "dev" / ("nvidia" + std::to_string(i));
    EXPECT_TRUE(std::filesystem::is_regular_file(node)) << node;
    EXPECT_EQ(std::filesystem::file_size(node), 0u);
  }
  for (const char* name :
       {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"}) {
    EXPECT_TRUE(std::filesystem::is_regular_file(root / "dev" / name)) << name;
  }
  EXPECT_FALSE(std::filesystem::exists(root / "dev/nvidia8"));
  // The kernel's layout: each GPU below its host bridge's root bus, the
  // root port, its PCIe switch's upstream and downstream ports.
  EXPECT_EQ(DevicePath(root, kBusIds[0]),
            "pci0000:00/0000:00:01.0/0000:04:00.0/0000:05:01.0/0000:07:00.0");
  EXPECT_EQ(DevicePath(root, kBusIds[1]),
            "pci0000:00/0000:00:01.0/0000:04:00.0/0000:05:01.1/0000:0f:00.0");
  for (int i = 0; i < 8; ++i) {
    const std::string path = DevicePath(root, kBusIds[i]);
    EXPECT_EQ(Prefix(path, 1), "pci0000:0" + std::to_string(i / 2)) << path;
    EXPECT_EQ(path.substr(path.size() - 12), kBusIds[i]);
    EXPECT_TRUE(std::filesystem::is_directory(root / "sys/devices" / path));
    // GPUs below one switch share everything down to its upstream port.
    if (i % 2 == 1) {
      EXPECT_EQ(Prefix(path, 3), Prefix(DevicePath(root, kBusIds[i - 1]), 3));
    }
  }
}

TEST_F(RootfsTest, SysfsFollowsHostBridgesAndNestedSwitches) {
  const std::filesystem::path root = dir_ + "/root";
  std::string output;
  ASSERT_EQ(RunTool("rootfs --machine " + ShippedMachine("dgx2-v100.yaml") +
                        " --out " + root.string(),
                    dir_, &output),
            0)
      << output;
  // GPUs 0-1 below leaf switch 1, 2-3 below leaf switch 2, both below
  // switch 0 on host bridge 0; GPUs 4-7 on host bridge 1.
  const std::string gpu0 = DevicePath(root, "0000:34:00.0");
  const std::string gpu1 = DevicePath(root, "0000:36:00.0");
  const std::string gpu2 = DevicePath(root, "0000:39:00.0");
  const std::string gpu4 = DevicePath(root, "0000:57:00.0");
  EXPECT_EQ(Prefix(gpu0, 1), "pci0000:00");
  EXPECT_EQ(Prefix(gpu4, 1), "pci0000:01");
  EXPECT_EQ(std::count(gpu0.begin(), gpu0.end(), '/'), 6) << gpu0;
  EXPECT_EQ(Prefix(gpu0, 5), Prefix(gpu1, 5));
  EXPECT_NE(Prefix(gpu0, 4), Prefix(gpu2, 4));
  EXPECT_EQ(Prefix(gpu0, 3), Prefix(gpu2, 3));
  EXPECT_EQ(ReadFile(root / "sys/bus/pci/devices/0000:e7:00.0/numa_node"),
            "1\n");

  // Without switches the GPU sits right below its root port.
  ASSERT_EQ(RunTool("rootfs --machine " + ShippedMachine("pcie-t4.yaml") +
                        " --out " + root.string() + "-t4",
                    dir_, &output),
            0)
      << output;
  EXPECT_EQ(DevicePath(root.string() + "-t4", "0000:3b:00.0"),
            "pci0000:00/0000:00:01.0/0000:3b:00.0");
  EXPECT_EQ(DevicePath(root.string() + "-t4", "0000:af:00.0"),
            "pci0000:01/0000:01:01.0/0000:af:00.0");
}

TEST_F(RootfsTest, ReplacesAnOlderFixture) {
  const std::filesystem::path root = dir_ + "/root";
  // The layout of older fixtures: a plain directory per GPU.
  std::filesystem::create_directories(root /
                                      "sys/bus/pci/devices/0000:3b:00.0");
  std::ofstream(root / "sys/bus/pci/devices/0000:3b:00.0/numa_node") << "7\n";
  std::string output;
  for (int run = 0; run < 2; ++run) {
    ASSERT_EQ(RunTool("rootfs --machine " + ShippedMachine("pcie-t4.yaml") +
                          " --out " + root.string(),
                      dir_, &output),
              0)
        << output;
    EXPECT_EQ(DevicePath(root, "0000:3b:00.0"),
              "pci0000:00/0000:00:01.0/0000:3b:00.0");
    EXPECT_EQ(ReadFile(root / "sys/bus/pci/devices/0000:3b:00.0/numa_node"),
              "0\n");
  }
}

TEST_F(RootfsTest, WritesMigCapabilities) {
  const std::filesystem::path root = dir_ + "/root";
  std::string output;
  ASSERT_EQ(RunTool("rootfs --machine " + ShippedMachine("h100-mig.yaml") +
                        " --out " + root.string(),
                    dir_, &output),
            0)
      << output;
  // The majors, as the kernel lists them: a capability node made at run
  // time need not exist on the host to be given to a container.
  const std::string devices = ReadFile(root / "proc/devices");
  EXPECT_THAT(devices, ::testing::StartsWith("Character devices:\n"));
  EXPECT_THAT(devices, ::testing::HasSubstr("\n121 nvidia-caps\n"));
  EXPECT_THAT(devices, ::testing::HasSubstr("\n120 nvidia-uvm\n"));
  EXPECT_THAT(devices, ::testing::HasSubstr("\n195 nvidia-frontend\n"));
  const std::string minors =
      ReadFile(root / "proc/driver/nvidia-caps/mig-minors");
  EXPECT_THAT(minors, ::testing::StartsWith(
                          "config 1\nmonitor 2\ngpu0/gi0/access 3\n"
                          "gpu0/gi0/ci0/access 4\ngpu0/gi0/ci1/access 5\n"));
  // Every possible instance of both GPUs: 2 x 15 x (1 + 8) lines.
  EXPECT_EQ(std::count(minors.begin(), minors.end(), '\n'), 2 + 2 * 135);
  const struct {
    const char* line;
    unsigned minor;
    bool exists;  // the instance exists, so does its device node
  } kCaps[] = {
      {"gpu0/gi2/access", 21, true},      {"gpu0/gi2/ci0/access", 22, true},
      {"gpu0/gi3/access", 30, true},      {"gpu0/gi3/ci0/access", 31, true},
      {"gpu0/gi9/access", 84, true},      {"gpu0/gi9/ci0/access", 85, true},
      {"gpu0/gi10/access", 93, true},     {"gpu0/gi10/ci0/access", 94, true},
      {"gpu0/gi2/ci1/access", 23, false}, {"gpu0/gi0/access", 3, false},
      {"gpu1/gi0/access", 138, false},    {"gpu1/gi14/ci7/access", 272, false},
  };
  for (const auto& c : kCaps) {
    EXPECT_THAT(minors, HasSubstr("\n" + std::string(c.line) + " " +
                                  std::to_string(c.minor) + "\n"))
        << c.line;
    EXPECT_EQ(std::filesystem::exists(root / "dev/nvidia-caps" /
                                      ("nvidia-cap" + std::to_string(c.minor))),
              c.exists)
        << c.line;
  }
  for (const char* name : {"nvidia-cap1", "nvidia-cap2"}) {
    EXPECT_TRUE(std::filesystem::exists(root / "dev/nvidia-caps" / name))
        << name;
  }
}

// What lies at `path`: "chr <major>:<minor> <mode>", "file <size>", or
// "other" / "missing".
std::string NodeAt(const std::filesystem::path& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return "missing";
  if (S_ISCHR(st.st_mode)) {
    return "chr " + std::to_string(major(st.st_rdev)) + ":" +
           std::to_string(minor(st.st_rdev)) + " " +
           std::to_string(st.st_mode & 0777);
  }
  if (S_ISREG(st.st_mode)) return "file " + std::to_string(st.st_size);
  return "other";
}

TEST_F(RootfsTest, DeviceNodesAreCharacterDevicesForRootElseFiles) {
  const bool root_user = geteuid() == 0;
  // 0666 is 438.
  const struct {
    const char* node;
    const char* chr;  // as NodeAt reports a character device
  } kNodes[] = {
      {"dev/nvidia0", "chr 195:0 438"},
      {"dev/nvidia1", "chr 195:1 438"},
      {"dev/nvidiactl", "chr 195:255 438"},
      {"dev/nvidia-modeset", "chr 195:254 438"},
      {"dev/nvidia-uvm", "chr 120:0 438"},
      {"dev/nvidia-uvm-tools", "chr 120:1 438"},
      {"dev/nvidia-caps/nvidia-cap1", "chr 121:1 438"},
      {"dev/nvidia-caps/nvidia-cap2", "chr 121:2 438"},
      {"dev/nvidia-caps/nvidia-cap21", "chr 121:21 438"},
      {"dev/nvidia-caps/nvidia-cap94", "chr 121:94 438"},
  };
  const struct {
    const char* mode;
    bool character;  // expect character devices
    bool needs_root;
  } kModes[] = {
      {"files", false, false},
      {"char", true, true},
      {"auto", root_user, false},
      // Back to files over the character devices of the run before.
      {"files", false, false},
  };
  const std::filesystem::path root = dir_ + "/root";
  for (const auto& m : kModes) {
    if (m.needs_root && !root_user) continue;
    std::string output;
    ASSERT_EQ(
        RunTool(std::string("rootfs --device-nodes ") + m.mode + " --machine " +
                    ShippedMachine("h100-mig.yaml") + " --out " + root.string(),
                dir_, &output),
        0)
        << m.mode << ": " << output;
    for (const auto& n : kNodes) {
      EXPECT_EQ(NodeAt(root / n.node), m.character ? n.chr : "file 0")
          << m.mode << " " << n.node;
    }
  }
}

TEST_F(RootfsTest, CharacterDevicesWithoutRootFailNamingTheNode) {
  if (geteuid() == 0) GTEST_SKIP() << "root may make device nodes";
  std::string output;
  EXPECT_EQ(
      RunTool("rootfs --device-nodes char --machine " +
                  ShippedMachine("pcie-t4.yaml") + " --out " + dir_ + "/root",
              dir_, &output),
      1);
  EXPECT_THAT(output, HasSubstr("cannot make character device " + dir_ +
                                "/root/dev/nvidia0 (195:0)"));
}

TEST_F(RootfsTest, NoCapabilityNodesWithoutMigCapableGpus) {
  const std::filesystem::path root = dir_ + "/root";
  std::string output;
  ASSERT_EQ(RunTool("rootfs --machine " + ShippedMachine("pcie-t4.yaml") +
                        " --out " + root.string(),
                    dir_, &output),
            0)
      << output;
  EXPECT_TRUE(
      std::filesystem::exists(root / "proc/driver/nvidia-caps/mig-minors"));
  EXPECT_FALSE(std::filesystem::exists(root / "dev/nvidia-caps"));
}

TEST_F(RootfsTest, Help) {
  std::string output;
  EXPECT_EQ(RunTool("--help", dir_, &output), 0);
  EXPECT_THAT(output, HasSubstr("rootfs"));
}

TEST_F(RootfsTest, BadMachineFails) {
  const std::string bad = WriteFile("bad.yaml", "gpus: 3\n");
  std::string output;
  EXPECT_EQ(RunTool("rootfs --machine " + bad + " --out " + dir_ + "/root",
                    dir_, &output),
            1);
  EXPECT_THAT(output, HasSubstr(bad + ":1: "));
  EXPECT_NE(RunTool("rootfs --out " + dir_, dir_, &output), 0);
  EXPECT_NE(
      RunTool("rootfs --device-nodes block --machine " +
                  ShippedMachine("pcie-t4.yaml") + " --out " + dir_ + "/root",
              dir_, &output),
      0);
  EXPECT_THAT(output, HasSubstr("--device-nodes"));
}

}  // namespace
}  // namespace gdp::fake_nvml::testing
