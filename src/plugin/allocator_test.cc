#include "plugin/allocator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_join.h"
#include "testing/temp_dir.h"

namespace gdp {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;
using Strategy = DeviceListStrategy;

constexpr uint64_t kGiB = uint64_t{1} << 30;

Device Gpu(int index, std::string id) {
  Device d;
  d.id = id;
  d.visible_id = std::move(id);
  d.device_nodes = {"/dev/nvidia" + std::to_string(index)};
  d.gpu_index = index;
  d.gpu_uuid = "GPU-" + std::to_string(index);
  return d;
}

// GPU-0..GPU-3 (GPU-3 unhealthy); MIG-a and MIG-b on GPU 1; GPU-4 (16 GiB)
// and GPU-5 (8 GiB) with replicas ::0..::3.
DeviceList Node() {
  std::vector<Device> devices;
  for (int i = 0; i < 4; ++i)
    devices.push_back(Gpu(i, "GPU-" + std::to_string(i)));
  devices[3].health = Health::kUnhealthy;
  devices[3].unhealthy_reason = "XID 79";
  for (auto [id, gi, cap] :
       {std::tuple("MIG-a", 1, 20), std::tuple("MIG-b", 2, 30)}) {
    Device d = Gpu(1, id);
    d.mig_gi = gi;
    d.mig_ci = 0;
    d.device_nodes.push_back("/dev/nvidia-caps/nvidia-cap" +
                             std::to_string(cap));
    d.device_nodes.push_back("/dev/nvidia-caps/nvidia-cap" +
                             std::to_string(cap + 1));
    devices.push_back(d);
  }
  for (int g : {4, 5}) {
    for (int k = 0; k < 4; ++k) {
      Device d = Gpu(g, "GPU-" + std::to_string(g));
      d.id = d.visible_id + "::" + std::to_string(k);
      d.replica = k;
      d.memory_bytes = (g == 4 ? 16 : 8) * kGiB;
      devices.push_back(d);
    }
  }
  return DeviceList(devices);
}

std::vector<std::string> Paths(const std::vector<DeviceSpecEdit>& specs) {
  std::vector<std::string> out;
  for (const DeviceSpecEdit& s : specs) out.push_back(s.container_path);
  return out;
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
      {{"GPU-4::0", "GPU-5::0"},
       absl::StatusCode::kInvalidArgument,
       "request for 2 devices of 'nvidia.com/gpu' is too large"},
      {{"GPU-0", "GPU-4::1", "GPU-4::2"},
       absl::StatusCode::kInvalidArgument,
       "request for 3 devices of 'nvidia.com/gpu' is too large"},
  };
  AllocatorOptions opts;
  opts.fail_requests_greater_than_one = true;
  Allocator alloc(opts);
  DeviceList list = Node();
  for (const Case& c : cases) {
    auto r = alloc.Allocate(list, c.ids);
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_EQ(r.status().code(), c.code);
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.message));
  }
  // One replica, or several devices none of which is a replica, is fine.
  EXPECT_TRUE(alloc.Allocate(list, {"GPU-4::3"}).ok());
  EXPECT_TRUE(alloc.Allocate(list, {"GPU-0", "GPU-1"}).ok());
  // Without the option several replicas are fine.
  EXPECT_TRUE(Allocator({}).Allocate(list, {"GPU-4::0", "GPU-4::1"}).ok());
}

// Each device-list strategy alone and together, for whole GPUs, MIG
// devices and replicas. Device specs are asked for in every case: they
// come only with envvar or volume-mounts.
TEST(AllocatorTest, DeviceListStrategies) {
  const std::string kVm = "/var/run/nvidia-container-devices/";
  const std::string kCdi = "k8s.device-plugin.nvidia.com/gpu=";
  struct Case {
    const char* name;
    std::vector<Strategy> strategies;
    std::vector<std::string> ids;
    const char* visible_env;  // nullptr: not set
    std::vector<std::string> mounts;
    std::vector<std::string> specs;
    std::vector<std::string> cdi_names;  // in the annotation / cdi_devices
    bool annotation, cdi_cri;
  } cases[] = {
      {"envvar",
       {Strategy::kEnvvar},
       {"GPU-2", "GPU-0"},
       "GPU-2,GPU-0",
       {},
       {"/dev/nvidia2", "/dev/nvidia0"},
       {},
       false,
       false},
      {"envvar, replicas named once",
       {Strategy::kEnvvar},
       {"GPU-5::2", "GPU-4::1", "GPU-5::0"},
       "GPU-5,GPU-4",
       {},
       {"/dev/nvidia5", "/dev/nvidia4"},
       {},
       false,
       false},
      {"envvar, MIG devices with their caps nodes",
       {Strategy::kEnvvar},
       {"MIG-b", "MIG-a"},
       "MIG-b,MIG-a",
       {},
       {"/dev/nvidia1", "/dev/nvidia-caps/nvidia-cap30",
        "/dev/nvidia-caps/nvidia-cap31", "/dev/nvidia-caps/nvidia-cap20",
        "/dev/nvidia-caps/nvidia-cap21"},
       {},
       false,
       false},
      {"volume-mounts",
       {Strategy::kVolumeMounts},
       {"GPU-2", "GPU-4::0", "GPU-4::3"},
       "/var/run/nvidia-container-devices",
       {kVm + "GPU-2", kVm + "GPU-4"},
       {"/dev/nvidia2", "/dev/nvidia4"},
       {},
       false,
       false},
      {"cdi-annotations",
       {Strategy::kCdiAnnotations},
       {"GPU-1", "MIG-a", "GPU-5::1", "GPU-5::3"},
       nullptr,
       {},
       {},
       {kCdi + "GPU-1", kCdi + "MIG-a", kCdi + "GPU-5"},
       true,
       false},
      {"cdi-cri",
       {Strategy::kCdiCri},
       {"GPU-0", "GPU-4::2"},
       nullptr,
       {},
       {},
       {kCdi + "GPU-0", kCdi + "GPU-4"},
       false,
       true},
      {"cdi-annotations and cdi-cri",
       {Strategy::kCdiAnnotations, Strategy::kCdiCri},
       {"GPU-0"},
       nullptr,
       {},
       {},
       {kCdi + "GPU-0"},
       true,
       true},
      {"envvar and volume-mounts: the mounts' variable wins",
       {Strategy::kEnvvar, Strategy::kVolumeMounts},
       {"GPU-1"},
       "/var/run/nvidia-container-devices",
       {kVm + "GPU-1"},
       {"/dev/nvidia1"},
       {},
       false,
       false},
      {"envvar and cdi-cri",
       {Strategy::kCdiCri, Strategy::kEnvvar},
       {"MIG-a"},
       "MIG-a",
       {},
       {"/dev/nvidia1", "/dev/nvidia-caps/nvidia-cap20",
        "/dev/nvidia-caps/nvidia-cap21"},
       {kCdi + "MIG-a"},
       false,
       true},
      {"all four",
       {Strategy::kEnvvar, Strategy::kVolumeMounts, Strategy::kCdiAnnotations,
        Strategy::kCdiCri},
       {"GPU-4::0", "GPU-0"},
       "/var/run/nvidia-container-devices",
       {kVm + "GPU-4", kVm + "GPU-0"},
       {"/dev/nvidia4", "/dev/nvidia0"},
       {kCdi + "GPU-4", kCdi + "GPU-0"},
       true,
       true},
  };
  DeviceList list = Node();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    AllocatorOptions opts;
    opts.pass_device_specs = true;
    opts.dev_root = "/nonexistent/driver";
    opts.strategies = c.strategies;
    Allocator alloc(opts);
    auto r = alloc.Allocate(list, c.ids);
    ASSERT_TRUE(r.ok()) << r.status();
    if (c.visible_env == nullptr) {
      EXPECT_THAT(r->envs, IsEmpty());
    } else {
      EXPECT_THAT(r->envs,
                  ElementsAre(Pair("NVIDIA_VISIBLE_DEVICES", c.visible_env)));
    }
    std::vector<std::string> mounts;
    for (const MountEdit& m : r->mounts) {
      mounts.push_back(m.container_path);
      EXPECT_EQ(m.host_path, "/dev/null");
      EXPECT_FALSE(m.read_only);
    }
    EXPECT_EQ(mounts, c.mounts);
    EXPECT_EQ(Paths(r->device_specs), c.specs);
    for (const DeviceSpecEdit& s : r->device_specs) {
      EXPECT_EQ(s.host_path, "/nonexistent/driver" + s.container_path);
      EXPECT_EQ(s.permissions, "rw");
    }
    std::string joined;
    for (const std::string& n : c.cdi_names) {
      joined += (joined.empty() ? "" : ",") + n;
    }
    if (c.annotation) {
      ASSERT_EQ(r->annotations.size(), 1u);
      EXPECT_THAT(r->annotations.begin()->first,
                  MatchesRegex("cdi\\.k8s\\.io/nvidia-device-plugin_.*"));
      EXPECT_EQ(r->annotations.begin()->second, joined);
    } else {
      EXPECT_THAT(r->annotations, IsEmpty());
    }
    EXPECT_EQ(r->cdi_devices,
              c.cdi_cri ? c.cdi_names : std::vector<std::string>{});
  }
}

TEST(AllocatorTest, CdiAnnotationKeyIsUniqueAndWithinCdiLimits) {
  AllocatorOptions opts;
  opts.strategies = {Strategy::kCdiAnnotations};
  opts.cdi_annotation_prefix = "example.com/";
  opts.cdi_kind = "example.com/gpu";
  Allocator alloc(opts);
  DeviceList list = Node();
  auto a = alloc.Allocate(list, {"GPU-1"});
  auto b = alloc.Allocate(list, {"GPU-1"});
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->annotations.size(), 1u);
  const auto& [key, value] = *a->annotations.begin();
  EXPECT_THAT(key, MatchesRegex("example\\.com/nvidia-device-plugin_"
                                "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-"
                                "[89ab][0-9a-f]{3}-[0-9a-f]{12}"));
  EXPECT_LE(key.size() - std::string("example.com/").size(), 63u);
  EXPECT_EQ(value, "example.com/gpu=GPU-1");
  EXPECT_NE(key, b->annotations.begin()->first);
}

TEST(AllocatorTest, MpsPipeShmAndPerReplicaLimits) {
  AllocatorOptions opts;
  opts.pass_device_specs = true;
  opts.dev_root = "/nonexistent";
  opts.resource_name = "nvidia.com/gpu.shared";
  opts.sharing = SharingStrategy::kMps;
  opts.replicas = 4;
  opts.mps_root = "/run/nvidia/mps/";
  Allocator alloc(opts);
  DeviceList list = Node();
  // Ordinals follow GPU index (GPU-4 before GPU-5), not request order; two
  // replicas of GPU-5 are two shares of its memory; the thread percentage
  // (one per client) is the smallest share, GPU-4's one replica.
  auto r = alloc.Allocate(list, {"GPU-5::1", "GPU-4::2", "GPU-5::3"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(
      r->envs,
      UnorderedElementsAre(
          Pair("NVIDIA_VISIBLE_DEVICES", "GPU-5,GPU-4"),
          Pair("CUDA_MPS_PIPE_DIRECTORY", "/mps/nvidia.com/gpu.shared/pipe"),
          Pair("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "25"),
          Pair("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=4096M,1=4096M")));
  ASSERT_EQ(r->mounts.size(), 2u);
  EXPECT_EQ(r->mounts[0].container_path, "/mps/nvidia.com/gpu.shared/pipe");
  EXPECT_EQ(r->mounts[0].host_path,
            "/run/nvidia/mps/nvidia.com/gpu.shared/pipe");
  EXPECT_EQ(r->mounts[1].container_path, "/dev/shm");
  EXPECT_EQ(r->mounts[1].host_path, "/run/nvidia/mps/shm");
  EXPECT_THAT(Paths(r->device_specs),
              ElementsAre("/dev/nvidia5", "/dev/nvidia4"));

  // With only CDI the MPS edits stay; the device list variable goes.
  AllocatorOptions cdi_opts;
  cdi_opts.strategies = {Strategy::kCdiCri};
  cdi_opts.sharing = SharingStrategy::kMps;
  cdi_opts.replicas = 3;
  cdi_opts.mps_root = "/mps-root";
  Allocator cdi(cdi_opts);
  r = cdi.Allocate(list, {"GPU-4::0"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->envs,
              UnorderedElementsAre(
                  Pair("CUDA_MPS_PIPE_DIRECTORY", "/mps/nvidia.com/gpu/pipe"),
                  Pair("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "33"),
                  Pair("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=5461M")));
  EXPECT_EQ(r->mounts.size(), 2u);
  EXPECT_THAT(r->cdi_devices,
              ElementsAre("k8s.device-plugin.nvidia.com/gpu=GPU-4"));

  // Devices that are not replicas get the pipe but no limits.
  r = alloc.Allocate(list, {"GPU-0"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->envs.count("CUDA_MPS_PIPE_DIRECTORY"), 1u);
  EXPECT_EQ(r->envs.count("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), 0u);
  EXPECT_EQ(r->envs.count("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), 0u);
}

// k replicas of a GPU are k shares: with our hook the replicas' own CDI
// devices (whose hook entries carry the shares) and nothing in the env the
// pod could override; with NVIDIA's its env; under MPS the client's thread
// percentage and pinned memory.
TEST(AllocatorTest, MemoryPerReplicaGivesKSharesPerGpu) {
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  constexpr char kKind[] = "k8s.device-plugin.nvidia.com/gpu=";
  DeviceList list = Node();
  struct Case {
    std::string name;
    SharingStrategy sharing;
    MemoryLimitHookKind hook;
    uint64_t per_replica;
    std::vector<std::string> ids;
    std::map<std::string, std::string> want;  // env besides the MPS pipe
    std::vector<std::string> cdi;             // CDI device names
    std::string error;                        // substring; empty: ok
  };
  const std::vector<Case> cases = {
      {"one replica",
       SharingStrategy::kTimeSlicing,
       MemoryLimitHookKind::kOurs,
       2 * kGiB,
       {"GPU-4::0"},
       {},
       {"GPU-4::0"},
       ""},
      {"three replicas of one GPU: three shares",
       SharingStrategy::kTimeSlicing,
       MemoryLimitHookKind::kOurs,
       2 * kGiB,
       {"GPU-4::0", "GPU-4::3", "GPU-4::1"},
       {},
       {"GPU-4::0", "GPU-4::3", "GPU-4::1"},
       ""},
      {"two GPUs",
       SharingStrategy::kTimeSlicing,
       MemoryLimitHookKind::kOurs,
       1536 * kMiB,
       {"GPU-5::0", "GPU-4::1", "GPU-5::2"},
       {},
       {"GPU-5::0", "GPU-4::1", "GPU-5::2"},
       ""},
      {"a whole GPU with replicas: the unit's device",
       SharingStrategy::kTimeSlicing,
       MemoryLimitHookKind::kOurs,
       2 * kGiB,
       {"GPU-0", "GPU-4::2"},
       {},
       {"GPU-0", "GPU-4::2"},
       ""},
      {"no limit configured: the unit once, as NVIDIA",
       SharingStrategy::kTimeSlicing,
       MemoryLimitHookKind::kOurs,
       0,
       {"GPU-4::0", "GPU-4::1"},
       {},
       {"GPU-4"},
       ""},
      {"not a replica",
       SharingStrategy::kTimeSlicing,
       MemoryLimitHookKind::kOurs,
       2 * kGiB,
       {"GPU-0"},
       {},
       {"GPU-0"},
       ""},
      {"NVIDIA's hook: the unit and the env",
       SharingStrategy::kTimeSlicing,
       MemoryLimitHookKind::kNvidia,
       2 * kGiB,
       {"GPU-4::0", "GPU-4::1"},
       {{"NVIDIA_GPU_MEMORY_LIMIT", "4096"},
        {"NVIDIA_GPU_MEMORY_REQUEST", "0"}},
       {"GPU-4"},
       ""},
      {"NVIDIA's hook, one limit per container",
       SharingStrategy::kTimeSlicing,
       MemoryLimitHookKind::kNvidia,
       2 * kGiB,
       {"GPU-4::0", "GPU-5::0", "GPU-5::1"},
       {},
       {},
       "one limit"},
      {"MPS",
       SharingStrategy::kMps,
       MemoryLimitHookKind::kOurs,
       3 * kGiB,
       {"GPU-4::0", "GPU-4::1"},
       {{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "50"},
        {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=6144M"}},
       {"GPU-4::0", "GPU-4::1"},
       ""},
      {"MPS without a limit: k shares of memory/replicas",
       SharingStrategy::kMps,
       MemoryLimitHookKind::kOurs,
       0,
       {"GPU-4::0", "GPU-4::1", "GPU-4::2"},
       {{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "75"},
        {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=12288M"}},
       {"GPU-4"},
       ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    AllocatorOptions opts;
    opts.strategies = {Strategy::kCdiCri, Strategy::kCdiAnnotations};
    opts.sharing = c.sharing;
    opts.replicas = 4;
    opts.mps_root = "/mps-root";
    opts.memory_per_replica = c.per_replica;
    opts.memory_limit_hook = c.hook;
    Allocator alloc(opts);
    auto r = alloc.Allocate(list, c.ids);
    if (!c.error.empty()) {
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(r.status().message(), HasSubstr(c.error));
      continue;
    }
    ASSERT_TRUE(r.ok()) << r.status();
    r->envs.erase("CUDA_MPS_PIPE_DIRECTORY");
    EXPECT_EQ(r->envs, c.want);
    std::vector<std::string> want_cdi;
    for (const std::string& n : c.cdi) want_cdi.push_back(kKind + n);
    EXPECT_EQ(r->cdi_devices, want_cdi);
    ASSERT_EQ(r->annotations.size(), 1u);
    EXPECT_EQ(r->annotations.begin()->second, absl::StrJoin(want_cdi, ","));
  }
}

TEST(AllocatorTest, TimeSlicingAddsNoMpsEdits) {
  AllocatorOptions opts;
  opts.sharing = SharingStrategy::kTimeSlicing;
  opts.replicas = 4;
  opts.mps_root = "/mps-root";
  Allocator alloc(opts);
  auto r = alloc.Allocate(Node(), {"GPU-4::0", "GPU-4::1"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->envs, ElementsAre(Pair("NVIDIA_VISIBLE_DEVICES", "GPU-4")));
  EXPECT_THAT(r->mounts, IsEmpty());
}

TEST(AllocatorTest, DeviceSpecsIncludeControlNodesThatExist) {
  const gdp::testing::TempDir tmp("allocator");
  const std::filesystem::path root = tmp.path();
  std::filesystem::create_directories(root / "dev");
  for (const char* f : {"nvidiactl", "nvidia-uvm", "nvidia0", "nvidia1"}) {
    std::ofstream(root / "dev" / f).put('\n');
  }
  AllocatorOptions opts;
  opts.pass_device_specs = true;
  opts.dev_root = root.string();
  Allocator alloc(opts);
  EXPECT_THAT(alloc.control_nodes(),
              ElementsAre("/dev/nvidiactl", "/dev/nvidia-uvm"));
  auto r = alloc.Allocate(Node(), {"GPU-1", "GPU-0", "MIG-a"});
  ASSERT_TRUE(r.ok()) << r.status();
  for (const DeviceSpecEdit& s : r->device_specs) {
    EXPECT_EQ(s.host_path, root.string() + s.container_path);
    EXPECT_EQ(s.permissions, "rw");
  }
  EXPECT_THAT(
      Paths(r->device_specs),
      ElementsAreArray({"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia1",
                        "/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap20",
                        "/dev/nvidia-caps/nvidia-cap21"}));

  // Only cdi-* strategies: no control nodes are looked for or passed.
  opts.strategies = {Strategy::kCdiCri};
  Allocator cdi(opts);
  EXPECT_THAT(cdi.control_nodes(), IsEmpty());
}

}  // namespace
}  // namespace gdp
