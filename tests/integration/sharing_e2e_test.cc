// End to end: time-slicing and MPS replicas, both allocation policies, and
// every device-list strategy with the CDI spec, through `dpctl kubelet`.
#include <algorithm>
#include <map>
#include <set>

#include "cdi/validate.h"
#include "hook/limits.h"
#include "tests/integration/e2e_fixture.h"

namespace gdp {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;

std::string TimeSlicing(int replicas, const std::string& extra = "") {
  return "version: v1\nsharing:\n  timeSlicing:\n" + extra +
         "    resources:\n    - name: nvidia.com/gpu\n      replicas: " +
         std::to_string(replicas) + "\n";
}

// The distinct physical GPUs behind replica IDs ("<uuid>::<k>").
std::set<std::string> Units(const json& ids) {
  std::set<std::string> out;
  for (const json& id : ids) {
    std::string s = id;
    out.insert(s.substr(0, s.find("::")));
  }
  return out;
}

using SharingTest = E2ETest;

TEST_F(SharingTest, TimeSlicingDistributedSpreadsOverGpus) {
  json devices = StartAndList({"--config-file", WriteConfig(TimeSlicing(4))});
  ASSERT_THAT(devices["devices"], SizeIs(32)) << plugin_->Stderr();
  EXPECT_THAT(devices["devices"][0]["id"].get<std::string>(), HasSubstr("::0"));
  // Pods of 4 replicas each land on 4 different GPUs while GPUs have free
  // replicas, and load spreads evenly.
  std::map<std::string, int> load;
  for (int pod = 0; pod < 8; ++pod) {
    json a = AllocateFor("nvidia.com/gpu", 4, "p" + std::to_string(pod));
    ASSERT_EQ(a["event"], "allocate") << a.dump();
    std::set<std::string> units = Units(a["devices"]);
    EXPECT_EQ(units.size(), 4u) << a.dump();
    std::string visible = a["response"]["envs"]["NVIDIA_VISIBLE_DEVICES"];
    EXPECT_EQ(std::count(visible.begin(), visible.end(), ','), 3) << visible;
    for (const std::string& u : units) load[u]++;
  }
  for (const auto& [unit, n] : load) EXPECT_EQ(n, 4) << unit;
}

TEST_F(SharingTest, TimeSlicingPackedFillsOneGpuFirst) {
  json devices = StartAndList({"--config-file", WriteConfig(TimeSlicing(4)),
                               "--shared-devices-allocation-policy", "packed"});
  ASSERT_THAT(devices["devices"], SizeIs(32));
  json a = AllocateFor("nvidia.com/gpu", 3, "p1");
  ASSERT_EQ(a["event"], "allocate") << a.dump();
  EXPECT_EQ(Units(a["devices"]).size(), 1u) << a.dump();
  // A one-replica pod fills that GPU's last replica before another GPU.
  json b = AllocateFor("nvidia.com/gpu", 1, "p2");
  EXPECT_EQ(Units(b["devices"]), Units(a["devices"])) << b.dump();
  // A pod never spans more GPUs than it must.
  json c = AllocateFor("nvidia.com/gpu", 4, "p3");
  EXPECT_EQ(Units(c["devices"]).size(), 1u) << c.dump();
}

TEST_F(SharingTest, RenameByDefaultAndFailRequestsGreaterThanOne) {
  std::string config = TimeSlicing(
      2, "    renameByDefault: true\n    failRequestsGreaterThanOne: true\n");
  json devices = StartAndList({"--config-file", WriteConfig(config)},
                              "nvidia.com/gpu.shared");
  ASSERT_THAT(devices["devices"], SizeIs(16));
  EXPECT_TRUE(fs::is_socket(dir_ / "kp" / "nvidia-gpu.shared.sock"));
  json one = AllocateFor("nvidia.com/gpu.shared", 1, "p1");
  EXPECT_EQ(one["event"], "allocate") << one.dump();
  json two = AllocateFor("nvidia.com/gpu.shared", 2, "p2");
  EXPECT_EQ(two["error"]["code"], "INVALID_ARGUMENT") << two.dump();
  EXPECT_THAT(two["error"]["message"].get<std::string>(),
              HasSubstr("failRequestsGreaterThanOne"));
  // The plugin keeps serving after refusing.
  EXPECT_EQ(AllocateFor("nvidia.com/gpu.shared", 1, "p3")["event"], "allocate");
}

TEST_F(SharingTest, MpsAnswersPipeShmAndLimits) {
  std::string config =
      "version: v1\nsharing:\n  mps:\n    resources:\n"
      "    - name: nvidia.com/gpu\n      replicas: 4\n";
  json devices = StartAndList({"--config-file", WriteConfig(config),
                               "--mps-root", (dir_ / "mps").string()});
  ASSERT_THAT(devices["devices"], SizeIs(32));
  json a = AllocateFor("nvidia.com/gpu", 1, "p1");
  ASSERT_EQ(a["event"], "allocate") << a.dump();
  const json& envs = a["response"]["envs"];
  EXPECT_EQ(envs["CUDA_MPS_PIPE_DIRECTORY"], "/mps/nvidia.com/gpu/pipe");
  EXPECT_EQ(envs["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"], "25");
  EXPECT_EQ(envs["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"], "0=20480M");
  std::set<std::string> mounts;
  for (const json& m : a["response"]["mounts"]) {
    mounts.insert(m["host_path"].get<std::string>() + " -> " +
                  m["container_path"].get<std::string>());
  }
  std::string mps = (dir_ / "mps").string();
  EXPECT_THAT(mounts, AllOf(Contains(mps + "/nvidia.com/gpu/pipe -> "
                                           "/mps/nvidia.com/gpu/pipe"),
                            Contains(mps + "/shm -> /dev/shm")));
}

TEST_F(SharingTest, VolumeMountsStrategy) {
  StartAndList({"--device-list-strategy", "volume-mounts"});
  json a = AllocateFor("nvidia.com/gpu", 2, "p1");
  ASSERT_EQ(a["event"], "allocate") << a.dump();
  EXPECT_EQ(a["response"]["envs"]["NVIDIA_VISIBLE_DEVICES"],
            "/var/run/nvidia-container-devices");
  ASSERT_THAT(a["response"]["mounts"], SizeIs(2));
  for (const json& m : a["response"]["mounts"]) {
    EXPECT_EQ(m["host_path"], "/dev/null");
    EXPECT_THAT(m["container_path"].get<std::string>(),
                HasSubstr("/var/run/nvidia-container-devices/GPU-"));
  }
}

TEST_F(SharingTest, CdiStrategiesAnswerNamesFromTheWrittenSpec) {
  // A driver installed under the root: NVML (the fake) and nvidia-smi.
  fs::path lib = dir_ / "root" / "usr" / "lib" / "x86_64-linux-gnu";
  fs::create_directories(lib);
  fs::copy_file(GDP_FAKE_NVML_LIB, lib / "libnvidia-ml.so.550.54.15");
  fs::create_symlink("libnvidia-ml.so.550.54.15", lib / "libnvidia-ml.so.1");
  fs::create_directories(dir_ / "root" / "usr" / "bin");
  std::ofstream(dir_ / "root" / "usr" / "bin" / "nvidia-smi") << "#!/bin/sh\n";
  fs::permissions(dir_ / "root" / "usr" / "bin" / "nvidia-smi",
                  fs::perms::owner_all);
  fs::path cdi = dir_ / "cdi";
  StartAndList({"--device-list-strategy", "cdi-annotations,cdi-cri",
                "--cdi-spec-dir", cdi.string(), "--driver-root",
                (dir_ / "root").string()});
  // The spec names every GPU by the ID the kubelet sees.
  std::ifstream in(cdi / "k8s.device-plugin.nvidia.com-gpu.json");
  ASSERT_TRUE(in.good()) << plugin_->Stderr();
  json spec = json::parse(in);
  EXPECT_EQ(spec["kind"], "k8s.device-plugin.nvidia.com/gpu");
  absl::Status valid = cdi::ValidateSpec(spec);
  EXPECT_TRUE(valid.ok()) << valid;
  std::set<std::string> mounted;
  for (const json& m : spec["containerEdits"]["mounts"]) {
    mounted.insert(m["containerPath"]);
  }
  EXPECT_THAT(mounted,
              AllOf(Contains("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"),
                    Contains("/usr/bin/nvidia-smi")))
      << spec.dump();
  ASSERT_THAT(spec["devices"], SizeIs(8));
  std::set<std::string> names;
  for (const json& d : spec["devices"]) names.insert(d["name"]);

  json a = AllocateFor("nvidia.com/gpu", 2, "p1");
  ASSERT_EQ(a["event"], "allocate") << a.dump();
  const json& r = a["response"];
  EXPECT_TRUE(r["envs"].empty()) << r.dump();
  EXPECT_TRUE(r["devices"].empty());
  ASSERT_THAT(r["cdi_devices"], SizeIs(2));
  for (const json& q : r["cdi_devices"]) {
    std::string name = q;
    ASSERT_EQ(name.rfind("k8s.device-plugin.nvidia.com/gpu=", 0), 0u);
    EXPECT_THAT(names, Contains(name.substr(name.find('=') + 1)));
  }
  ASSERT_EQ(r["annotations"].size(), 1u);
  for (const auto& [key, value] : r["annotations"].items()) {
    EXPECT_EQ(key.rfind("cdi.k8s.io/nvidia-device-plugin_", 0), 0u) << key;
    EXPECT_EQ(value, r["cdi_devices"][0].get<std::string>() + "," +
                         r["cdi_devices"][1].get<std::string>());
  }
}

// The device plugin's CDI spec in `cdi`, checked valid.
json ReadSpec(const fs::path& cdi) {
  std::ifstream in(cdi / "k8s.device-plugin.nvidia.com-gpu.json");
  EXPECT_TRUE(in.good());
  if (!in.good()) return json::object();
  json spec = json::parse(in);
  absl::Status valid = cdi::ValidateSpec(spec);
  EXPECT_TRUE(valid.ok()) << valid;
  return spec;
}

// The spec's devices that carry a hook entry, each checked to be a replica
// "<gpu>::<k>" with our hook's share of `mib` on its own GPU.
std::set<std::string> ShareDevices(const json& spec, int mib) {
  std::set<std::string> shares;
  for (const json& d : spec["devices"]) {
    if (!d["containerEdits"].contains("hooks")) continue;
    const std::string name = d["name"];
    shares.insert(name);
    const size_t sep = name.find("::");
    EXPECT_NE(sep, std::string::npos) << name;
    if (sep == std::string::npos) continue;
    const std::string gpu = name.substr(0, sep);
    const std::string k = name.substr(sep + 2);
    EXPECT_THAT(d["containerEdits"]["hooks"], SizeIs(1)) << d.dump();
    const json& h = d["containerEdits"]["hooks"][0];
    EXPECT_EQ(h["hookName"], "createRuntime");
    EXPECT_EQ(h["path"], "/opt/gdp/hook");
    EXPECT_EQ(h["args"], json::array({"gdp-cdi-hook", "apply-memory-limits",
                                      "--driver-root", "/", "--share",
                                      gpu + ".replica-" + k + "," + gpu + "," +
                                          std::to_string(mib)}))
        << h.dump();
  }
  return shares;
}

// The GPUs of replica IDs or CDI names ("<gpu>::<k>").
std::set<std::string> UnitsOf(const std::set<std::string>& ids) {
  json a = json::array();
  for (const std::string& id : ids) a.push_back(id);
  return Units(a);
}

// What our hook applies (MiB by GPU) to a container given the CDI devices
// `qualified` ("<kind>=<name>") of `spec` with `env` (the Allocate
// response's, then the pod's own, as the kubelet orders them): the
// hook's own planning (hook::PlanLimits) on the config.json the runtime
// would make.
std::map<std::string, uint64_t> HookPlan(const json& spec,
                                         const json& qualified,
                                         const std::vector<std::string>& env) {
  json hooks = json::array();
  for (const json& q : qualified) {
    const std::string name =
        q.get<std::string>().substr(q.get<std::string>().find('=') + 1);
    for (const json& d : spec["devices"]) {
      if (d["name"] != name || !d["containerEdits"].contains("hooks")) continue;
      for (const json& h : d["containerEdits"]["hooks"]) {
        hooks.push_back({{"path", h["path"]}, {"args", h["args"]}});
      }
    }
  }
  std::map<std::string, uint64_t> mib;
  if (hooks.empty()) return mib;
  json config = {{"hooks", {{"createRuntime", hooks}}},
                 {"process", {{"env", env}}}};
  absl::StatusOr<hook::LimitPlan> plan = hook::PlanLimits(
      hooks[0]["args"].get<std::vector<std::string>>(), config);
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return mib;
  for (const auto& [uuid, bytes] : plan->hard_bytes) {
    mib[uuid] = bytes >> 20;
  }
  return mib;
}

std::string MemoryConfig(const std::string& extra = "") {
  return "version: v1\nflags:\n  plugin:\n    deviceListStrategy: cdi-cri\n"
         "sharing:\n  timeSlicing:\n    resources:\n"
         "    - name: nvidia.com/gpu\n      replicas: 4\n"
         "      memoryPerReplica: 10Gi\n" +
         extra;
}

// memoryPerReplica end to end with our hook: every replica of a shared GPU
// is a CDI device whose hook entry carries its share; a pod given k
// replicas of a GPU gets those k devices, so k shares, each GPU its own;
// no limit travels in the env, so the pod's own env changes nothing.
TEST_F(SharingTest, MemoryPerReplicaSharesInTheSpec) {
  fs::path cdi = dir_ / "cdi";
  json devices = StartAndList({"--config-file", WriteConfig(MemoryConfig()),
                               "--cdi-spec-dir", cdi.string(),
                               "--shared-devices-allocation-policy", "packed",
                               "--memory-limit-hook-path", "/opt/gdp/hook"});
  ASSERT_THAT(devices["devices"], SizeIs(32)) << plugin_->Stderr();
  std::set<std::string> ids;
  for (const json& d : devices["devices"]) ids.insert(d["id"]);
  json spec = ReadSpec(cdi);
  // The 8 GPUs' own devices (no hook, NVIDIA's names) and 32 replicas.
  ASSERT_THAT(spec["devices"], SizeIs(8 + 32));
  EXPECT_EQ(ShareDevices(spec, 10240), ids);

  // Through the kubelet: three replicas packed on one GPU, three shares.
  json a = AllocateFor("nvidia.com/gpu", 3, "p1");
  ASSERT_EQ(a["event"], "allocate") << a.dump();
  std::set<std::string> units = Units(a["devices"]);
  ASSERT_EQ(units.size(), 1u) << a.dump();
  const std::string gpu = *units.begin();
  const json& r = a["response"];
  EXPECT_TRUE(r["envs"].empty()) << a.dump();
  json want = json::array();
  for (const json& id : a["devices"]) {
    want.push_back("k8s.device-plugin.nvidia.com/gpu=" + id.get<std::string>());
  }
  std::sort(want.begin(), want.end());
  json got = r["cdi_devices"];
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want) << a.dump();
  EXPECT_EQ(HookPlan(spec, r["cdi_devices"], {}),
            (std::map<std::string, uint64_t>{{gpu, 30720}}));
  // The pod sets the limit variables itself (they come after the device
  // plugin's): the limit stays its three shares.
  std::string ours = gpu;
  std::replace(ours.begin(), ours.end(), '-', '_');
  EXPECT_EQ(HookPlan(spec, r["cdi_devices"],
                     {"NVIDIA_GPU_MEMORY_LIMIT=81920",
                      "GDP_GPU_MEMORY_LIMIT_" + ours + "=81920"}),
            (std::map<std::string, uint64_t>{{gpu, 30720}}));

  // Replicas of two GPUs: each GPU its own limit.
  std::set<std::string> gpus = UnitsOf(ids);
  auto it = gpus.begin();
  const std::string g1 = *it++, g2 = *it;
  auto [code, out] = DpctlAllocate({g1 + "::0", g2 + "::1", g2 + "::2"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, Not(HasSubstr("MEMORY_LIMIT"))) << out;
  json names = json::array();
  for (const std::string& n : {g1 + "::0", g2 + "::1", g2 + "::2"}) {
    EXPECT_THAT(out, HasSubstr("k8s.device-plugin.nvidia.com/gpu=" + n)) << out;
    names.push_back("k8s.device-plugin.nvidia.com/gpu=" + n);
  }
  EXPECT_EQ(HookPlan(spec, names, {}),
            (std::map<std::string, uint64_t>{{g1, 10240}, {g2, 20480}}));
}

// Only the GPUs an entry shares have replica devices; a GPU left whole
// gets its own device and no limit.
TEST_F(SharingTest, MemoryPerReplicaOnlyOnSharedGpus) {
  fs::path cdi = dir_ / "cdi";
  json devices = StartAndList(
      {"--config-file", WriteConfig(MemoryConfig("      devices: [0, 1]\n")),
       "--cdi-spec-dir", cdi.string(), "--memory-limit-hook-path",
       "/opt/gdp/hook"});
  ASSERT_THAT(devices["devices"], SizeIs(8 + 6)) << plugin_->Stderr();
  json spec = ReadSpec(cdi);
  std::set<std::string> shares = ShareDevices(spec, 10240);
  ASSERT_EQ(shares.size(), 8u);
  EXPECT_EQ(UnitsOf(shares).size(), 2u);
  std::string whole;
  for (const json& d : devices["devices"]) {
    std::string id = d["id"];
    if (id.find("::") == std::string::npos) whole = id;
  }
  ASSERT_FALSE(whole.empty());
  auto [code, out] = DpctlAllocate({whole});
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, Not(HasSubstr("MEMORY_LIMIT"))) << out;
  EXPECT_THAT(out,
              HasSubstr("k8s.device-plugin.nvidia.com/gpu=" + whole + "\""))
      << out;
  const std::string replica = *shares.begin();
  auto [code2, out2] = DpctlAllocate({replica});
  EXPECT_EQ(code2, 0) << out2;
  EXPECT_THAT(out2, HasSubstr("k8s.device-plugin.nvidia.com/gpu=" + replica))
      << out2;
  EXPECT_THAT(out2, Not(HasSubstr("MEMORY_LIMIT"))) << out2;
}

// NVIDIA's hook reads NVIDIA's env only: the GPU's device carries its
// entry and Allocate the env (which a pod can override: documented).
TEST_F(SharingTest, MemoryPerReplicaWithNvidiasHook) {
  fs::path cdi = dir_ / "cdi";
  std::string config =
      "version: v1\nflags:\n  plugin:\n    deviceListStrategy: cdi-cri\n"
      "sharing:\n  timeSlicing:\n    resources:\n"
      "    - name: nvidia.com/gpu\n      replicas: 2\n"
      "      memoryPerReplica: 40Gi\n";
  StartAndList({"--config-file", WriteConfig(config), "--cdi-spec-dir",
                cdi.string(), "--memory-limit-hook", "nvidia",
                "--memory-limit-hook-path", "/usr/bin/nvidia-cdi-hook",
                "--shared-devices-allocation-policy", "packed"});
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("a pod can override"));
  json spec = ReadSpec(cdi);
  ASSERT_THAT(spec["devices"], SizeIs(8));
  for (const json& d : spec["devices"]) {
    ASSERT_THAT(d["containerEdits"]["hooks"], SizeIs(1)) << d.dump();
    EXPECT_EQ(d["containerEdits"]["hooks"][0]["args"],
              json::array({"nvidia-cdi-hook", "apply-cuda-memory-limits",
                           "--driver-root", "/", "--gpu-id", d["name"]}));
  }
  json a = AllocateFor("nvidia.com/gpu", 2, "p1");
  ASSERT_EQ(a["event"], "allocate") << a.dump();
  EXPECT_EQ(a["response"]["envs"], json({{"NVIDIA_GPU_MEMORY_LIMIT", "81920"},
                                         {"NVIDIA_GPU_MEMORY_REQUEST", "0"}}))
      << a.dump();
  EXPECT_EQ(a["response"]["cdi_devices"],
            json::array({"k8s.device-plugin.nvidia.com/gpu=" +
                         *Units(a["devices"]).begin()}));
}

// MPS with memoryPerReplica: the replica's share in the spec and MPS's own
// limits, one share each (NVIDIA's failRequestsGreaterThanOne default for
// MPS).
TEST_F(SharingTest, MemoryPerReplicaUnderMps) {
  fs::path cdi = dir_ / "cdi";
  std::string config =
      "version: v1\nflags:\n  plugin:\n    deviceListStrategy: cdi-cri\n"
      "sharing:\n  mps:\n    resources:\n"
      "    - name: nvidia.com/gpu\n      replicas: 4\n"
      "      memoryPerReplica: 16Gi\n";
  StartAndList({"--config-file", WriteConfig(config), "--cdi-spec-dir",
                cdi.string(), "--mps-root", (dir_ / "mps").string(),
                "--memory-limit-hook-path", "/opt/gdp/hook"});
  json spec = ReadSpec(cdi);
  EXPECT_THAT(ShareDevices(spec, 16384), SizeIs(32));
  json a = AllocateFor("nvidia.com/gpu", 1, "p1");
  ASSERT_EQ(a["event"], "allocate") << a.dump();
  const std::string replica = a["devices"][0];
  const std::string gpu = *Units(a["devices"]).begin();
  EXPECT_EQ(a["response"]["envs"],
            json({{"CUDA_MPS_PIPE_DIRECTORY", "/mps/nvidia.com/gpu/pipe"},
                  {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "25"},
                  {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=16384M"}}))
      << a.dump();
  EXPECT_EQ(a["response"]["cdi_devices"],
            json::array({"k8s.device-plugin.nvidia.com/gpu=" + replica}));
  EXPECT_EQ(HookPlan(spec, a["response"]["cdi_devices"], {}),
            (std::map<std::string, uint64_t>{{gpu, 16384}}));
}

// Without memoryPerReplica: no limit env and no hook (NVIDIA's configs
// mean what they meant).
TEST_F(SharingTest, NoMemoryPerReplicaNoLimitNoHook) {
  fs::path cdi = dir_ / "cdi";
  StartAndList({"--config-file", WriteConfig(TimeSlicing(4)),
                "--device-list-strategy", "cdi-cri", "--cdi-spec-dir",
                cdi.string()});
  std::ifstream in(cdi / "k8s.device-plugin.nvidia.com-gpu.json");
  ASSERT_TRUE(in.good()) << plugin_->Stderr();
  json spec = json::parse(in);
  for (const json& d : spec["devices"]) {
    EXPECT_FALSE(d["containerEdits"].contains("hooks")) << d.dump();
  }
  json a = AllocateFor("nvidia.com/gpu", 2, "p1");
  ASSERT_EQ(a["event"], "allocate") << a.dump();
  EXPECT_TRUE(a["response"]["envs"].empty()) << a.dump();
}

// A limit the node cannot enforce or hold keeps the daemon from starting,
// naming the setting.
TEST_F(SharingTest, MemoryPerReplicaRefusals) {
  struct Case {
    std::string config;
    std::vector<std::string> flags;
    std::string error;
  };
  const std::string shared =
      "sharing:\n  timeSlicing:\n    resources:\n"
      "    - name: nvidia.com/gpu\n      replicas: 4\n"
      "      memoryPerReplica: ";
  const std::vector<Case> cases = {
      {"version: v1\n" + shared + "10Gi\n",
       {},
       "sharing.timeSlicing.resources[0].memoryPerReplica: needs the device "
       "list strategies to be CDI only"},
      {"version: v1\n" + shared + "21Gi\n",
       {"--device-list-strategy", "cdi-cri"},
       "memoryPerReplica 21504 MiB times 4 replicas does not fit GPU 0"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.error);
    std::vector<std::string> args = {"--config-file", WriteConfig(c.config),
                                     "--cdi-spec-dir", (dir_ / "cdi").string()};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    StartPlugin(args, "dgx-a100");
    EXPECT_NE(plugin_->Wait(kTimeout).value_or(0), 0);
    EXPECT_THAT(plugin_->Stderr(), HasSubstr(c.error));
  }
}

}  // namespace
}  // namespace gdp
