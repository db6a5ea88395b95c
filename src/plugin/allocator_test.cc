#include "plugin/allocator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace gdp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

DeviceList Gpus() {
  std::vector<Device> devices;
  for (int i = 0; i < 4; ++i) {
    Device d;
    d.id = "GPU-" + std::to_string(i);
    d.visible_id = d.id;
    d.device_nodes = {"/dev/nvidia" + std::to_string(i)};
    devices.push_back(d);
  }
  devices[3].health = Health::kUnhealthy;
  devices[3].unhealthy_reason = "XID 79";
  return DeviceList(devices);
}

TEST(AllocatorTest, RefusesBadRequestsNamingTheDevice) {
  struct Case {
    std::vector<std::string> ids;
    absl::StatusCode code;
    const char* message;
  } cases[] = {
      {{}, absl::StatusCode::kInvalidArgument, "names no devices"},
      {{"GPU-0", "GPU-9"},
       absl::StatusCode::kInvalidArgument,
       "unknown device ID 'GPU-9'"},
      {{"GPU-1", "GPU-1"},
       absl::StatusCode::kInvalidArgument,
       "'GPU-1' is requested more than once"},
      {{"GPU-3"},
       absl::StatusCode::kFailedPrecondition,
       "'GPU-3' is unhealthy: XID 79"},
  };
  Allocator alloc({});
  DeviceList list = Gpus();
  for (const Case& c : cases) {
    auto r = alloc.Allocate(list, c.ids);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code);
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.message));
  }
}

TEST(AllocatorTest, EnvNamesDevicesInRequestOrderWithoutSpecs) {
  Allocator alloc({});
  auto r = alloc.Allocate(Gpus(), {"GPU-2", "GPU-0"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->envs.at("NVIDIA_VISIBLE_DEVICES"), "GPU-2,GPU-0");
  EXPECT_TRUE(r->device_specs.empty());
}

TEST(AllocatorTest, DeviceSpecsIncludeControlNodesThatExist) {
  std::filesystem::path root =
      std::filesystem::temp_directory_path() / "gdp_allocator_test";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "dev");
  for (const char* f : {"nvidiactl", "nvidia-uvm", "nvidia0", "nvidia1"}) {
    std::ofstream(root / "dev" / f).put('\n');
  }
  Allocator alloc({.pass_device_specs = true, .dev_root = root.string()});
  EXPECT_THAT(alloc.control_nodes(),
              ElementsAre("/dev/nvidiactl", "/dev/nvidia-uvm"));
  auto r = alloc.Allocate(Gpus(), {"GPU-1", "GPU-0"});
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<std::string> paths;
  for (const DeviceSpecEdit& s : r->device_specs) {
    paths.push_back(s.container_path);
    EXPECT_EQ(s.host_path, root.string() + s.container_path);
    EXPECT_EQ(s.permissions, "rw");
  }
  EXPECT_THAT(paths, ElementsAre("/dev/nvidiactl", "/dev/nvidia-uvm",
                                 "/dev/nvidia1", "/dev/nvidia0"));
  std::filesystem::remove_all(root);
}

TEST(AllocatorTest, SharedVisibleIdsAreNotRepeated) {
  // Two devices backed by one GPU (as replicas will be) name it once.
  std::vector<Device> devices(2);
  devices[0].id = "GPU-0::0";
  devices[1].id = "GPU-0::1";
  for (Device& d : devices) {
    d.visible_id = "GPU-0";
    d.device_nodes = {"/dev/nvidia0"};
  }
  Allocator alloc({.pass_device_specs = true, .dev_root = "/nonexistent"});
  auto r = alloc.Allocate(DeviceList(devices), {"GPU-0::0", "GPU-0::1"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->envs.at("NVIDIA_VISIBLE_DEVICES"), "GPU-0");
  ASSERT_EQ(r->device_specs.size(), 1u);
  EXPECT_EQ(r->device_specs[0].host_path, "/nonexistent/dev/nvidia0");
}

}  // namespace
}  // namespace gdp
