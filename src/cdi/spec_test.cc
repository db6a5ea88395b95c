#include "cdi/spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cdi/validate.h"
#include "testing/temp_dir.h"

namespace gdp::cdi {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

Device Unit(std::string id, std::vector<std::string> nodes,
            std::string visible_id = "") {
  Device d;
  d.visible_id = visible_id.empty() ? id : visible_id;
  d.id = std::move(id);
  d.device_nodes = std::move(nodes);
  return d;
}

const char kUuid0[] = "GPU-8f6e3c1a-0000-1111-2222-333344445555";
const char kUuid1[] = "GPU-9a7d2b4c-6666-7777-8888-999900001111";
const char kMig0[] = "MIG-5c89852c-d268-c3f3-1b07-005d5ae1dc3f";
const char kMig1[] = "MIG-0e0b7c1e-84b5-5b2a-9f3d-6c1a2b3c4d5e";

// Builds with no driver files and checks the result is valid.
json Build(const std::vector<Device>& devices,
           const std::string& dev_root = "/",
           const std::vector<std::string>& control = {"/dev/nvidiactl"}) {
  CdiSpecOptions options;
  options.dev_root = dev_root;
  absl::StatusOr<json> spec =
      BuildSpec(options, DriverFiles{}, control, devices);
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return json();
  EXPECT_TRUE(ValidateSpec(*spec).ok()) << ValidateSpec(*spec);
  return *spec;
}

TEST(SpecNamesTest, QualifiedNameAndFileName) {
  EXPECT_EQ(QualifiedName(kUuid0),
            std::string("k8s.device-plugin.nvidia.com/gpu=") + kUuid0);
  EXPECT_EQ(QualifiedName("0:1"), "k8s.device-plugin.nvidia.com/gpu=0:1");
  EXPECT_EQ(SpecFileName(), "k8s.device-plugin.nvidia.com-gpu.json");
  for (const std::string& id : {std::string(kUuid0), std::string(kMig0),
                                std::string("3"), std::string("0:1")}) {
    EXPECT_TRUE(ValidateQualifiedName(QualifiedName(id)).ok()) << id;
  }
  EXPECT_TRUE(ValidateKind(kKind).ok());
}

TEST(BuildDeviceSpecTest, KindEnvAndMountsPerDevice) {
  CdiSpecOptions options;
  options.kind = "k8s.gpu.nvidia.com/claim";
  std::vector<CdiDevice> devices = {
      {"1234-gpu-0", {"/dev/nvidia0"}, {}, {}, {}},
      {"1234-gpu-1",
       {"/dev/nvidia1"},
       {"CUDA_MPS_PIPE_DIRECTORY=/mps/x/pipe"},
       {{"/run/mps/x/pipe", "/mps/x/pipe", {"rw", "bind"}}},
       {{"createRuntime", "/opt/bin/hook", {"hook", "go"}, {}, 30},
        {"poststop", "/opt/bin/hook", {}, {"A=1"}, 0}}},
  };
  absl::StatusOr<json> spec =
      BuildDeviceSpec(options, DriverFiles{}, {"/dev/nvidiactl"}, devices);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(ValidateSpec(*spec).ok()) << ValidateSpec(*spec);
  EXPECT_EQ((*spec)["kind"], "k8s.gpu.nvidia.com/claim");
  EXPECT_EQ((*spec)["devices"][0]["name"], "1234-gpu-0");
  EXPECT_FALSE((*spec)["devices"][0]["containerEdits"].contains("env"));
  const json& edits = (*spec)["devices"][1]["containerEdits"];
  EXPECT_EQ(edits["env"], json({"CUDA_MPS_PIPE_DIRECTORY=/mps/x/pipe"}));
  EXPECT_EQ(edits["mounts"][0]["containerPath"], "/mps/x/pipe");
  EXPECT_EQ(edits["mounts"][0]["options"], json({"rw", "bind"}));
  EXPECT_EQ(edits["hooks"], json::parse(R"([
              {"hookName": "createRuntime", "path": "/opt/bin/hook",
               "args": ["hook", "go"], "timeout": 30},
              {"hookName": "poststop", "path": "/opt/bin/hook",
               "env": ["A=1"]}])"));
  EXPECT_FALSE((*spec)["devices"][0]["containerEdits"].contains("hooks"));
  EXPECT_EQ((*spec)["containerEdits"]["env"],
            json({"NVIDIA_VISIBLE_DEVICES=void"}));

  devices.push_back(devices[0]);
  absl::StatusOr<json> twice =
      BuildDeviceSpec(options, DriverFiles{}, {}, devices);
  EXPECT_EQ(twice.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(twice.status().message(),
              HasSubstr("'1234-gpu-0' is named twice"));
  EXPECT_FALSE(BuildDeviceSpec(options, DriverFiles{}, {}, {}).ok());
  EXPECT_FALSE(
      BuildDeviceSpec(options, DriverFiles{}, {}, {{"x", {}, {}, {}, {}}})
          .ok());
  devices.pop_back();
  devices[1].hooks[0].path = "opt/bin/hook";
  absl::StatusOr<json> relative =
      BuildDeviceSpec(options, DriverFiles{}, {}, devices);
  EXPECT_EQ(relative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(relative.status().message(),
              HasSubstr("devices[1].containerEdits.hooks[0].path"));
}

TEST(BuildSpecTest, GpusByUuid) {
  json spec =
      Build({Unit(kUuid0, {"/dev/nvidia0"}), Unit(kUuid1, {"/dev/nvidia1"})},
            "/", {"/dev/nvidiactl", "/dev/nvidia-uvm"});
  json want = {
      {"cdiVersion", "0.5.0"},
      {"kind", "k8s.device-plugin.nvidia.com/gpu"},
      {"devices",
       {{{"name", kUuid0},
         {"containerEdits", {{"deviceNodes", {{{"path", "/dev/nvidia0"}}}}}}},
        {{"name", kUuid1},
         {"containerEdits", {{"deviceNodes", {{{"path", "/dev/nvidia1"}}}}}}}}},
      {"containerEdits",
       {{"env", {"NVIDIA_VISIBLE_DEVICES=void"}},
        {"deviceNodes",
         {{{"path", "/dev/nvidiactl"}}, {{"path", "/dev/nvidia-uvm"}}}}}}};
  EXPECT_EQ(spec, want) << spec.dump(2);
}

TEST(BuildSpecTest, GpusByIndex) {
  json spec = Build({Unit("0", {"/dev/nvidia0"}), Unit("3", {"/dev/nvidia3"})});
  ASSERT_EQ(spec["devices"].size(), 2u);
  EXPECT_EQ(spec["devices"][1]["name"], "3");
  EXPECT_EQ(spec["devices"][1]["containerEdits"]["deviceNodes"][0]["path"],
            "/dev/nvidia3");
  // A leading digit needs 0.5.0, which is what we write.
  EXPECT_EQ(MinimumCdiVersion(spec), "0.5.0");
}

TEST(BuildSpecTest, MigDevicesWithCapabilityNodes) {
  for (const auto& [a, b] :
       {std::pair<std::string, std::string>{kMig0, kMig1}, {"0:0", "0:1"}}) {
    json spec = Build({
        Unit(kUuid1, {"/dev/nvidia1"}),
        Unit(a, {"/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap21",
                 "/dev/nvidia-caps/nvidia-cap22"}),
        Unit(b, {"/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap30",
                 "/dev/nvidia-caps/nvidia-cap31"}),
    });
    ASSERT_EQ(spec["devices"].size(), 3u);
    EXPECT_EQ(spec["devices"][1]["name"], a);
    EXPECT_EQ(spec["devices"][1]["containerEdits"]["deviceNodes"],
              json::parse(R"([{"path": "/dev/nvidia0"},
                              {"path": "/dev/nvidia-caps/nvidia-cap21"},
                              {"path": "/dev/nvidia-caps/nvidia-cap22"}])"));
    EXPECT_EQ(spec["devices"][2]["name"], b);
  }
}

TEST(BuildSpecTest, ReplicasBecomeOneDevicePerUnit) {
  std::vector<Device> devices;
  for (const char* unit : {kUuid0, kUuid1}) {
    for (int k = 0; k < 4; ++k) {
      std::string node = unit == kUuid0 ? "/dev/nvidia0" : "/dev/nvidia1";
      devices.push_back(
          Unit(std::string(unit) + "::" + std::to_string(k), {node}, unit));
    }
  }
  json spec = Build(devices);
  ASSERT_EQ(spec["devices"].size(), 2u);
  EXPECT_EQ(spec["devices"][0]["name"], kUuid0);
  EXPECT_EQ(spec["devices"][1]["name"], kUuid1);
}

TEST(BuildSpecTest, ReplicaEditAddsOneDevicePerReplicaItKeeps) {
  // Replicas 0..2 of GPU 0 get devices of their own (a share each); GPU 1's
  // replicas do not; the units keep theirs.
  std::vector<Device> devices;
  for (const char* unit : {kUuid0, kUuid1}) {
    for (int k = 0; k < 3; ++k) {
      std::string node = unit == kUuid0 ? "/dev/nvidia0" : "/dev/nvidia1";
      Device d =
          Unit(std::string(unit) + "::" + std::to_string(k), {node}, unit);
      d.replica = k;
      d.gpu_uuid = unit;
      devices.push_back(d);
    }
  }
  std::vector<std::string> asked;
  ReplicaEdit edit = [&](const Device& d,
                         CdiDevice* replica) -> absl::StatusOr<bool> {
    asked.push_back(d.id);
    if (d.gpu_uuid != kUuid0) return false;
    replica->env.push_back("SHARE=" + std::to_string(d.replica));
    return true;
  };
  absl::StatusOr<json> spec = BuildSpec(CdiSpecOptions{}, DriverFiles{},
                                        {"/dev/nvidiactl"}, devices, {}, edit);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(ValidateSpec(*spec).ok());
  EXPECT_EQ(asked.size(), 6u);
  const json& got = (*spec)["devices"];
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[0]["name"], kUuid0);
  EXPECT_EQ(got[1]["name"], kUuid1);
  EXPECT_FALSE(got[0]["containerEdits"].contains("env"));
  for (int k = 0; k < 3; ++k) {
    const json& r = got[2 + k];
    EXPECT_EQ(r["name"], std::string(kUuid0) + "::" + std::to_string(k));
    EXPECT_EQ(r["containerEdits"]["deviceNodes"],
              json::parse(R"([{"path": "/dev/nvidia0"}])"));
    EXPECT_EQ(r["containerEdits"]["env"], json({"SHARE=" + std::to_string(k)}));
  }

  // Its failure is BuildSpec's; so is a replica ID CDI cannot name.
  ReplicaEdit fails = [](const Device&, CdiDevice*) -> absl::StatusOr<bool> {
    return absl::InvalidArgumentError("no share");
  };
  EXPECT_EQ(BuildSpec(CdiSpecOptions{}, DriverFiles{}, {}, devices, {}, fails)
                .status()
                .message(),
            "no share");
  Device bad = Unit("0 ::1", {"/dev/nvidia0"}, "0");
  bad.replica = 1;
  ReplicaEdit keep = [](const Device&, CdiDevice*) -> absl::StatusOr<bool> {
    return true;
  };
  absl::StatusOr<json> s =
      BuildSpec(CdiSpecOptions{}, DriverFiles{}, {}, {bad}, {}, keep);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("replica '0 ::1'"));
}

TEST(BuildSpecTest, DevRootGivesHostPaths) {
  json spec =
      Build({Unit("0:1", {"/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap21"})},
            "/run/nvidia/driver", {"/dev/nvidiactl"});
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["deviceNodes"],
            json::parse(R"([
              {"path": "/dev/nvidia0",
               "hostPath": "/run/nvidia/driver/dev/nvidia0"},
              {"path": "/dev/nvidia-caps/nvidia-cap21",
               "hostPath": "/run/nvidia/driver/dev/nvidia-caps/nvidia-cap21"}])"));
  EXPECT_EQ(spec["containerEdits"]["deviceNodes"],
            json::parse(R"([{"path": "/dev/nvidiactl",
                             "hostPath": "/run/nvidia/driver/dev/nvidiactl"}])"));
}

TEST(BuildSpecTest, NoControlNodesNoDeviceNodesEdit) {
  json spec = Build({Unit("0", {"/dev/nvidia0"})}, "/", {});
  EXPECT_FALSE(spec["containerEdits"].contains("deviceNodes"));
  EXPECT_FALSE(spec["containerEdits"].contains("mounts"));
}

TEST(BuildSpecTest, RefusesWhatCannotBeASpec) {
  struct Case {
    std::string name;
    std::vector<Device> devices;
    std::vector<std::string> control;
    std::string mentions;
  } cases[] = {
      {"no devices", {}, {}, "no devices"},
      {"old MIG UUID",
       {Unit("MIG-GPU-x/1/2", {"/dev/nvidia0"})},
       {},
       "MIG-GPU-x/1/2"},
      {"empty id", {Unit("", {"/dev/nvidia0"})}, {}, "empty"},
      {"no nodes", {Unit("0", {})}, {}, "'0' has no device nodes"},
      {"relative node", {Unit("0", {"dev/nvidia0"})}, {}, "'dev/nvidia0'"},
      {"replicas with other nodes",
       {Unit("0::0", {"/dev/nvidia0"}, "0"),
        Unit("0::1", {"/dev/nvidia1"}, "0")},
       {},
       "'0::0' and '0::1'"},
      {"relative control node",
       {Unit("0", {"/dev/nvidia0"})},
       {"nvidiactl"},
       "containerEdits.deviceNodes[0].path"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<json> spec =
        BuildSpec(CdiSpecOptions{}, DriverFiles{}, c.control, c.devices);
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument)
        << c.name;
    EXPECT_NE(spec.status().message().find(c.mentions), std::string::npos)
        << c.name << ": " << spec.status();
  }
}

// End to end over a fake host: the driver (in a driver container's root,
// /run/nvidia/driver on the host) with versioned libraries behind links,
// and a dev tree.
class GenerateSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::path lib = dir_ / "driver/usr/lib/x86_64-linux-gnu";
    fs::create_directories(lib);
    for (const char* name :
         {"libcuda.so", "libnvidia-ml.so", "libnvidia-ptxjitcompiler.so"}) {
      std::ofstream(lib / (std::string(name) + ".550.54.15")) << name;
      fs::create_symlink(std::string(name) + ".550.54.15",
                         lib / (std::string(name) + ".1"));
    }
    fs::create_symlink("libcuda.so.1", lib / "libcuda.so");
    fs::create_directories(dir_ / "driver/usr/bin");
    std::ofstream(dir_ / "driver/usr/bin/nvidia-smi") << "smi";
    fs::permissions(dir_ / "driver/usr/bin/nvidia-smi", fs::perms(0755));
    fs::create_directories(dir_ / "driver/lib/firmware/nvidia/550.54.15");
    fs::create_directories(dir_ / "dev/dev");
    for (const char* n : {"nvidiactl", "nvidia-uvm", "nvidia0"}) {
      std::ofstream(dir_ / "dev/dev" / n) << "";
    }
  }

  const gdp::testing::TempDir tmp_{"cdi-spec"};
  const fs::path dir_ = tmp_.path();
};

TEST_F(GenerateSpecTest, MountsTheDriverFromTheHostRoot) {
  CdiSpecOptions options;
  options.host_driver_root = "/run/nvidia/driver";
  options.lookup_root = (dir_ / "driver").string();
  options.dev_root = "/";
  options.dev_lookup_root = (dir_ / "dev").string();
  absl::StatusOr<json> spec =
      GenerateSpec(options, {Unit(kUuid0, {"/dev/nvidia0"})});
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_TRUE(ValidateSpec(*spec).ok()) << ValidateSpec(*spec);

  const std::string lib = "/usr/lib/x86_64-linux-gnu/";
  const std::string host = "/run/nvidia/driver";
  std::vector<std::pair<std::string, std::string>> want = {
      {host + lib + "libnvidia-ml.so.550.54.15",
       lib + "libnvidia-ml.so.550.54.15"},
      {host + lib + "libnvidia-ml.so.550.54.15", lib + "libnvidia-ml.so.1"},
      {host + lib + "libcuda.so.550.54.15", lib + "libcuda.so.550.54.15"},
      {host + lib + "libcuda.so.550.54.15", lib + "libcuda.so"},
      {host + lib + "libcuda.so.550.54.15", lib + "libcuda.so.1"},
      {host + lib + "libnvidia-ptxjitcompiler.so.550.54.15",
       lib + "libnvidia-ptxjitcompiler.so.550.54.15"},
      {host + lib + "libnvidia-ptxjitcompiler.so.550.54.15",
       lib + "libnvidia-ptxjitcompiler.so.1"},
      {host + "/usr/bin/nvidia-smi", "/usr/bin/nvidia-smi"},
      {host + "/lib/firmware/nvidia/550.54.15",
       "/lib/firmware/nvidia/550.54.15"},
  };
  const json& mounts = (*spec)["containerEdits"]["mounts"];
  ASSERT_EQ(mounts.size(), want.size()) << mounts.dump(2);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(mounts[i]["hostPath"], want[i].first) << i;
    EXPECT_EQ(mounts[i]["containerPath"], want[i].second) << i;
    EXPECT_EQ(mounts[i]["options"], json({"ro", "nosuid", "nodev", "bind"}))
        << i;
  }
  EXPECT_EQ(
      (*spec)["containerEdits"]["deviceNodes"],
      json::parse(
          R"([{"path": "/dev/nvidiactl"}, {"path": "/dev/nvidia-uvm"}])"));
  EXPECT_EQ((*spec)["containerEdits"]["env"],
            json({"NVIDIA_VISIBLE_DEVICES=void"}));
}

TEST_F(GenerateSpecTest, LooksUpUnderTheHostRootWhenNoLookupRoot) {
  CdiSpecOptions options;
  options.host_driver_root = (dir_ / "driver").string();
  options.dev_root = (dir_ / "dev").string();
  options.driver_version = "550.54.15";
  absl::StatusOr<json> spec =
      GenerateSpec(options, {Unit("0", {"/dev/nvidia0"})});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ((*spec)["containerEdits"]["mounts"][0]["hostPath"],
            (dir_ / "driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15")
                .string());
  EXPECT_EQ((*spec)["containerEdits"]["deviceNodes"][0]["hostPath"],
            (dir_ / "dev/dev/nvidiactl").string());
}

TEST_F(GenerateSpecTest, MissingDriverRootIsAnError) {
  CdiSpecOptions options;
  options.lookup_root = (dir_ / "nowhere").string();
  absl::StatusOr<json> spec =
      GenerateSpec(options, {Unit("0", {"/dev/nvidia0"})});
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace gdp::cdi
