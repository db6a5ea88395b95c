#include "config/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/names.h"

namespace gdp {
namespace {

using ::testing::HasSubstr;

TEST(ConfigTest, DefaultsAreValid) { EXPECT_TRUE(Validate(Config{}).ok()); }

TEST(ConfigTest, ConsumableSharesNeedTheGateAndAMode) {
  Config c;
  c.feature_gates.consumable_shares = true;  // the gate alone: no shares
  EXPECT_TRUE(Validate(c).ok());
  EXPECT_FALSE(c.ConsumableSharesOn());
  c.consumable_shares.mode = ConsumableShares::Mode::kUnlimited;
  EXPECT_TRUE(Validate(c).ok());
  EXPECT_TRUE(c.ConsumableSharesOn());
  c.memory_limit_hook = MemoryLimitHookKind::kNvidia;
  c.memory_limit_hook_path = "/usr/bin/nvidia-cdi-hook";
  EXPECT_TRUE(Validate(c).ok());
}

Sharing TimeSlicing(std::vector<SharedResource> resources) {
  Sharing s;
  s.strategy = SharingStrategy::kTimeSlicing;
  s.resources = std::move(resources);
  return s;
}

SharedResource Gpu(int replicas) {
  SharedResource r;
  r.name = "nvidia.com/gpu";
  r.replicas = replicas;
  return r;
}

// Validate names settings by their flag, or by their config file path when
// no flag gives them.
TEST(ConfigTest, RefusesNamingTheSetting) {
  struct Case {
    void (*mutate)(Config&);
    const char* message;
  } cases[] = {
      {[](Config& c) { c.kubelet_socket = "kubelet.sock"; },
       "--kubelet-socket: must be an absolute path"},
      {[](Config& c) { c.kubelet_socket = "/dir/"; },
       "--kubelet-socket: must name a socket file"},
      {[](Config& c) {
         c.kubelet_socket = "/" + std::string(120, 'd') + "/k.sock";
       },
       "longer than the 107 bytes"},
      {[](Config& c) { c.driver_root = ""; }, "--driver-root: must be"},
      {[](Config& c) { c.dev_root = "dev"; }, "--dev-root: must be"},
      {[](Config& c) { c.sysfs_root = "sys"; }, "--sysfs-root: must be"},
      {[](Config& c) { c.verbosity = -1; }, "-v: must be 0 or more"},
      {[](Config& c) { c.nvml_retry_interval = absl::ZeroDuration(); },
       "--nvml-retry-interval: must be positive"},
      {[](Config& c) { c.container_driver_root = "driver-root"; },
       "--driver-root-ctr-path: must be an absolute path"},
      {[](Config& c) { c.mps_root = "mps"; },
       "--mps-root: must be an absolute path"},
      {[](Config& c) { c.cdi_spec_dir = ""; },
       "--cdi-spec-dir: must be an absolute path"},
      {[](Config& c) { c.proc_root = "proc"; },
       "--proc-root: must be an absolute path"},
      {[](Config& c) { c.cdi_annotation_prefix = "cdi.k8s.io"; },
       "--cdi-annotation-prefix: 'cdi.k8s.io' must end with '/'"},
      {[](Config& c) { c.cdi_annotation_prefix = "/"; },
       "--cdi-annotation-prefix: '' before the '/' must be a DNS subdomain"},
      {[](Config& c) { c.cdi_annotation_prefix = "-cdi.k8s.io/"; },
       "--cdi-annotation-prefix: '-cdi.k8s.io' before the '/'"},
      {[](Config& c) { c.device_list_strategies.clear(); },
       "--device-list-strategy: needs at least one of envvar, "
       "volume-mounts, cdi-annotations or cdi-cri"},
      {[](Config& c) {
         c.device_list_strategies = {DeviceListStrategy::kCdiCri,
                                     DeviceListStrategy::kEnvvar,
                                     DeviceListStrategy::kCdiCri};
       },
       "--device-list-strategy: lists 'cdi-cri' twice"},
      {[](Config& c) {
         c.gpu_resources = {{"", "nvidia.com/gpu"}};
       },
       "resources.gpus[0].pattern: must not be empty"},
      {[](Config& c) {
         c.mig_resources = {{"1g.10gb", "mig-1g.10gb"}};
       },
       "resources.mig[0].name: resource name 'mig-1g.10gb' must start with "
       "'nvidia.com/'"},
      {[](Config& c) { c.sharing = TimeSlicing({}); },
       "sharing.timeSlicing.resources: must list at least one resource"},
      {[](Config& c) {
         c.sharing.resources = {Gpu(2)};  // strategy none
       },
       "sharing: has resources but neither timeSlicing nor mps"},
      {[](Config& c) { c.sharing = TimeSlicing({Gpu(1)}); },
       "sharing.timeSlicing.resources[0].replicas: must be at least 2, got 1"},
      {[](Config& c) {
         c.sharing = TimeSlicing({Gpu(2)});
         c.sharing.strategy = SharingStrategy::kMps;
       },
       "sharing.mps: needs the MPS root directory"},
      {[](Config& c) {
         c.sharing = TimeSlicing({Gpu(2)});
         c.sharing.strategy = SharingStrategy::kMps;
         c.mps_root = "/mps";
         c.mig_strategy = MigStrategy::kMixed;
       },
       "sharing.mps: cannot be used with MIG strategy 'mixed' (set by "
       "--mig-strategy)"},
      {[](Config& c) {
         c.sharing = TimeSlicing({Gpu(2)});
         c.sharing.resources[0].devices.kind = SharedDevices::Kind::kList;
         c.sharing.resources[0].devices.list = {"0", "GPU-x"};
       },
       "sharing.timeSlicing.resources[0].devices[1]: 'GPU-x' is not"},
      {[](Config& c) { c.gfd.sleep_interval = absl::ZeroDuration(); },
       "--sleep-interval: must be positive"},
      // As NVIDIA's driver: the mode needs the gate.
      {[](Config& c) {
         c.consumable_shares.mode = ConsumableShares::Mode::kMemory;
       },
       "--consumable-shares: requires feature gate ConsumableShares to be "
       "enabled (--feature-gates=ConsumableShares=true)"},
      {[](Config& c) { c.memory_limit_hook_path = "bin/hook"; },
       "--memory-limit-hook-path: must be an absolute path"},
      {[](Config& c) { c.memory_limit_hook = MemoryLimitHookKind::kNvidia; },
       "--memory-limit-hook-path: must name the container toolkit's "
       "nvidia-cdi-hook"},
  };
  for (const Case& c : cases) {
    Config cfg;
    c.mutate(cfg);
    absl::Status s = Validate(cfg);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
  }
}

TEST(ConfigTest, ValidWhereItCounts) {
  Config c;
  c.mig_strategy = MigStrategy::kSingle;
  c.mps_root = "/run/nvidia/mps";
  c.sharing = TimeSlicing({Gpu(48)});
  c.sharing.strategy = SharingStrategy::kMps;
  c.device_list_strategies = {DeviceListStrategy::kCdiAnnotations,
                              DeviceListStrategy::kCdiCri};
  c.cdi_annotation_prefix = "cdi.example.com/";
  c.gpu_resources = {{"*A100*", "nvidia.com/a100"}, {"*", "nvidia.com/gpu"}};
  c.gfd.sleep_interval = absl::InfiniteDuration();
  EXPECT_TRUE(Validate(c).ok()) << Validate(c);
}

TEST(ConfigTest, AdvertisedName) {
  Sharing s = TimeSlicing({Gpu(2)});
  EXPECT_EQ(AdvertisedName(s, s.resources[0]), "nvidia.com/gpu");
  s.rename_by_default = true;
  EXPECT_EQ(AdvertisedName(s, s.resources[0]), "nvidia.com/gpu.shared");
  s.resources[0].rename = "nvidia.com/shared";
  EXPECT_EQ(AdvertisedName(s, s.resources[0]), "nvidia.com/shared");
}

TEST(NamesTest, Spellings) {
  EXPECT_EQ(ParseName<MigStrategy>("mixed"), MigStrategy::kMixed);
  EXPECT_EQ(ParseName<MigStrategy>("Mixed"), std::nullopt);
  EXPECT_EQ(NameOf(DeviceListStrategy::kVolumeMounts), "volume-mounts");
  EXPECT_EQ(NameOf(SharingStrategy::kTimeSlicing), "time-slicing");
  EXPECT_EQ(ParseName<SharedAllocationPolicy>("packed"),
            SharedAllocationPolicy::kPacked);
  EXPECT_EQ(ParseName<DeviceIdStrategy>("index"), DeviceIdStrategy::kIndex);
  EXPECT_THAT(AllNames<DeviceIdStrategy>(),
              ::testing::ElementsAre("uuid", "index"));
  EXPECT_EQ(NameChoices<MigStrategy>(), "none, single or mixed");
}

TEST(NamesTest, ResourceNames) {
  EXPECT_EQ(QualifyResourceName("gpu"), "nvidia.com/gpu");
  EXPECT_EQ(QualifyResourceName("nvidia.com/gpu"), "nvidia.com/gpu");
  for (const char* ok : {"nvidia.com/gpu", "nvidia.com/mig-1g.10gb",
                         "nvidia.com/gpu.shared", "nvidia.com/a"}) {
    EXPECT_TRUE(CheckResourceName(ok).ok()) << ok;
  }
  const std::string longest = "nvidia.com/" + std::string(52, 'a');
  EXPECT_TRUE(CheckResourceName(longest).ok());
  for (const std::string& bad :
       {longest + "a", std::string("gpu"), std::string("nvidia.com/"),
        std::string("nvidia.com/-gpu"), std::string("nvidia.com/gpu-"),
        std::string("nvidia.com/Gpu"), std::string("nvidia.com/gpu_x"),
        std::string("nvidia.com/a/b"), std::string("nvidia.com/a..b")}) {
    EXPECT_FALSE(CheckResourceName(bad).ok()) << bad;
  }
}

TEST(NamesTest, DeviceRefs) {
  for (const char* ok : {"0", "15", "007", "0:0", "3:12",
                         "GPU-c5f7afe2-4f64-3d72-3022-324272ec4a28",
                         "GPU-C5F7AFE2-4F64-3D72-3022-324272EC4A28",
                         "MIG-c5f7afe2-4f64-3d72-3022-324272ec4a28",
                         "MIG-GPU-c5f7afe2-4f64-3d72-3022-324272ec4a28/1/0"}) {
    EXPECT_TRUE(IsDeviceRef(ok)) << ok;
  }
  for (const char* bad :
       {"", "-1", "+1", "1.5", "0:", ":1", "0:1:2", "a:1", "GPU-", "GPU-1234",
        "gpu-c5f7afe2-4f64-3d72-3022-324272ec4a28",
        "GPU-c5f7afe2-4f64-3d72-3022-324272ec4a2",
        "GPU-c5f7afe24f643d723022324272ec4a28",
        "MIG-GPU-c5f7afe2-4f64-3d72-3022-324272ec4a28/1",
        "MIG-GPU-c5f7afe2-4f64-3d72-3022-324272ec4a28/1/x", "MIG-1:0",
        "99999999999999999999999"}) {
    EXPECT_FALSE(IsDeviceRef(bad)) << bad;
  }
}

}  // namespace
}  // namespace gdp
